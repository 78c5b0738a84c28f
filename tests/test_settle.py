"""A timing pass the machine stalled is measured again instead of stored (engine/measure/settle).

The stall is injected: the reference check is a fake whose answers the test chooses, and the
measured function sleeps while the fake says the machine is stalled — so which attempt's calls
were kept shows in their times (milliseconds against microseconds), with no race of timers.
"""

from __future__ import annotations

import statistics
import time

from apiprof.engine.measure.costs import CallCosts
from apiprof.engine.measure.passlog import Budget
from apiprof.engine.measure.probes import PySite
from apiprof.engine.measure.settle import PASS_ATTEMPTS, settled_pass, stall
from apiprof.engine.scan.summary import busy_warnings
from apiprof.model.records import Calibration, Disturbance

INDEX_NS = 1000.0
CALIBRATION = Calibration(machine_speed_ns=INDEX_NS)
NORMAL = Disturbance(references=1, reference_ns=INDEX_NS)
SLOW = Disturbance(references=1, reference_ns=3 * INDEX_NS, slow_references=1)
STALL_SECONDS = 0.005

stalled = [False]


def target() -> None:
    """Free when the machine is fine; 5 ms per call while the test says it is stalled."""
    if stalled[0]:
        time.sleep(STALL_SECONDS)


def settle(check, attempts: int = PASS_ATTEMPTS, retry_under: float = 60.0):
    return settled_pass(
        target,
        [PySite(target)],
        {},
        budget=Budget(min_runs=5, seconds=0.0, max_seconds=2.0, warmup=False),
        switches=None,
        calibration=CALIBRATION,
        check=check,
        attempts=attempts,
        retry_under=retry_under,
    )


def test_a_pass_the_machine_stalled_is_measured_again_and_not_stored():
    stalled[0] = True
    checks = []

    def check(calibration: Calibration) -> Disturbance:
        checks.append(calibration)
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


def test_a_clean_pass_is_measured_once():
    stalled[0] = False
    kept = settle(lambda calibration: NORMAL)
    seen = kept.seen
    assert (seen.passes, seen.remeasured_passes, seen.stalled_passes) == (1, 0, 0)
    assert seen.references == 2  # before and after the pass


def test_a_machine_that_stays_stalled_keeps_a_pass_and_warns():
    stalled[0] = False
    kept = settle(lambda calibration: SLOW)
    seen = kept.seen
    assert (seen.passes, seen.remeasured_passes, seen.stalled_passes) == (1, PASS_ATTEMPTS - 1, 1)
    assert kept.costs[0].wall_ns  # the figures are kept, counted as stalled
    assert seen.busy
    (warning,) = busy_warnings(seen)
    assert "1 of 1 timing passes still ran on a stalled machine" in warning


def test_a_long_pass_is_kept_stalled_without_a_second_attempt():
    stalled[0] = False
    kept = settle(lambda calibration: SLOW, retry_under=0.0)  # every pass counts as long here
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

    def check(calibration: Calibration) -> Disturbance:
        answer, stalled[0] = next(answers)
        return answer

    kept = settle(check, attempts=3)
    assert statistics.median(kept.costs[0].wall_ns) < STALL_SECONDS * 1e9 / 5  # attempt 2's
    seen = kept.seen
    assert (seen.remeasured_passes, seen.stalled_passes, seen.references) == (2, 1, 6)


def test_stall_scores():
    fine = [CallCosts([1.0], [], calls=10, preempted_calls=2)]
    assert stall(NORMAL, NORMAL, fine, INDEX_NS) == 0
    assert stall(NORMAL, SLOW, fine, INDEX_NS) == 2.0  # 3x the index is 2x the busy factor
    assert stall(SLOW, NORMAL, fine, 0.0) == 0  # no index calibrated: nothing is slow
    preempted = [CallCosts([1.0], [], calls=10, preempted_calls=5)]
    assert stall(NORMAL, NORMAL, preempted, INDEX_NS) == 2.0  # half the calls, twice the share
