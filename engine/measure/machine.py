"""How fast is this machine right now? A fixed reference workload, timed.

``machine_speed_ns`` (stored per scan, lower is faster) is the fastest of many timings of
:func:`reference_workload` — a few dozen µs of ordinary interpreter work (arithmetic, a dict, a
string join) — so databases measured on different machines can be put side by side: an API's
time divided by its scan's index compares across machines to first order. During a scan the
profiler times the same workload before and after every timing pass (:func:`reference_check_ns`:
a warm-up run, then the fastest of a few); one that runs more than
:data:`~apiprof.engine.measure.pace.SLOW_FACTOR` times the fastest the process has seen means
the CPU itself ran slow (a busy sibling hyper-thread, a
throttled or stolen virtual CPU): the pass is measured again
(:mod:`~apiprof.engine.measure.settle`), and the scan counts and reports it. Preemption is seen by the
switch counters instead: the workload takes a few dozen µs, well inside one time slice.

Why not one timing: right after other work the workload's first run finds cold caches and
branch predictors and reads about 1.7× the index on an unchanged machine (half of such single
timings passed 1.5×), so every scan would have been called busy.
"""

from __future__ import annotations

import time

ROUNDS = 41


def reference_workload() -> int:
    """Fixed work, the same on every interpreter: returns a checksum so nothing is skipped."""
    table: dict[int, int] = {}
    total = 0
    for i in range(200):
        total += (i * i) ^ (i >> 2)
        table[i & 63] = total
    return total + len("".join(str(v & 7) for v in table.values()))


def time_reference() -> int:
    """ns one run of :func:`reference_workload` takes now."""
    started = time.perf_counter_ns()
    reference_workload()
    return time.perf_counter_ns() - started


CHECK_RUNS = 5


def reference_check_ns(runs: int = CHECK_RUNS) -> int:
    """ns the workload takes now, warm: the fastest of ``runs`` timings after a warm-up run."""
    reference_workload()
    return min(time_reference() for _ in range(runs))


def machine_speed_ns(rounds: int = ROUNDS) -> float:
    """The machine-speed index: the fastest of ``rounds`` timings after a warm-up run."""
    reference_workload()
    return float(min(time_reference() for _ in range(rounds)))
