"""A timing pass the machine stalled is measured again instead of stored (engine/measure/settle).

The stall is injected: the reference check is a fake whose answers the test chooses, and the
measured function sleeps while the fake says the machine is stalled — so which attempt's calls
were kept shows in their times (milliseconds against microseconds), with no race of timers.
"""

from __future__ import annotations

import statistics
import time

from apiprof.engine.measure import settle as settle_module
from apiprof.engine.measure.clockgrain import wall_step
from apiprof.engine.measure.costs import CallCosts
from apiprof.engine.measure.pace import POLL_SECONDS, SLOW_FACTOR, Pace
from apiprof.engine.measure.passlog import Budget
from apiprof.engine.measure.probes import PySite
from apiprof.engine.measure.settle import (
    PASS_ATTEMPTS,
    STRETCH_FACTOR,
    settled_pass,
    slow_reference,
    stall,
)
from apiprof.engine.measure.timing import run_timing_pass
from apiprof.engine.scan.summary import busy_warnings
from apiprof.model.records import Calibration, Disturbance

INDEX_NS = 1000.0
CALIBRATION = Calibration(machine_speed_ns=INDEX_NS)
NORMAL = Disturbance(references=1, reference_ns=INDEX_NS)
SLOW = Disturbance(references=1, reference_ns=3 * INDEX_NS, slow_references=1)
STALL_SECONDS = 0.005

stalled = [False]
pauses: list[float] = []  # the waits settled_pass asked for (none really sleeps)


def target() -> None:
    """Free when the machine is fine; 5 ms per call while the test says it is stalled."""
    if stalled[0]:
        time.sleep(STALL_SECONDS)


def settle(check, attempts: int = PASS_ATTEMPTS, retry_under: float = 60.0):
    pauses.clear()
    return settled_pass(
        target,
        [PySite(target)],
        {},
        budget=Budget(min_runs=5, seconds=0.0, max_seconds=2.0, warmup=False),
        switches=None,
        calibration=CALIBRATION,
        check=check,
        pace=Pace(INDEX_NS, timer=lambda: INDEX_NS),  # the wait finds the pace back at once
        pause=pauses.append,
        attempts=attempts,
        retry_under=retry_under,
    )


def test_a_pass_the_machine_stalled_is_measured_again_and_not_stored():
    stalled[0] = True
    checks = []

    def check(pace: Pace) -> Disturbance:
        checks.append(pace)
        if len(checks) == 2:  # right after the first attempt: it ran on a stalled machine
            stalled[0] = False
            return SLOW
        return NORMAL

    kept = settle(check)
    (costs,) = kept.costs
    assert statistics.median(costs.wall_ns) < STALL_SECONDS * 1e9 / 5  # the second attempt's
    assert costs.calls >= 5
    seen = kept.seen
    assert (seen.passes, seen.remeasured_passes, seen.stalled_passes) == (1, 1, 0)
    assert (seen.references, seen.slow_references) == (4, 1)
    assert seen.runs >= 10  # both attempts' runs count as runs measured
    assert not seen.busy
    assert pauses == [POLL_SECONDS]  # it waited for the pace to return before measuring again


def test_a_clean_pass_is_measured_once():
    stalled[0] = False
    kept = settle(lambda pace: NORMAL)
    seen = kept.seen
    assert (seen.passes, seen.remeasured_passes, seen.stalled_passes) == (1, 0, 0)
    assert seen.references == 2  # before and after the pass
    assert pauses == []


def test_a_machine_that_stays_stalled_keeps_a_pass_and_warns():
    stalled[0] = False
    kept = settle(lambda pace: SLOW)
    seen = kept.seen
    assert (seen.passes, seen.remeasured_passes, seen.stalled_passes) == (1, PASS_ATTEMPTS - 1, 1)
    assert len(pauses) == PASS_ATTEMPTS - 1  # one wait before each new attempt
    assert kept.costs[0].wall_ns  # the figures are kept, counted as stalled
    assert seen.busy
    (warning,) = busy_warnings(seen)
    assert "1 of 1 timing passes still ran on a stalled machine" in warning


def test_a_long_pass_is_kept_stalled_without_a_second_attempt():
    stalled[0] = False
    kept = settle(lambda pace: SLOW, retry_under=0.0)  # every pass counts as long here
    seen = kept.seen
    assert (seen.passes, seen.remeasured_passes, seen.stalled_passes) == (1, 0, 1)


def test_the_least_stalled_attempt_is_kept():
    very_slow = Disturbance(references=1, reference_ns=4 * INDEX_NS, slow_references=1)
    # (answer, whether the machine is stalled from then on): each attempt has its own pair of
    # checks; attempt 2 ran fast, bracketed by a slow check (score 2); 1 and 3 stalled (2.67)
    answers = iter(
        [
            (NORMAL, True),
            (very_slow, False),
            (NORMAL, False),
            (SLOW, True),
            (NORMAL, True),
            (very_slow, False),
        ]
    )

    def check(pace: Pace) -> Disturbance:
        answer, stalled[0] = next(answers)
        return answer

    kept = settle(check, attempts=3)
    assert statistics.median(kept.costs[0].wall_ns) < STALL_SECONDS * 1e9 / 5  # attempt 2's
    seen = kept.seen
    assert (seen.remeasured_passes, seen.stalled_passes, seen.references) == (2, 1, 6)


def test_stall_scores():
    fine = [CallCosts([1.0], [], calls=10, preempted_calls=2)]
    assert stall(NORMAL, NORMAL, fine, INDEX_NS) == 0
    assert stall(NORMAL, SLOW, fine, INDEX_NS) == 3 / SLOW_FACTOR  # in units of the factor
    assert stall(SLOW, NORMAL, fine, 0.0) == 0  # no index calibrated: nothing is slow
    preempted = [CallCosts([1.0], [], calls=10, preempted_calls=5)]
    assert stall(NORMAL, NORMAL, preempted, INDEX_NS) == 2.0  # half the calls, twice the share


# -- a stall in the middle of a pass: each stretch judged by the reference calls around it ------


def test_a_stretch_the_cpu_ran_slow_in_is_measured_again():
    """The 3rd call of the pass stalls (it sleeps) until the reference batch after its stretch
    is judged, which the injected judge reports slow: that stretch (calls 2 and 3) is measured
    again, so the pass keeps only clean calls and counts the 2 runs."""
    made, judged = [0], []
    stalling = [False]

    def target() -> None:
        made[0] += 1
        if made[0] == 3:
            stalling[0] = True
        if stalling[0]:
            time.sleep(STALL_SECONDS)

    def judge(median_ns: float) -> bool:
        judged.append(median_ns)
        slow, stalling[0] = stalling[0], False
        return slow

    budget = Budget(min_runs=8, seconds=0.0, max_seconds=30.0, warmup=False)
    log = run_timing_pass(target, [PySite(target)], budget=budget, slow_reference=judge)
    assert log.stalled_runs == 2
    assert made[0] == log.runs + 2  # the stalled stretch left no records
    enters, exits = log.enters[0], log.exits[0]
    walls = [exits[k] - enters[k + 1] for k in range(0, len(exits), 2)]
    assert len(walls) == log.runs >= 8
    assert statistics.median(walls) < STALL_SECONDS * 1e9 / 5
    assert judged and all(0 < ns < 1e6 for ns in judged)  # medians of an empty call's intervals


def test_a_cpu_that_stays_slow_keeps_its_stretches_counted():
    budget = Budget(min_runs=4, seconds=0.0, max_seconds=0.05, warmup=False)

    def slow_target() -> None:
        time.sleep(0.005)

    log = run_timing_pass(
        slow_target, [PySite(slow_target)], budget=budget, slow_reference=lambda ns: True
    )
    assert log.runs >= 1 and len(log.enters[0]) // 2 == log.runs
    assert log.stalled_runs >= log.runs  # kept once half the cap went into measuring again
    seen = Disturbance(runs=log.runs, stalled_runs=log.stalled_runs)
    assert seen.busy
    (warning,) = busy_warnings(seen)
    assert f"{log.stalled_runs} ran while the CPU ran slow in the middle of a pass" in warning


def test_the_judge_compares_with_the_calibrated_empty_call():
    judge = slow_reference(Calibration(overhead_ns={"enter": 20.0, "dispatch": 10.0}))
    assert judge is not None
    limit = STRETCH_FACTOR * 30.0 + wall_step()
    assert not judge(limit) and judge(limit + 1)
    assert slow_reference(CALIBRATION) is None  # nothing calibrated: stretches are not judged


def test_a_scan_pass_judges_its_stretches(monkeypatch):
    """settled_pass hands the judge built from the calibration to the pass and counts what it
    found in the pass's disturbance."""
    judged: list[float] = []

    def judge(median_ns: float) -> bool:  # the first stretch's first batch ran slow
        judged.append(median_ns)
        return len(judged) == 1

    monkeypatch.setattr(settle_module, "slow_reference", lambda calibration: judge)
    stalled[0] = False
    kept = settle(lambda pace: NORMAL)
    assert kept.seen.stalled_runs == 1 and kept.costs[0].calls >= 5
