"""What every measuring pass checks before its numbers may be stored.

A profiler hook runs inside the code it measures, so its own faults show up as the target's
cost: a callback that raises inside a generator's ``close()`` makes the interpreter print an
"unraisable exception" (allocations, I/O) on the target's account; a pause of the allocation
counter left open by an interrupted callback makes every later call read 0 bytes. Neither
fails loudly. So each pass runs under a :class:`PassCheck`, which collects

* exceptions raised by apiprof's own callbacks (they catch and report them here instead of
  raising into the measured code);
* unraisable exceptions whose origin is apiprof's measuring code (a callback the interpreter
  could not even call, e.g. with the wrong number of arguments, lands there);
* anything else a pass knows to be wrong (an allocation counter still paused after a run),

and :meth:`PassCheck.verify` turns any of them into an :class:`InvalidPassError` with the
reasons, instead of numbers.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

from apiprof.errors import MeasurementError

MEASURE_DIR = str(Path(__file__).resolve().parent)


class InvalidPassError(MeasurementError):
    """A pass's numbers cannot be trusted; the message says why."""


def _from_apiprof(exc: BaseException | None) -> bool:
    """Whether an exception was raised in (or while calling) apiprof's measuring code."""
    if exc is None:
        return False
    tb: types.TracebackType | None = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(MEASURE_DIR):
            return True
        tb = tb.tb_next
    # a callback called with the wrong arguments fails before any of its lines run
    return isinstance(exc, TypeError) and "on_" in str(exc) and "argument" in str(exc)


class PassCheck:
    """Context manager around one pass; collects problems and checks them at the end."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.problems: list[str] = []
        self._previous_hook: Any = None

    def callback_failed(self, where: str, error: BaseException) -> None:
        if len(self.problems) < 20:
            self.problem(f"{where} raised {type(error).__name__}: {error}")

    def problem(self, reason: str) -> None:
        """Note what invalidates the pass; a reason met again (a hook failing on every
        call) is kept once."""
        if reason not in self.problems:
            self.problems.append(reason)

    def _unraisable(self, unraisable: Any) -> None:
        if _from_apiprof(unraisable.exc_value):
            self.callback_failed("a probe callback", unraisable.exc_value)
            return  # printing it would be charged to the measured code
        self._previous_hook(unraisable)

    def __enter__(self) -> PassCheck:
        self._previous_hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, *exc: object) -> None:
        sys.unraisablehook = self._previous_hook

    def verify(self) -> None:
        """Raise :class:`InvalidPassError` if anything went wrong during the pass."""
        if self.problems:
            raise InvalidPassError(
                f"the {self.name} was invalidated instead of stored: {'; '.join(self.problems)}"
            )
