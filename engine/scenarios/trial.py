"""Trial runs: whether a candidate scenario runs at all (twice, quietly, within a time limit)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback
from collections.abc import Iterator
from dataclasses import replace

from apiprof.engine import timeouts
from apiprof.engine.discovery.dependencies import optional_dependency, unavailable_here
from apiprof.engine.discovery.discover import describe_exception
from apiprof.engine.scenarios.spec import ScenarioSpec, compile_scenario
from apiprof.engine.scenarios.stops import WATCH
from apiprof.model.records import NO_SIZE, Coverage, Failure, Phase

TRIAL_SECONDS = 5.0
"""A trial call that takes longer than this is abandoned (its scenario is dropped)."""


def try_scenario(
    spec: ScenarioSpec, size: int | None = None, *, calls: int = 2
) -> tuple[Failure | None, object]:
    """Run the scenario's setup and ``calls`` calls: (None, last result) or (failure, None).

    The failure's kind is a timeout or running out of memory when that is what happened, else
    "no arguments" (this scenario's arguments do not work; another source's may).

    Calls twice by default: an argument that the first call uses up (an iterator, a file read
    to its end) makes repeated measurement meaningless, and this catches it.

    A trial that stopped an earlier worker of this entry point (:mod:`~apiprof.engine.
    scenarios.stops`) is not run again: it fails as it did then.
    """
    if size is None and spec.size_axis:
        size = spec.sizes[0]
    stop = WATCH.stop_for(spec, NO_SIZE if size is None else size, Phase.COLLECT)
    if stop is not None:
        return stop.failure(), None
    try:
        return _trial(spec, size, calls)
    finally:
        WATCH.idle()  # what runs next (building another scenario) is no trial of this one


def _trial(spec: ScenarioSpec, size: int | None, calls: int) -> tuple[Failure | None, object]:
    result: object = None
    stage = "setup"
    try:
        with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
            run = compile_scenario(spec, size)
            for attempt in range(calls):
                stage = "call" if attempt == 0 else "repeated call"
                result = run()
    except timeouts.CallTimeout:
        return Failure(
            Coverage.TIMED_OUT,
            f"took longer than {TRIAL_SECONDS:g} s on a trial call",
            scenario=spec.id,
            phase=Phase.SETUP if stage == "setup" else Phase.CALL,
        ), None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit from argparse-style mains, too
        failure = failure_from(error, failure_kind(error, spec.qualname), spec.id)
        reason = f"raised {describe_exception(error)} in {stage}"
        if failure.kind is Coverage.MISSING_DEPENDENCY:  # say what to install first
            reason = lacking(error, spec.qualname, reason)
        return replace(failure, reason=reason), None
    return None, result


def lacking(error: BaseException, qualname: str, reason: str) -> str:
    """``reason`` led by what an API of ``qualname``'s package needs and this machine lacks:
    an optional dependency to install, or a part defined only elsewhere."""
    needed = optional_dependency(error, qualname)
    if needed:
        return f"needs {needed}, which is not installed (install it to profile this): {reason}"
    elsewhere = unavailable_here(error, qualname)
    if elsewhere:
        return f"needs what this machine lacks ({elsewhere}; scan where it runs): {reason}"
    return reason


def failure_kind(error: BaseException, qualname: str) -> Coverage:
    """What an exception a candidate call raised says: out of memory, an optional dependency of
    the package that is not installed or a part this machine lacks, or (most often) arguments
    that do not work."""
    if isinstance(error, MemoryError):
        return Coverage.MEMORY
    if optional_dependency(error, qualname) or unavailable_here(error, qualname):
        return Coverage.MISSING_DEPENDENCY
    return Coverage.NO_ARGUMENTS


def failure_from(
    error: BaseException, kind: Coverage, scenario: str = "", reason: str = ""
) -> Failure:
    """A :class:`Failure` for an exception a scenario raised: its phase (read off the
    traceback: setup code, the measured call, or iterating the result), where it was raised
    (the innermost frame outside apiprof) and the last frames of the traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    phase = ""
    for frame in frames:
        if frame.filename.startswith("<setup of"):
            phase = Phase.SETUP
        elif frame.filename.startswith("<call of"):
            phase = Phase.CALL
        elif frame.name == "consume" and frame.filename.endswith("consume.py") and phase:
            phase = Phase.CONSUME
    if not phase and scenario:
        phase = Phase.COLLECT
    outside = [f for f in frames if not _is_apiprof(f.filename) and not f.filename.startswith("<")]
    where = outside[-1] if outside else (frames[-1] if frames else None)
    location = f"{where.filename}:{where.lineno} in {where.name}" if where else ""
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    tail = "".join(lines[-TRACEBACK_FRAMES * 2 - 1 :]).rstrip()
    return Failure(
        kind,
        reason or f"raised {describe_exception(error)}",
        tail[-TRACEBACK_CHARS:],
        scenario=scenario,
        phase=str(phase),
        location=location,
    )


TRACEBACK_FRAMES = 5
"""Frames of a traceback kept with a failure (the innermost ones)."""
TRACEBACK_CHARS = 4000

_APIPROF_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def _is_apiprof(filename: str) -> bool:
    return os.path.realpath(filename).startswith(_APIPROF_ROOT + os.sep)


class _KeptOpenBytes(io.BytesIO):
    """Bytes under a standard stream, left open by a wrapper's close (see :class:`KeptOpen`)."""

    def close(self) -> None:
        pass


class KeptOpen(io.BufferedReader):
    """The worker's standard input (``/dev/null``): a call that wraps ``sys.stdin.buffer`` in
    its own ``TextIOWrapper`` closes it when the wrapper is collected, and the next measured
    call would read a closed file; this buffer stays open (and keeps its file descriptor)."""

    def close(self) -> None:
        pass


def plain_process_state() -> None:
    """What package code sees of the process: a standard input no call can close, and a
    command line with no arguments (a ``main()`` that parses ``sys.argv`` must not meet the
    worker's own ``--request-fd``; the usage-line repair gives it arguments of its own)."""
    keep_standard_input_open()
    del sys.argv[1:]


def keep_standard_input_open() -> None:
    """Give the worker a standard input no call can close (:class:`KeptOpen`)."""
    try:
        descriptor = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):  # none, or not a file: nothing to keep open
        return
    kept = KeptOpen(io.FileIO(descriptor, "r", closefd=False))
    sys.stdin = io.TextIOWrapper(kept, errors="replace")


class MemoryStream(io.TextIOWrapper):
    """An in-memory text stream with bytes underneath (``.buffer``), as the real standard
    streams have: a tool that writes bytes to ``sys.stdout.buffer`` or reads
    ``sys.stdin.buffer`` works in a trial as it does when measured (a wrapper of it that is
    collected leaves it open, as the worker's own standard input is)."""

    def __init__(self) -> None:
        self._bytes = _KeptOpenBytes()
        super().__init__(self._bytes, encoding="utf-8", errors="replace", write_through=True)

    def getvalue(self) -> str:
        self.flush()
        return self._bytes.getvalue().decode("utf-8", "replace")


@contextlib.contextmanager
def quiet_stdio() -> Iterator[None]:
    """Trials print nowhere and read an empty stdin (never the worker's own pipes)."""
    stdin = sys.stdin
    sys.stdin = MemoryStream()
    try:
        with contextlib.redirect_stdout(MemoryStream()), contextlib.redirect_stderr(MemoryStream()):
            yield
    finally:
        sys.stdin = stdin
