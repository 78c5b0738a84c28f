"""The step of the clocks a timing pass reads, and the dither that makes quantised intervals
estimate what they stand for.

A clock can report nanoseconds and still advance in coarser steps: on some virtual machines
``CLOCK_MONOTONIC`` and ``CLOCK_THREAD_CPUTIME_ID`` move in steps of about 10 ns, so every
interval reads a multiple of 10 ns (±1). A 100 ns call then reads 90, 100 or 110 ns, and the
*median* of its readings — and the median of the empty reference function's readings, which is
subtracted from every call — lands on a step: each can be off by up to half a step, 5–10% of
a short call. The mean of such readings is unbiased (the call's start falls at a random phase
of the clock's steps), the median is not.

Adding a uniform random offset in ``[-step/2, step/2)`` to each reading (dither) spreads every
step into the interval it stands for, so a median of dithered readings lands within about a
tenth of a step of the true median (≈1 ns at a 10 ns step) instead of on a step. The offsets
come from a seeded generator: the same records give the same figures. A clock whose step is
at most :data:`FINE_NS` is left alone.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable

FINE_NS = 3
"""Steps up to this are below what a call's own jitter spreads anyway: no dither."""
READINGS = 2000
MATCH_SHARE = 0.9
"""Share of back-to-back intervals that must sit within ±1 ns of a multiple of a step."""
LARGEST_STEP = 100


def clock_step(read: Callable[[], int], readings: int = READINGS) -> int:
    """The step (ns) in which ``read`` advances: the largest ``q`` ≤ ``LARGEST_STEP`` such that
    at least ``MATCH_SHARE`` of short intervals of varied length are a multiple of ``q`` within
    ±1 ns (a reading is rounded to whole ns); 1 for a clock with no coarser step."""
    gaps = []
    for i in range(readings):
        before = read()
        for _ in range(i % 17):  # intervals of many lengths, so no one length fakes a step
            pass
        gap = read() - before
        if gap > 0:
            gaps.append(gap)
    if len(gaps) < readings // 2:
        return 1
    for step in range(LARGEST_STEP, FINE_NS, -1):
        near = sum(1 for gap in gaps if min(gap % step, step - gap % step) <= 1)
        if near >= MATCH_SHARE * len(gaps):
            return step
    return 1


@functools.cache
def wall_step() -> int:
    """Step of the wall clock the probes read (``time.perf_counter_ns``), measured once."""
    return clock_step(time.perf_counter_ns)


@functools.cache
def cpu_step() -> int:
    """Step of the thread-CPU clock the probes read (``time.thread_time_ns``), measured once."""
    return clock_step(time.thread_time_ns, READINGS // 4)  # each reading is a system call


class Dither:
    """Uniform offsets in ``[-step/2, step/2)`` for one clock (zero for a fine clock), from a
    generator seeded per use so the same records always give the same figures."""

    def __init__(self, step: int, seed: int = 0) -> None:
        self.half = step / 2 if step > FINE_NS else 0.0
        self._random = random.Random(seed).random

    def __call__(self) -> float:
        return (self._random() * 2 - 1) * self.half if self.half else 0.0

    def add(self, values: list[float]) -> list[float]:
        """Each of ``values`` plus the next offset, floored at 0 — the same figures as one call
        per value, in one sweep (a pass has tens of thousands)."""
        half, draw = self.half, self._random
        if not half:
            return [v if v > 0.0 else 0.0 for v in values]
        return [w if (w := v + (draw() * 2 - 1) * half) > 0.0 else 0.0 for v in values]
