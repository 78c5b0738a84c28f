"""Cheap scenarios are timed in a plain loop of runs (engine/measure/batch.py)."""

from __future__ import annotations

import time

import groundtruth_pkg as gt

from apiprof.engine.measure import batch, profiler
from apiprof.model.records import Metric


def test_repeated_runs_the_scenario_that_many_times():
    seen = []
    batch.repeated(lambda: seen.append(1), 5)()
    assert len(seen) == 5


def test_an_expensive_scenario_is_not_batched_and_costs_one_run():
    runs = []

    def slow() -> None:
        runs.append(1)
        time.sleep(batch.CHEAP_NS / 1e9 * 5)  # at least 5x the threshold, however busy

    run_ns = batch.plain_run_ns(slow)
    assert run_ns >= batch.CHEAP_NS and batch.batch_times(run_ns) == 1
    assert len(runs) == 1


def test_timing_passes_of_a_cheap_scenario_run_batches(monkeypatch):
    """The batch the worker hands over times the target; the allocation pass and the counts of
    runs stay per scenario run."""
    monkeypatch.setattr(profiler, "batch_times", lambda run_ns: 4)
    asked, batches = [], []
    run_once = eval("lambda: gt.leaf(3)", {"gt": gt})

    def batcher(times: int):
        asked.append(times)
        runs = batch.repeated(run_once, times)

        def counted() -> None:
            batches.append(1)
            runs()

        return counted

    report = profiler.profile(
        run_once,
        [profiler.Target("leaf", gt.leaf)],
        scenario_id="batched",
        repeat=5,
        time_budget=0.0,
        consume=False,
        batch=batcher,
    )
    assert asked == [4]
    figures = {m.metric: m.histogram for m in report.measurements}
    assert figures[Metric.CALLS].median == 1  # calls per scenario run, from the allocation pass
    assert len(batches) >= 5  # the minimum runs count calls of the batch
    assert report.disturbance.runs % 4 == 0 and report.disturbance.runs >= 4 * 5
    # every batch times four calls (a quarter at most left out as preempted)
    assert figures[Metric.WALL].count >= 0.75 * 4 * 5
