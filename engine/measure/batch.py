"""Cheap scenarios are timed in a plain loop, as a caller's loop runs them.

What a short call costs depends on the code that runs between its calls (branch predictors and
caches are shared with it). A scan worker wraps every scenario run in its growth timer and its
per-call hang guard; with only that between them, a ~100 ns leaf read 1.09–1.15× its timeit
truth on 3.12 (and 0.96–1.05 when the pass loop called the scenario function directly —
the gap between the scan's figures and in-process ones; ``bench/call_context.py``). So a timing
pass of a scenario whose run takes under ``CHEAP_NS`` runs it ``times`` times per guarded call,
in a plain loop over the unguarded scenario function: the calls follow each other as in the
truth's timeit loop, and the hang guard still limits every batch (``times`` cheap runs).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from apiprof.engine.measure.callbacks import run_by_the_pass

CHEAP_NS = 20_000
"""Scenarios whose plain runs take less than this (ns) are batched."""
BATCH_NS = 4_000
"""A batch runs the scenario about this long (ns), at most ``MAX_TIMES`` runs."""
MAX_TIMES = 16

run_by_the_pass(globals())  # the batch loop's own builtin calls are not the scenario's

Batcher = Callable[[int], Callable[[], object]]
"""Given a count, a callable that runs the scenario that many times (guarded as one call)."""


def repeated(run: Callable[[], object], times: int) -> Callable[[], object]:
    """``run`` called ``times`` times in a plain loop."""

    def runs() -> None:
        for _ in range(times):
            run()

    return runs


def plain_run_ns(run_once: Callable[[], object]) -> int:
    """What one plain run of the scenario takes (ns): one run when it takes ``CHEAP_NS`` or
    more (an expensive scenario pays that one extra run), else the fastest of three."""
    fastest = _run_ns(run_once)
    if fastest >= CHEAP_NS:
        return fastest
    return min(fastest, _run_ns(run_once), _run_ns(run_once))


def batch_times(run_ns: int) -> int:
    """Runs per batch of a scenario whose plain run takes ``run_ns``: 1 from ``CHEAP_NS`` on,
    else ``BATCH_NS`` over it, at most ``MAX_TIMES``."""
    if run_ns >= CHEAP_NS:
        return 1
    return max(1, min(MAX_TIMES, int(BATCH_NS // max(run_ns, 1))))


def _run_ns(run_once: Callable[[], object]) -> int:
    started = time.perf_counter_ns()
    run_once()
    return time.perf_counter_ns() - started
