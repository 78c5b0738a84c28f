"""The CPU's pace (engine/measure/pace): reference checks judged against the fastest seen, and
the wait for a slow phase to end before a pass is measured again.

Every timing here is injected (a timer that answers from a list, a pause that only records),
so the tests say what the code decides for given figures, not how fast this machine is.
"""

from __future__ import annotations

from apiprof.engine.measure import pace as pace_module
from apiprof.engine.measure.costs import CallCosts
from apiprof.engine.measure.pace import POLL_SECONDS, SLOW_FACTOR, WAIT_POLLS, Pace, process_pace
from apiprof.engine.measure.passlog import Budget
from apiprof.engine.measure.probes import PySite
from apiprof.engine.measure.settle import reference_check, settled_pass, stall
from apiprof.engine.scan.summary import busy_warnings
from apiprof.model.records import Calibration, Disturbance


def timer_of(*answers: float):
    """A reference timer that answers ``answers`` in turn, then the last one forever."""
    left = list(answers)
    return lambda: left.pop(0) if len(left) > 1 else left[0]


def test_a_check_is_judged_against_the_fastest_seen_not_the_first():
    pace = Pace(45_000.0, timer=timer_of(35_000, 45_000, 42_000))
    # the calibrated index came from a slow moment: the first check is faster and becomes
    # the yardstick, so 45,000 (the index itself, 1.29x the fastest) is a slow phase
    assert pace.check() == (35_000, False)
    assert pace.best_ns == 35_000
    took, slow = pace.check()
    assert (took, slow) == (45_000, True) and SLOW_FACTOR < 45_000 / 35_000
    assert pace.check() == (42_000, False)  # 1.2x: within the factor
    assert pace.best_ns == 35_000  # slow checks never raise the yardstick


def test_without_an_index_the_first_check_is_the_yardstick():
    pace = Pace(0.0, timer=timer_of(50_000, 65_000))
    assert pace.check() == (50_000, False)
    assert pace.check()[1]  # 1.3x the first


def test_the_wait_ends_when_a_check_runs_at_pace_again():
    pauses: list[float] = []
    pace = Pace(1000.0, timer=timer_of(2000, 1900, 1100))
    assert pace.wait(pause=pauses.append)
    assert pauses == [POLL_SECONDS] * 3


def test_a_phase_that_does_not_end_stops_the_wait_after_its_polls():
    pauses: list[float] = []
    pace = Pace(1000.0, timer=timer_of(2000))
    assert not pace.wait(pause=pauses.append)
    assert len(pauses) == WAIT_POLLS


def test_the_process_pace_is_seeded_once_and_a_faster_index_lowers_it(monkeypatch):
    monkeypatch.setattr(pace_module, "_process_pace", None)
    first = process_pace(40_000.0)
    assert first.best_ns == 40_000
    assert process_pace(38_000.0) is first and first.best_ns == 38_000
    assert process_pace(0.0).best_ns == 38_000  # no index: nothing changes


def test_reference_check_reports_a_slow_phase_as_a_slow_reference():
    pace = Pace(1000.0, timer=timer_of(1100, 1500))
    assert reference_check(pace) == Disturbance(references=1, reference_ns=1100)
    assert reference_check(pace) == Disturbance(references=1, reference_ns=1500, slow_references=1)


def test_a_stall_score_is_in_units_of_the_factor_over_the_fastest():
    fine = [CallCosts([1.0], [], calls=10)]
    slow = Disturbance(references=1, reference_ns=1.5 * 1000, slow_references=1)
    assert stall(Disturbance(references=1, reference_ns=900), slow, fine, 1000.0) == (
        1.5 / SLOW_FACTOR
    )


# -- settled_pass: which stalls it waits out ------------------------------------------------


def run_settled(answers: list[Disturbance]):
    """settled_pass over an instant target with injected checks (in turn) and pace."""
    pauses: list[float] = []
    checks = iter(answers)

    def target() -> None:
        pass

    kept = settled_pass(
        target,
        [PySite(target)],
        {},
        budget=Budget(min_runs=5, seconds=0.0, max_seconds=2.0, warmup=False),
        switches=None,
        calibration=Calibration(machine_speed_ns=1000.0),
        check=lambda pace: next(checks),
        pace=Pace(1000.0, timer=timer_of(1000)),
        pause=pauses.append,
        attempts=3,
        retry_under=60.0,
    )
    return kept, pauses


NORMAL = Disturbance(references=1, reference_ns=1000)
SLOW = Disturbance(references=1, reference_ns=1600, slow_references=1)


def test_after_a_slow_phase_the_next_attempt_waits_for_the_pace():
    kept, pauses = run_settled([NORMAL, SLOW, NORMAL, NORMAL])
    assert pauses == [POLL_SECONDS]  # the injected timer is back at pace on the first poll
    seen = kept.seen
    assert (seen.remeasured_passes, seen.stalled_passes, seen.slow_references) == (1, 0, 1)


def test_a_phase_that_outlasts_every_attempt_is_kept_and_warned_about():
    kept, pauses = run_settled([SLOW] * 6)
    seen = kept.seen
    assert (seen.passes, seen.remeasured_passes, seen.stalled_passes) == (1, 2, 1)
    assert len(pauses) == 2
    (warning,) = busy_warnings(seen)
    assert f"6 of 6 reference timings ran more than {SLOW_FACTOR:g}x slower" in warning
    assert "1 of 1 timing passes still ran on a stalled machine" in warning
