"""Active time of a call from probe event lists (docs/mechanisms.rst, "Active time").

Elapsed time between the entry and exit probes overstates the work a call did: each probe that
fires inside the interval costs time (its *overhead*, calibrated per event type), and the
operating system may switch the thread out. So::

    active = (end - start) - sum(overhead[kind] of probes with start <= t < end)
                           - sum(|switched-out interval ∩ [start, end)|)

A probe's overhead lies *after* its timestamp, so the call's own entry probe counts and its own
exit probe (at ``end``) does not. Overhead and switched-out intervals are assumed not to
overlap (a probe is a few hundred ns; the kernel rarely preempts inside one). Results are
clamped at 0: noise in the calibration must not produce negative costs.

The same function serves the offline worked example (docs/mechanisms.rst: 266 cycles) and the live profiler,
which feeds it the events of one timing pass — once on the wall clock (WALL metric) and once on
the thread-CPU clock (CPU metric; that clock does not run while the thread is switched out, so
switched-out time is excluded by the clock itself there).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate

OPENS = 1
CLOSES = -1
PROBE_ONLY = 0


@dataclass(frozen=True, slots=True)
class ProbeEvent:
    """One probe firing. ``kind`` is the calibration key of its overhead ("enter", "exit", ...);
    ``call`` says whether it opens (+1) or closes (-1) a timed call of ``name``, or neither (0:
    e.g. a filtered-out profiler event that still cost time)."""

    time: float
    kind: str
    call: int = PROBE_ONLY
    name: str = ""


@dataclass(frozen=True, slots=True)
class TimedCall:
    name: str
    start: float
    end: float
    active: float


def active_time(
    start: float,
    end: float,
    probes: Iterable[ProbeEvent],
    overhead: Mapping[str, float],
    switched_out: Iterable[tuple[float, float]] = (),
) -> float:
    """Active time of the call that ran from ``start`` to ``end`` (any consistent time unit)."""
    probe_cost = sum(overhead.get(p.kind, 0.0) for p in probes if start <= p.time < end)
    away = sum(max(0.0, min(end, hi) - max(start, lo)) for lo, hi in switched_out)
    return max(0.0, (end - start) - probe_cost - away)


def active_times(
    events: Sequence[ProbeEvent],
    overhead: Mapping[str, float],
    switched_out: Sequence[tuple[float, float]] = (),
) -> list[TimedCall]:
    """Pair opening and closing probes (properly nested, as on one thread's stack) and compute
    every call's active time, in order of the calls' ends.

    Uses prefix sums over the time-sorted events, so a pass with n probes costs O(n log n) even
    when calls nest deeply (recursion). Unmatched closes (a call that began before recording)
    and unclosed opens are dropped.
    """
    ordered = sorted(events, key=lambda e: e.time)
    times = [e.time for e in ordered]
    cost_before = [0.0, *accumulate(overhead.get(e.kind, 0.0) for e in ordered)]
    windows = sorted(switched_out)
    window_starts = [lo for lo, _ in windows]

    def away_within(start: float, end: float) -> float:
        first = max(0, bisect.bisect_right(window_starts, start) - 1)
        total = 0.0
        for lo, hi in windows[first:]:
            if lo >= end:
                break
            total += max(0.0, min(end, hi) - max(start, lo))
        return total

    calls: list[TimedCall] = []
    open_stack: list[ProbeEvent] = []
    for event in ordered:
        if event.call == OPENS:
            open_stack.append(event)
        elif event.call == CLOSES and open_stack:
            opened = open_stack.pop()
            start, end = opened.time, event.time
            probe_cost = (
                cost_before[bisect.bisect_left(times, end)]
                - cost_before[bisect.bisect_left(times, start)]
            )
            active = max(0.0, (end - start) - probe_cost - away_within(start, end))
            calls.append(TimedCall(opened.name or event.name, start, end, active))
    return calls
