"""One exception family for everything apiprof reports to a person.

Every message should say what went wrong *and* what to do next; the CLI prints ``str(error)``
and exits with ``error.exit_code``.
"""

from __future__ import annotations


class ApiprofError(Exception):
    """Base of all errors apiprof raises on purpose."""

    exit_code = 1


class UsageError(ApiprofError):
    """The user asked for something that cannot be done as asked (bad option, unknown name)."""

    exit_code = 2


class PackageNotFound(UsageError):
    """The package to scan cannot be imported in this environment."""


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
