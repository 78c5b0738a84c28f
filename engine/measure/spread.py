"""A pass with few runs is measured in windows spread over time, and a slow window left out.

A timing pass measures for its budget (10 ms by default) in one go. A scenario whose run
takes ~200 µs (the ground-truth parent: 1000 calls of a ~150 ns leaf) gets ~47 runs, all
from one 10 ms window of the machine's time. On a shared CPU, slow phases of 10–300 ms slow
everything by 1.1–1.7×; the milder ones stay under the reference checks' limit
(:data:`~apiprof.engine.measure.pace.SLOW_FACTOR`), so the whole pass read high and nothing
flagged it (3.11, 10 rounds: the parent outside ±5 % in 4, at 1.09–1.45×).

So a pass whose budget holds fewer than ``FEW_RUNS`` of the scenario's runs (and at least one
per window) is measured as ``WINDOWS`` settled passes (:mod:`~apiprof.engine.measure.settle`),
each with its share of the budget and the minimum runs, separated by ``GAP_SECONDS`` of sleep
(it costs the machine nothing). Per target, a window whose median is more than ``tolerance``
above the fastest window's median ran in a slow phase and is left out of the target's figures
(:attr:`~apiprof.model.records.Disturbance.slow_windows`) and another window is measured in
its place (``EXTRA_WINDOWS`` at most, judged with the rest); ``tolerance`` is
``WINDOW_TOLERANCE``, or for a target whose calls vary by themselves ``NOISE_WIDTHS`` standard
errors of the fastest window's median, whichever is larger — windows that differ only by the
calls' own spread are all kept, so the figure is not biased low. A scenario of cheap runs gets
thousands of them in its budget: its medians do not hinge on one window's pace and it is
measured in one window, as before.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from apiprof.engine.measure.costs import CallCosts
from apiprof.engine.measure.passlog import Budget
from apiprof.engine.measure.settle import Settled
from apiprof.model.histogram import Histogram
from apiprof.model.records import Disturbance

WINDOWS = 3
"""Windows a pass with few runs is measured in."""
FEW_RUNS = 200
"""A pass whose budget holds fewer runs than this is spread (runs of 50 µs or more at 10 ms)."""
GAP_SECONDS = 0.02
"""Sleep between two windows: longer than the shortest slow phases, so one phase rarely covers
every window, and short enough that a spread pass costs ~40 ms more wall time."""
EXTRA_WINDOWS = 2
"""Windows measured at most in place of slow ones (after a gap each): a pass that left one out
would otherwise keep a third fewer calls (at load 12 on 2 cores the parent kept 7 of 21)."""
WINDOW_TOLERANCE = 0.04
"""A window whose median is more than this above the fastest window's is left out..."""
NOISE_WIDTHS = 3.0
"""...unless it is within this many standard errors of the fastest window's median."""
MEDIAN_SE = math.sqrt(math.pi / 2)
"""Standard error of a sample median in units of σ/√n (normal calls)."""
IQR_SIGMAS = 1.349
"""Interquartile range of a normal distribution in units of σ."""

_sleep = time.sleep  # the gap between windows (tests replace it)


@dataclass(frozen=True)
class Spread:
    """The windows kept for each site of a group — ``(costs, cpu_every)`` per kept window —
    and what measuring saw."""

    kept: list[list[tuple[CallCosts, int]]]
    seen: Disturbance

    def histograms(self, site: int) -> tuple[Histogram, Histogram]:
        """WALL and CPU histograms of one site over its kept windows (each CPU sample
        weighted by its window's sampling rate)."""
        wall, cpu = Histogram(), Histogram()
        for costs, every in self.kept[site]:
            wall = wall + Histogram.of(costs.wall_ns)
            cpu = cpu + Histogram.of(costs.cpu_ns, every)
        return wall, cpu


def windows_for(budget: Budget, run_ns: float) -> int:
    """How many windows a pass of runs taking ``run_ns`` is measured in: ``WINDOWS`` when its
    time budget holds fewer than ``FEW_RUNS`` runs but one per window, else 1 (no time budget
    or an unknown run time: 1)."""
    if budget.seconds <= 0 or run_ns <= 0:
        return 1
    runs = budget.seconds * 1e9 / run_ns
    return WINDOWS if WINDOWS <= runs < FEW_RUNS else 1


def window_budget(budget: Budget, windows: int) -> Budget:
    """One window's share of ``budget``: its seconds, cap, minimum runs and CPU samples
    divided."""
    if windows <= 1:
        return budget
    return dataclasses.replace(
        budget,
        min_runs=max(1, math.ceil(budget.min_runs / windows)),
        min_cpu_samples=math.ceil(budget.min_cpu_samples / windows),
        seconds=budget.seconds / windows,
        max_seconds=budget.max_seconds / windows,
    )


def spread_pass(
    measure: Callable[[Budget], Settled],
    budget: Budget,
    windows: int,
    *,
    pause: Callable[[float], object] | None = None,
    gap: float = GAP_SECONDS,
) -> Spread:
    """Measure a group in ``windows`` windows (``measure`` runs one settled pass with the
    budget it is given), ``pause(gap)`` between two (default: a sleep), and keep per site the
    windows that did not run slow (:func:`kept_windows`); as many more windows as the most
    windows a site left out, ``EXTRA_WINDOWS`` at most, are measured in their place."""
    pause = pause or _sleep
    each = window_budget(budget, windows)
    measured: list[Settled] = []
    seen = Disturbance()
    keep: list[list[bool]] = []
    planned = max(1, windows)
    while len(measured) < planned:
        if measured:
            pause(gap)
        settled = measure(each)
        measured.append(settled)
        seen += settled.seen
        if len(measured) < planned:
            continue
        keep = [
            kept_windows([one.costs[site].wall_ns for one in measured])
            for site in range(len(settled.costs))
        ]
        slow = max((ok.count(False) for ok in keep), default=0)
        if windows > 1:  # measure again in place of a slow window, a few times at most
            planned = min(windows + EXTRA_WINDOWS, windows + slow)
    kept: list[list[tuple[CallCosts, int]]] = []
    for site, site_keep in enumerate(keep):
        kept.append(
            [
                (one.costs[site], one.log.cpu_every[site])
                for one, ok in zip(measured, site_keep)
                if ok
            ]
        )
        left_out = sum(
            1 for one, ok in zip(measured, site_keep) if one.costs[site].wall_ns and not ok
        )
        seen += Disturbance(slow_windows=left_out)
    return Spread(kept, seen)


def kept_windows(walls: Sequence[Sequence[float]]) -> list[bool]:
    """Which windows of one site to keep, given each window's per-call WALL times: those whose
    median is within the tolerance (module docstring) of the fastest window's median. A window
    without calls is kept (it adds nothing)."""
    medians = [statistics.median(w) if w else math.inf for w in walls]
    fastest = min(range(len(walls)), key=medians.__getitem__, default=None)
    if fastest is None or not walls[fastest] or medians[fastest] <= 0:
        return [True] * len(walls)
    best = medians[fastest]
    limit = best * (1 + max(WINDOW_TOLERANCE, NOISE_WIDTHS * median_error(walls[fastest]) / best))
    return [not w or m <= limit for w, m in zip(walls, medians)]


def median_error(values: Sequence[float]) -> float:
    """Standard error of the median of ``values``, from their interquartile range (robust to
    the few long calls any window has); 0 with fewer than four values."""
    if len(values) < 4:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4)
    return MEDIAN_SE * (q3 - q1) / IQR_SIGMAS / math.sqrt(len(values))
