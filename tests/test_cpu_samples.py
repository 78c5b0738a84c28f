"""A cheap function gets enough CPU-time samples (engine/measure/timing.py, passlog.Budget).

Its calls read the thread-CPU clock one in ``SAMPLE_EVERY`` at most; a pass whose runs hold few
calls samples more often, and a pass that ends short of ``MIN_CPU_SAMPLES`` (cut by a busy
machine) runs on for them. As in test_pass_budget.py the pass's clock is a fake that moves one
unit per run, so what is checked is the accounting, never a real timer; the calls are real
(short) calls of the ground-truth leaf, so the warm-up judges them short.
"""

from __future__ import annotations

import groundtruth_pkg as gt
from fakeclock import FakeClock

from apiprof.engine.measure.costs import measure_calls
from apiprof.engine.measure.passlog import CPU_EXTENSION, MIN_CPU_SAMPLES, SAMPLE_EVERY, Budget
from apiprof.engine.measure.probes import PySite
from apiprof.engine.measure.spread import window_budget
from apiprof.engine.measure.switches import Stretch
from apiprof.engine.measure.timing import run_timing_pass

UNIT = 2.0**-8  # one run of fake time (~3.9 ms): stretches do not double


class AwaySwitches:
    """Perf-like records: every run after the warm-up was switched out for ``away`` units of
    the fake time."""

    subtracts = True

    def __init__(self, away: float) -> None:
        self.away, self.runs, self.made = away, 0, 0

    def mark(self) -> None:
        self.runs = 0

    def stretch(self) -> Stretch:
        away_ns = round(self.runs * self.away * UNIT * 1e9)
        self.runs = 0
        return Stretch([(0, away_ns)] if away_ns else [], bool(away_ns))


def leaf_runs(clock: FakeClock, calls: int, switches: AwaySwitches | None = None):
    """A scenario calling the leaf ``calls`` times per run, one fake unit (plus any time away)."""

    def run() -> None:
        for _ in range(calls):
            gt.leaf(3)
        clock.now += UNIT
        if switches is not None:
            clock.now += UNIT * switches.away if switches.made else 0.0
            switches.made += 1
            switches.runs += switches.made > 1

    return run


def cpu_samples(log) -> int:
    return sum(1 for cpu in log.enters[0][0::2] if cpu >= 0)


def test_a_cheap_function_with_few_calls_per_run_is_sampled_more_often_and_runs_for_its_samples(
    clock,
):
    """64 calls a run, a budget of two runs: at one in 16 the pass would keep ~8 CPU samples.
    The warm-up sees 128 calls ahead and reads the clock on every call; two runs hold 128
    samples, short of MIN_CPU_SAMPLES, so a third run is measured."""
    budget = Budget(min_runs=1, seconds=2 * UNIT, max_seconds=60.0, warmup=True)
    log = run_timing_pass(leaf_runs(clock, 64), [PySite(gt.leaf)], budget=budget)
    assert log.cpu_every == [1]
    assert log.runs == 3
    assert cpu_samples(log) == 3 * 64 >= MIN_CPU_SAMPLES
    (costs,) = measure_calls(log, {}, {})
    assert len(costs.cpu_ns) == 3 * 64


def test_a_pass_cut_short_by_a_busy_machine_runs_on_for_its_cpu_samples(clock):
    """256 calls a run, 10 units of budget: the warm-up expects 2560 calls and samples one in 9
    (twice MIN_CPU_SAMPLES ahead). Switched out 9 units of every 10, the wall-time cap ends the
    pass after a quarter of its budget (3 runs, ~85 samples); it runs on until it has them."""
    switches = AwaySwitches(away=9)
    budget = Budget(min_runs=1, seconds=10 * UNIT, max_seconds=60.0, warmup=True)
    log = run_timing_pass(
        leaf_runs(clock, 256, switches),
        [PySite(gt.leaf)],
        budget=budget,
        switches=switches,  # type: ignore[arg-type]
    )
    rate = 2560 // (2 * MIN_CPU_SAMPLES)
    assert 1 < rate < SAMPLE_EVERY and log.cpu_every == [rate]
    assert cpu_samples(log) >= MIN_CPU_SAMPLES
    assert 3 < log.runs <= CPU_EXTENSION * 10


def test_a_pass_of_plentiful_calls_keeps_the_fixed_rate_and_its_budget(clock):
    """4096 calls a run: one in 16 gives far more than enough; nothing changes."""
    budget = Budget(min_runs=1, seconds=2 * UNIT, max_seconds=60.0, warmup=True)
    log = run_timing_pass(leaf_runs(clock, 4096), [PySite(gt.leaf)], budget=budget)
    assert log.cpu_every == [SAMPLE_EVERY]
    assert log.runs == 2
    assert cpu_samples(log) >= MIN_CPU_SAMPLES


def test_a_pass_of_a_fixed_count_keeps_its_count_and_rate(clock):
    """No time budget (a fixed count, as a test suite's pass): sampled at the fixed rate, never
    run on for samples."""
    budget = Budget(min_runs=2, seconds=0.0, max_seconds=60.0, warmup=True)
    log = run_timing_pass(leaf_runs(clock, 64), [PySite(gt.leaf)], budget=budget)
    assert log.cpu_every == [SAMPLE_EVERY]
    assert log.runs == 2


def test_windows_share_the_cpu_samples():
    budget = Budget(min_runs=20, seconds=0.01)
    assert window_budget(budget, 3).min_cpu_samples == -(-MIN_CPU_SAMPLES // 3)
    assert window_budget(budget, 1).min_cpu_samples == MIN_CPU_SAMPLES


def test_a_slow_first_run_does_not_make_a_cheap_function_read_the_cpu_clock_more_often(clock):
    """The first warm-up run of a cheap batch is cold: taken alone (10 units) it says the
    budget holds one run, 64 calls, and the leaf would be sampled on every call — which slows
    every call of the pass (a ~150 ns leaf's pass kept ~3,300 calls instead of ~17,000). A
    second run (1/64 unit) says 128 runs: one in SAMPLE_EVERY stays."""
    made = [0]

    def run() -> None:
        for _ in range(64):
            gt.leaf(3)
        clock.now += 10 * UNIT if not made[0] else UNIT / 64
        made[0] += 1

    budget = Budget(min_runs=1, seconds=2 * UNIT, max_seconds=60.0, warmup=True)
    log = run_timing_pass(run, [PySite(gt.leaf)], budget=budget)
    assert log.cpu_every == [SAMPLE_EVERY]
    assert log.runs == made[0] - 2  # two warm-up runs
