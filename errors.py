"""One exception family for everything apiprof reports to a person.

Every message should say what went wrong *and* what to do next; the CLI prints ``str(error)``
and exits with ``error.exit_code``.
"""

from __future__ import annotations


class ApiprofError(Exception):
    """Base of all errors apiprof raises on purpose."""

    exit_code = 1

    @property
    def code(self) -> str:
        """A stable name for the error's class, so it can cross a process boundary."""
        return type(self).__name__


def error_class(code: str) -> type[ApiprofError]:
    """The :class:`ApiprofError` subclass a :attr:`~ApiprofError.code` names (the base class for
    a code this version does not know). Only classes whose constructor takes one message can
    be rebuilt; others come back as the base class."""
    rebuildable = {cls.__name__: cls for cls in _subclasses(ApiprofError)}
    rebuildable.pop(ScenarioFileError.__name__, None)
    return rebuildable.get(code, ApiprofError)


def _subclasses(cls: type[ApiprofError]) -> list[type[ApiprofError]]:
    return [cls] + [sub for direct in cls.__subclasses__() for sub in _subclasses(direct)]


class UsageError(ApiprofError):
    """The user asked for something that cannot be done as asked (bad option, unknown name)."""

    exit_code = 2


class PackageNotFound(UsageError):
    """The package to scan cannot be imported in this environment."""


class IsolationUnavailable(UsageError):
    """``--isolation strict`` was asked for where the system cannot provide it."""


class ScenarioFileError(UsageError):
    """A scenario file is unreadable or malformed; the message carries ``file:line``."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = path, line, problem


class DatabaseError(ApiprofError):
    """The profile database cannot be used (locked, foreign, corrupt, newer schema)."""

    exit_code = 3


class MeasurementError(ApiprofError):
    """A profiling pass could not produce trustworthy numbers."""


class TraceFileError(ApiprofError):
    """A trace recording cannot be read or written (missing, foreign, newer format, corrupt)."""

    exit_code = 3


class SettingsError(UsageError):
    """A delay-tracker settings file or option is malformed; the message names the key."""
