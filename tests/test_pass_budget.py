"""How long a timing pass measures on a busy machine (engine/measure/passlog.Budget).

The pass's clock is a fake that moves only when the test says: each run of the measured
function takes one unit of it (~4 ms), and a fake switch source reports how much of that time the thread
was switched out. So the budget's accounting is checked without racing any real timer.
"""

from __future__ import annotations

import pytest
from fakeclock import FakeClock

from apiprof.engine.measure import timing
from apiprof.engine.measure.pace import Pace
from apiprof.engine.measure.passlog import Budget
from apiprof.engine.measure.probes import PySite
from apiprof.engine.measure.switches import Stretch
from apiprof.engine.measure.timing import run_timing_pass

UNIT = 2.0**-8  # ~3.9 ms, exact in binary (sums compare exactly), above STRETCH_SECONDS:
# stretches of runs this long do not double


class FakeSwitches:
    """Perf-like records: each run was switched out for ``away_per_run`` of the fake time."""

    subtracts = True

    def __init__(self, clock: FakeClock, away_per_run: float) -> None:
        self.clock, self.away_per_run = clock, away_per_run
        self.runs = 0

    def mark(self) -> None:
        self.runs = 0

    def stretch(self) -> Stretch:
        away_ns = round(self.runs * self.away_per_run * 1e9)
        self.runs = 0
        return Stretch([(0, away_ns)] if away_ns else [], bool(away_ns))


def measured(clock: FakeClock, switches: FakeSwitches | None, own: float, away: float):
    made = [0]

    def run() -> None:
        made[0] += 1
        clock.now += own + away
        if switches is not None:
            switches.runs += 1

    return run, made


def budget(**changes) -> Budget:
    fields = {"min_runs": 4, "seconds": 10 * UNIT, "max_seconds": 60.0, "warmup": False}
    return Budget(**{**fields, **changes})


def test_an_idle_pass_runs_for_its_budget_of_time(clock):
    run, made = measured(clock, None, own=1 * UNIT, away=0.0)
    log = run_timing_pass(run, [PySite(run)], budget=budget())
    assert log.runs == made[0] == 10  # a budget of 10 units


def test_a_preempted_pass_counts_the_time_it_ran_until_its_wall_time_cap(clock):
    """Switched out 3 units of every 4: without a cap the pass would last 40 units of wall time
    to get its 10; it stops at wall_factor (2) × 10 = 20 units, with 5 units of runs."""
    switches = FakeSwitches(clock, away_per_run=3 * UNIT)
    run, made = measured(clock, switches, own=1 * UNIT, away=3 * UNIT)
    log = run_timing_pass(run, [PySite(run)], budget=budget(), switches=switches)  # type: ignore[arg-type]
    assert log.runs == made[0] == 5
    assert log.preempted_ns == 5 * round(3 * UNIT * 1e9)


def test_at_half_a_cpu_a_pass_still_gets_its_whole_budget(clock):
    switches = FakeSwitches(clock, away_per_run=1 * UNIT)
    run, made = measured(clock, switches, own=1 * UNIT, away=1 * UNIT)
    log = run_timing_pass(run, [PySite(run)], budget=budget(), switches=switches)  # type: ignore[arg-type]
    assert log.runs == made[0] == 10  # 10 units of runs in 20 of wall time


def test_a_burst_of_preemption_does_not_starve_a_pass(clock):
    """Switched out 30 units once, right at the start: the wall time cap (20 units) has passed
    before the pass ran a quarter of its budget (2.5 units), so it runs that quarter first."""
    switches = FakeSwitches(clock, away_per_run=0.0)
    k = [0]

    def run() -> None:
        k[0] += 1
        away = 30 * UNIT if k[0] == 1 else 0.0
        clock.now += 1 * UNIT + away
        switches.away_per_run = away
        switches.runs += 1

    log = run_timing_pass(run, [PySite(run)], budget=budget(min_runs=1), switches=switches)  # type: ignore[arg-type]
    assert log.runs == 3  # 3 units of runs >= 2.5; the old cap would have stopped after 1


def test_the_minimum_count_outlasts_the_wall_time_cap(clock):
    switches = FakeSwitches(clock, away_per_run=9 * UNIT)
    run, made = measured(clock, switches, own=1 * UNIT, away=9 * UNIT)
    log = run_timing_pass(run, [PySite(run)], budget=budget(min_runs=6), switches=switches)  # type: ignore[arg-type]
    assert (
        log.runs == made[0] == 6
    )  # 60 units of wall time, three times the cap: the floor comes first


def test_measuring_again_costs_at_most_the_budget_reference_calls_included(clock, monkeypatch):
    """Every stretch is judged slow. Each costs 1 unit of runs plus 1 per reference batch
    (two): 3 units. With a budget of 5 one stretch is measured again (3; a second would reach
    6), then slow stretches are kept and counted."""
    reference = timing.call_reference

    def slow_reference_calls(n: int) -> None:
        reference(n)
        clock.now += 1 * UNIT

    monkeypatch.setattr(timing, "call_reference", slow_reference_calls)
    run, made = measured(clock, None, own=1 * UNIT, away=0.0)
    log = run_timing_pass(
        run,
        [PySite(run)],
        budget=budget(seconds=5 * UNIT, min_runs=1),
        slow_reference=lambda ns: True,
    )
    assert made[0] == log.runs + 1
    assert log.stalled_runs == made[0]  # every slow stretch is counted, kept or not


def test_a_fixed_count_pass_may_measure_again_for_half_its_cap():
    assert budget(seconds=0.0, max_seconds=2.0).remeasure_allowance() == 1.0
    assert budget().remeasure_allowance() == 10 * UNIT


@pytest.mark.parametrize(
    ("runs", "own", "wall", "done"),
    [
        (3, 1.0, 1.0, False),  # below the minimum count
        (4, 9 * UNIT, 9 * UNIT, False),
        (4, 10 * UNIT, 10 * UNIT, True),  # the budget of time ran
        (4, 5 * UNIT, 20 * UNIT, True),  # the wall time cap
        (4, 5 * UNIT, 19 * UNIT, False),
        (4, 2.5 * UNIT, 40 * UNIT, True),  # a quarter of the budget ran
        (4, 2 * UNIT, 40 * UNIT, False),  # not yet: preemption came in a burst
        (0, 0.0, 61.0, True),  # the pass's cap, whatever the count
    ],
)
def test_when_a_pass_is_done(runs, own, wall, done):
    assert budget().done(runs, own, wall) is done


def test_time_measured_again_is_not_the_passs_own_time(clock):
    """The first stretch is judged slow and measured again: the 1 unit it took is not time
    the pass's runs ran, so the pass still records its budget of 10 units of runs (before,
    the discarded unit counted and a pass whose stretches were measured again ended short: a
    3.12 leaf pass kept 20 calls)."""
    judged = [0]

    def first_batch_slow(median_ns: float) -> bool:
        judged[0] += 1
        return judged[0] == 1

    run, made = measured(clock, None, own=1 * UNIT, away=0.0)
    log = run_timing_pass(run, [PySite(run)], budget=budget(), slow_reference=first_batch_slow)
    assert log.stalled_runs == 1
    assert log.runs == 10 and made[0] == 11


class PaceOfChecks(Pace):
    """A pace whose reference checks answer from a list (True = ran slow), each advancing the
    fake clock by ``cost``; waits do not sleep."""

    def __init__(self, clock: FakeClock, answers: list[bool], cost: float) -> None:
        super().__init__(1000.0, timer=lambda: 0.0)
        self.clock, self.answers, self.cost = clock, answers, cost
        self.checks = 0

    def check(self) -> tuple[float, bool]:
        self.checks += 1
        self.clock.now += self.cost
        slow = self.answers.pop(0) if self.answers else False
        return (2000.0 if slow else 1000.0), slow

    def wait(self, polls: int = 1, pause=None) -> bool:
        return any(not self.check()[1] for _ in range(polls))


def test_a_stretch_the_reference_workload_ran_slow_after_is_measured_again(clock):
    """The CPU's pace is checked after every stretch (the check right before the pass is
    settle's): a slow one has the stretch measured again, after a wait for a check at pace.
    The checks are not the pass's own time, so it still gets its budget of 10 units of runs;
    the wait is part of measuring again."""
    pace = PaceOfChecks(clock, [True, True, False], cost=UNIT / 2)
    run, made = measured(clock, None, own=1 * UNIT, away=0.0)
    log = run_timing_pass(run, [PySite(run)], budget=budget(), pace=pace)
    assert log.stalled_runs == 1  # the first stretch (1 run), judged slow after it
    assert log.runs == 10 and made[0] == 11
    assert pace.checks == 11 + 2  # after every stretch, and the wait's two


def test_a_stretch_after_a_wait_that_found_no_end_of_the_phase_is_measured_again_too(clock):
    """A wait that ends without a check at pace measures the next stretch anyway; the slow
    check before it marks that stretch as measured in a slow phase as well."""
    pace = PaceOfChecks(clock, [True] * 4, cost=UNIT / 4)
    run, made = measured(clock, None, own=1 * UNIT, away=0.0)
    log = run_timing_pass(run, [PySite(run)], budget=budget(), pace=pace)
    assert log.stalled_runs == 2  # the first (slow after it), the second (slow before it)
    assert log.runs == 10 and made[0] == 12


def test_the_checks_of_the_pace_do_not_count_against_the_wall_time_cap(clock):
    """Switched out 3 units of every 4, as above: the cap (20 units of wall time) leaves 5
    runs. A check after every stretch costing a whole unit changes nothing: the checks are
    the scan's cost, not the pass's (before, they ate into the cap and a 3.11 leaf pass on a
    loaded machine kept 381 calls)."""
    switches = FakeSwitches(clock, away_per_run=3 * UNIT)
    pace = PaceOfChecks(clock, [], cost=1 * UNIT)
    run, made = measured(clock, switches, own=1 * UNIT, away=3 * UNIT)
    log = run_timing_pass(run, [PySite(run)], budget=budget(), switches=switches, pace=pace)  # type: ignore[arg-type]
    assert log.runs == made[0] == 5 and pace.checks == 5
