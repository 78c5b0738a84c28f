"""Switched-out time, live: perf context-switch records, the rusage fallback, subtraction."""

from __future__ import annotations

import time

import groundtruth_pkg as gt
import pytest

from apiprof.engine.measure import switches
from apiprof.engine.measure.costs import measure_calls
from apiprof.engine.measure.passlog import Budget, PassLog
from apiprof.engine.measure.probes import PySite, Record
from apiprof.engine.measure.switches import Stretch
from apiprof.engine.measure.timing import run_timing_pass


def perf_or_skip() -> switches.PerfSwitches:
    try:
        return switches.PerfSwitches()
    except OSError as exc:
        pytest.skip(f"perf_event_open context-switch records are not allowed here: {exc}")


def test_perf_records_a_sleep_as_a_voluntary_switch():
    source = perf_or_skip()
    try:
        source.mark()
        started = time.perf_counter_ns()
        time.sleep(0.02)
        intervals, _ = source._recorder.read()
        slept = [(out, back) for out, back, preempted in intervals if not preempted]
        assert any(back - out >= 15_000_000 for out, back in slept)  # the sleep, ≥ 15 of 20 ms
        # timestamps are on the probes' clock (CLOCK_MONOTONIC = perf_counter_ns on Linux)
        assert all(started - 50_000_000 <= out <= time.perf_counter_ns() for out, _ in slept)
    finally:
        source.close()


def test_preempted_intervals_are_subtracted_from_the_calls_they_fall_in():
    """Fake clock: a call from 1000 to 2000 ns preempted 1200..1500 is 700 ns active; the call
    after it is untouched (the active-time arithmetic with the switched-out intervals of a live pass)."""
    log = PassLog([PySite(gt.leaf)], [Record()], [Record()], 1)
    log.enters[0] += [-1, 1000, -1, 3000]
    log.exits[0] += [2000, -1, 3400, -1]
    log.preempted = [(1200, 1500)]
    (costs,) = measure_calls(log, {}, {})
    assert costs.wall_ns == [700, 400]


class FakeSwitches:
    """Reports the first ``disturbed`` stretches as preempted (no intervals: rusage-like)."""

    mechanism = "fake"
    subtracts = False

    def __init__(self, disturbed: int) -> None:
        self.left = disturbed

    def mark(self) -> None:
        return None

    def stretch(self) -> Stretch:
        self.left -= 1
        return Stretch([], self.left >= 0)


def test_disturbed_stretches_are_measured_again():
    source = FakeSwitches(disturbed=2)
    budget = Budget(min_runs=5, seconds=0.0, max_seconds=30.0, warmup=False)
    log = run_timing_pass(lambda: gt.leaf(1), [PySite(gt.leaf)], budget=budget, switches=source)
    assert log.runs == 5
    assert len(log.enters[0]) // 2 == 5  # the discarded stretches left no records
    assert log.disturbed_runs == 2  # two stretches of one run each were discarded


def test_a_machine_that_stays_busy_keeps_its_numbers():
    """When every stretch is disturbed the pass stops discarding after half its cap."""
    source = FakeSwitches(disturbed=10**9)
    budget = Budget(min_runs=3, seconds=0.0, max_seconds=0.05, warmup=False)

    def slow_leaf():
        time.sleep(0.005)
        gt.leaf(1)

    log = run_timing_pass(slow_leaf, [PySite(gt.leaf)], budget=budget, switches=source)
    assert log.runs >= 1 and len(log.enters[0]) // 2 == log.runs
    assert log.disturbed_runs >= log.runs


def test_switch_mechanism_is_named():
    assert switches.switch_mechanism() in (switches.PERF, switches.RUSAGE, "")
    assert switches.open_switches("rusage").mechanism == switches.RUSAGE


@pytest.mark.slow
def test_the_busy_check_does_not_call_an_unchanged_machine_busy():
    """Right after other work a single timing of the reference workload reads about 1.7× the
    index (cold caches), which called every scan busy; the check times it warm. The median over
    many checks between bursts of other work stays well below that."""
    import json
    import statistics

    from apiprof.engine.measure.machine import machine_speed_ns, reference_check_ns

    cold = 1.5  # a cold single timing read about 1.7x; a warm check stays below this

    index = machine_speed_ns()
    ratios = []
    for _ in range(30):
        for _ in range(30):
            json.dumps({"a": list(range(300)), "b": "x" * 500})
        ratios.append(reference_check_ns() / index)
    assert statistics.median(ratios) < cold
