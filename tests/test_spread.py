"""A pass with few runs is measured in windows spread over time (engine/measure/spread).

The slow phase is injected: the pause between two windows is the test's, and it switches the
measured function between free and a 5 ms sleep — so which windows were kept shows in the
calls' times (milliseconds against microseconds), with no race of timers.
"""

from __future__ import annotations

import statistics
import time

from apiprof.engine.measure import profiler
from apiprof.engine.measure import spread as spread_module
from apiprof.engine.measure.batch import repeated
from apiprof.engine.measure.pace import Pace
from apiprof.engine.measure.passlog import Budget
from apiprof.engine.measure.probes import PySite
from apiprof.engine.measure.settle import settled_pass
from apiprof.engine.measure.spread import (
    EXTRA_WINDOWS,
    FEW_RUNS,
    WINDOW_TOLERANCE,
    WINDOWS,
    kept_windows,
    spread_pass,
    window_budget,
    windows_for,
)
from apiprof.model.records import Calibration, Disturbance, Metric

INDEX_NS = 1000.0
CALIBRATION = Calibration(machine_speed_ns=INDEX_NS)
STALL_SECONDS = 0.005

slow = [False]


def target() -> None:
    """Free in a normal phase; 5 ms per call while the test says the CPU runs slow."""
    if slow[0]:
        time.sleep(STALL_SECONDS)


def nap() -> None:
    """A scenario run of at least 1 ms: at most 10 runs in a 10 ms budget."""
    time.sleep(0.001)


def measure(window: Budget):
    """One settled pass of ``target`` whose reference checks always read at pace: only the
    windows can tell the slow phase."""
    return settled_pass(
        target,
        [PySite(target)],
        {},
        budget=window,
        switches=None,
        calibration=CALIBRATION,
        check=lambda pace: Disturbance(references=1, reference_ns=INDEX_NS),
        pace=Pace(INDEX_NS, timer=lambda: INDEX_NS),
        pause=lambda seconds: None,
    )


def spread_with_phases(phases: list[bool], windows: int = WINDOWS):
    """Spread a pass over ``windows`` windows; window ``i`` runs slow when ``phases[i]`` (a
    window measured in place of a slow one beyond the list: at pace)."""
    slow[0] = phases[0]
    pauses: list[float] = []

    def pause(seconds: float) -> None:  # between two windows: the next window's phase
        pauses.append(seconds)
        slow[0] = len(pauses) < len(phases) and phases[len(pauses)]

    budget = Budget(min_runs=15, seconds=0.0, max_seconds=2.0, warmup=False)
    try:
        return spread_pass(measure, budget, windows, pause=pause), pauses
    finally:
        slow[0] = False


def test_a_window_in_a_slow_phase_is_left_out_and_measured_again():
    spread, pauses = spread_with_phases([False, True, False])
    (kept,) = spread.kept
    seen = spread.seen
    assert seen.passes >= WINDOWS + 1  # one more window in place of the slow one
    assert len(pauses) == seen.passes - 1  # a gap before every window but the first
    assert seen.slow_windows == seen.passes - len(kept) >= 1
    for costs, _ in kept:  # the slow window's calls (5 ms each) are not among them
        assert statistics.median(costs.wall_ns) < STALL_SECONDS * 1e9 / 5
    walls = [ns for costs, _ in kept for ns in costs.wall_ns]
    assert len(walls) >= 5  # a window's share of the minimum runs
    wall, _ = spread.histograms(0)
    assert wall.count == len(walls)


def test_windows_measured_in_place_of_slow_ones_are_bounded():
    """A slow phase that outlasts the extra windows: the pass ends with what it has."""
    spread, _ = spread_with_phases([False] + [True] * 10)
    assert spread.seen.passes == WINDOWS + EXTRA_WINDOWS
    (kept,) = spread.kept
    assert kept and spread.seen.slow_windows == WINDOWS + EXTRA_WINDOWS - len(kept)


def test_a_single_window_is_not_judged():
    spread, pauses = spread_with_phases([True], windows=1)
    assert spread.seen.passes == 1 and not pauses and len(spread.kept[0]) == 1


def test_the_keep_rule_compares_with_the_fastest_window():
    steady = [100.0] * 16
    assert kept_windows([steady, [x * 1.03 for x in steady], [x * 1.2 for x in steady]]) == [
        True,
        True,
        False,
    ]
    edge = 1 + WINDOW_TOLERANCE
    assert kept_windows([steady, [x * (edge + 0.01) for x in steady]]) == [True, False]
    assert kept_windows([[x * 1.2 for x in steady], [], steady]) == [False, True, True]


def test_calls_that_vary_by_themselves_keep_every_window():
    """Windows of a function whose calls spread widely differ by chance: not a slow phase."""
    wide = [float(x) for x in range(50, 151, 10)]  # 11 calls from 50 to 150: median 100
    assert kept_windows([wide, [x * 1.1 for x in wide]]) == [True, True]
    narrow = [float(x) for x in range(99, 102)] * 4
    assert kept_windows([narrow, [x * 1.1 for x in narrow]]) == [True, False]


def test_only_passes_with_few_runs_are_spread():
    budget = Budget(min_runs=20, seconds=0.01)
    assert windows_for(budget, 200_000) == WINDOWS  # 50 runs of 200 µs
    assert windows_for(budget, 1_000) == 1  # 10,000 runs: not a single window's luck
    assert windows_for(budget, budget.seconds * 1e9 / FEW_RUNS) == 1
    assert windows_for(budget, 5_000_000) == 1  # two runs: fewer than one per window
    assert windows_for(Budget(min_runs=20, seconds=0.0), 200_000) == 1  # a fixed count
    assert windows_for(budget, 0) == 1  # run time unknown
    each = window_budget(budget, 3)
    assert (each.min_runs, each.seconds) == (7, budget.seconds / 3)
    assert window_budget(budget, 1) is budget


def test_a_scan_scenario_of_long_runs_is_measured_in_windows(monkeypatch):
    """profile() times a scenario run, spreads the group's pass and stores every kept window's
    calls; a gap is slept between windows."""
    gaps: list[float] = []
    monkeypatch.setattr(spread_module, "_sleep", gaps.append)
    # a run of 1 ms as timed (a busy machine's sleep can overshoot past a window's budget)
    monkeypatch.setattr(profiler, "plain_run_ns", lambda run_once: 1_000_000)

    report = profiler.profile(
        nap,
        [profiler.Target("nap", nap)],
        scenario_id="long",
        repeat=6,
        time_budget=0.01,
        consume=False,
        batch=lambda times: repeated(nap, times),
    )
    passes = report.disturbance.passes  # windows in place of slow ones may follow
    assert WINDOWS <= passes <= WINDOWS + EXTRA_WINDOWS
    assert gaps == [spread_module.GAP_SECONDS] * (passes - 1)
    (wall,) = [m.histogram for m in report.measurements if m.metric == Metric.WALL]
    assert wall.count >= 2  # a window's share of the minimum runs (slow windows left out)
