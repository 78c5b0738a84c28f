"""Failing tests of a ``--tests`` suite: cheap to report, and kept out of the profiled runs
where they are not needed.

pytest describes a failure by formatting its traceback: every frame's source read, parsed and
laid out. In a profiled run that happens under the allocation pass's hooks, where it costs far
more than the test did in the warm-up (whose times do not include it, so the chunk planner
could not foresee it). Here a failure is described in one line instead — the exception and
where it was raised — which is also what the scan's summary shows of it.

A test that fails in the warm-up stops part-way: what it calls before failing are real calls,
but which calls it makes before it fails may change from run to run. The rule is one for every
profiler pass: a failing test is left out of the profiled runs when every entry point it was
seen reaching is also reached by a test that passed (nothing is lost), and kept when it is the
only test seen reaching one — then what it measures before failing counts, and a note says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from apiprof.engine.scenarios.suitecapture import ORIGIN

SHOWN_FAILURES = 5
"""Failing tests named with their reason in the summary (the rest are counted)."""

REASON_CHARS = 240
"""Characters of one failure's reason kept."""

NODE_CHARS = 300
"""Characters of a failing test's node id shown (parametrised ones can be long)."""


def short_failure(excinfo: Any) -> str:
    """``Type: first line of the message (file:line)`` of a pytest ``ExceptionInfo``, the line
    where the exception was raised; no source is read."""
    error = excinfo.value
    try:
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    except Exception:  # a package's __str__ that fails
        message = "<unprintable>"
    where = ""
    tb = excinfo.tb
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" ({os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno})"
    text = type(error).__name__ + (f": {message}" if message else "")
    return text[: REASON_CHARS - len(where)] + where


class CheapFailures:
    """A pytest plugin: every collected test describes its failures with
    :func:`short_failure` instead of a formatted traceback."""

    __test__ = False

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            # repr_failure for the call, _repr_failure_py for set-up and teardown errors
            item.repr_failure = _short_repr
            item._repr_failure_py = _short_repr


def _short_repr(excinfo: Any, style: object = None) -> str:
    return short_failure(excinfo)


def unneeded_failures(
    failing: Iterable[str], reached: Mapping[str, Sequence[str]], targets: Iterable[str]
) -> set[str]:
    """The failing tests (node ids) the profiled runs can do without: every target they were
    seen reaching (``reached``: entry point -> the origins that reached it first) is also
    reached by a test that did not fail."""
    failing = set(failing)
    needed: set[str] = set()
    for target in targets:
        tests = [o.removeprefix(ORIGIN) for o in reached.get(target, ()) if o.startswith(ORIGIN)]
        if tests and all(test in failing for test in tests):
            needed.update(tests)
    return failing - needed


def failure_notes(
    failures: Mapping[str, str],
    left_out: Iterable[str],
    profiled: Iterable[str],
    profiled_failures: Mapping[str, str],
) -> list[str]:
    """What the summary says of failing tests: of the warm-up's (``failures``: node id ->
    reason), those left out of the profiled runs and those that ran in them (``profiled``: the
    node ids the profiled runs ran), and the tests failing only in the profiled runs."""
    notes = []
    left_out = set(left_out)
    kept = sorted(set(failures).intersection(profiled))
    if left_out:
        notes.append(
            f"{len(left_out)} test(s) that failed in the warm-up were left out of the profiled "
            "runs: every entry point they reached is also reached by a passing test"
        )
    if kept:
        notes.append(
            f"{len(kept)} test(s) that failed in the warm-up ran in the profiled runs as the "
            f"only tests seen reaching an entry point (e.g. {kept[0]}): the calls they make "
            "before failing are measured, in every pass alike"
        )
    new = {node: why for node, why in profiled_failures.items() if node not in failures}
    if new:
        node, why = min(new.items())
        notes.append(
            f"{len(new)} test(s) passed in the warm-up but failed in the profiled runs "
            f"(e.g. {node}: {why}); the calls they made before failing are measured"
        )
    return notes


def shown_failures(failures: Mapping[str, str]) -> dict[str, str]:
    """The first :data:`SHOWN_FAILURES` failures, for the reply to the scanner."""
    shown = list(failures.items())[:SHOWN_FAILURES]
    return {node[:NODE_CHARS]: why[:REASON_CHARS] for node, why in shown}
