"""The machine's pace: is the CPU running at its usual speed right now?

On a shared machine (virtual CPUs whose siblings run other tenants' work) the CPU runs slow in
phases — milliseconds to a few hundred of them — without the thread being switched out, so
neither preemption records nor the pass's own calls show it. Measured at load 7 on 2 cores
(3.12, 5,400 back-to-back rounds of the reference check, ``gt.mid(1000)`` and ``gt.leaf(3)``):
7 % of the time the reference workload ran more than 1.08× its median, and in those moments
the two functions ran 1.73× slower; over ~40 ms windows the three workloads' medians moved
together (correlation 0.98–0.99). A pass that lands in such a phase reads high as a whole
(a 1000-call parent read 1.57× its truth with a reference 1.39× the calibrated index, which
the earlier 1.5× rule let through).

So each reference check (:func:`~apiprof.engine.measure.machine.reference_check_ns`, the
fastest of a few warm timings) is judged against the fastest one this process has seen
(:class:`Pace`, starting from the calibrated machine-speed index): more than ``SLOW_FACTOR``
times that is a slow phase. Before measuring a slowed pass again the profiler waits for the phase to end
(:meth:`Pace.wait`: a few short sleeps, each followed by a check), since a phase usually
outlasts an immediate second attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from apiprof.engine.measure.machine import reference_check_ns

SLOW_FACTOR = 1.25
"""A reference check this many times the fastest seen means the CPU is in a slow phase. Checks
of passes that came out within ±5 % of the long-run median ranged up to 1.2× the fastest (60
passes at load 11); slow phases read 1.3–2.0× (the passes around them 1.08–1.78×)."""
WAIT_POLLS = 12
"""Checks at most while waiting for a slow phase to end..."""
POLL_SECONDS = 0.01
"""...each after a sleep this long (the whole wait stays under ~0.15 s)."""


class Pace:
    """The fastest reference check seen (ns); judges new ones against it. ``timer`` times the
    reference workload (tests inject one)."""

    def __init__(self, best_ns: float = 0.0, timer: Callable[[], float] = reference_check_ns):
        self.best_ns = float(best_ns)
        self._timer = timer

    def ratio(self, took_ns: float) -> float:
        """``took_ns`` over the fastest check seen before it (1.0 with nothing to compare);
        a faster check becomes the new fastest."""
        best = self.best_ns
        if took_ns > 0 and (best <= 0 or took_ns < best):
            self.best_ns = float(took_ns)
        return took_ns / best if best > 0 else 1.0

    def check(self) -> tuple[float, bool]:
        """Time the reference workload now: (ns, whether it ran slow)."""
        took = float(self._timer())
        return took, self.ratio(took) > SLOW_FACTOR

    def wait(self, polls: int = WAIT_POLLS, pause: Callable[[float], object] = time.sleep) -> bool:
        """Wait until a check runs at pace again, at most ``polls`` checks (each after
        ``pause(POLL_SECONDS)``); whether it did. Sleeping costs the machine nothing and lets
        whatever slows this CPU finish."""
        for _ in range(max(0, polls)):
            pause(POLL_SECONDS)
            if not self.check()[1]:
                return True
        return False


_process_pace: Pace | None = None


def process_pace(index_ns: float) -> Pace:
    """This process's pace (one per worker: the fastest check it has seen), first seeded with
    the calibrated machine-speed index ``index_ns``."""
    global _process_pace
    if _process_pace is None:
        _process_pace = Pace(index_ns)
    elif index_ns > 0:
        _process_pace.ratio(index_ns)  # a faster index lowers the fastest seen
    return _process_pace
