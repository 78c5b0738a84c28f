"""Trial runs: whether a candidate scenario runs at all (twice, quietly, within a time limit)."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator

from apiprof.engine import timeouts
from apiprof.engine.discovery.discover import describe_exception
from apiprof.engine.scenarios.spec import ScenarioSpec, compile_scenario
from apiprof.model.records import Coverage, Failure

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
    """
    if size is None and spec.size_axis:
        size = spec.sizes[0]
    result: object = None
    stage = "setup"
    try:
        with timeouts.alarm(TRIAL_SECONDS), _quiet_stdio():
            run = compile_scenario(spec, size)
            for attempt in range(calls):
                stage = "call" if attempt == 0 else "repeated call"
                result = run()
    except timeouts.CallTimeout:
        return Failure(
            Coverage.TIMED_OUT, f"took longer than {TRIAL_SECONDS:g} s on a trial call"
        ), None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit from argparse-style mains, too
        kind = Coverage.MEMORY if isinstance(error, MemoryError) else Coverage.NO_ARGUMENTS
        return Failure(kind, f"raised {describe_exception(error)} in {stage}"), None
    return None, result


@contextlib.contextmanager
def _quiet_stdio() -> Iterator[None]:
    """Trials print nowhere and read an empty stdin (never the worker's own pipes)."""
    stdin = sys.stdin
    sys.stdin = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        sys.stdin = stdin
