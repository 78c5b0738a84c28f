"""``--tests``: the profiled runs in chunks of tests planned to fit the time left (the first
small, measuring how much slower profiling makes the tests), merged per entry point, and a
chunk cut off by the time limit keeping what its finished passes measured."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from suitehelp import run_printing_json
from suiteproject import ENTRY_POINTS, SUITE, installed_copy

from apiprof.engine.scenarios.suitechunks import (
    FIRST_CHUNK_SHARE,
    GUESSED_SLOWDOWN,
    ChunkPlanner,
    chunk_order,
    merge_edges,
    merge_measurements,
)
from apiprof.model.histogram import Histogram
from apiprof.model.records import CallEdge, Measurement, Metric


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    return installed_copy(tmp_path_factory)


def test_the_first_chunk_is_small_and_later_ones_are_sized_by_the_slowdown_they_measured():
    durations = {f"t{i}": 1.0 for i in range(200)}
    planner = ChunkPlanner(durations, deadline=time.monotonic() + 1000)
    pending = list(durations)
    first = planner.next_chunk(pending)
    # at the guessed slow-down, the first chunk takes a small share of the time left
    assert len(first) == int(1000 * FIRST_CHUNK_SHARE / GUESSED_SLOWDOWN)
    planner.record(first, profiled_seconds=10.0 * len(first))  # measured: 10x
    assert planner.slowdown() == pytest.approx(10.0)
    second = planner.next_chunk(pending)
    assert len(first) < len(second) <= 50  # half of what is left, at 10x: about 49 tests
    assert pending[0] == f"t{len(first) + len(second)}" and not planner.skipped


def test_a_test_that_cannot_fit_at_the_measured_slowdown_is_skipped_up_front():
    durations = {"quick": 1.0, "huge": 500.0, "other": 1.0}
    planner = ChunkPlanner(durations, deadline=time.monotonic() + 1000)
    planner.done = [(1.0, 20.0)]  # 20x measured
    pending = ["huge", "quick", "other"]
    assert planner.next_chunk(pending) == ["quick", "other"]
    assert planner.skipped == ["huge"] and planner.skipped_seconds() == 500.0


def test_a_test_over_the_chunk_share_that_fits_the_time_left_runs_alone():
    planner = ChunkPlanner({"long": 100.0, "short": 1.0}, deadline=time.monotonic() + 1000)
    pending = ["long", "short"]
    # 100 s x 60 is over the first chunk's share, but at the least slow-down (6x) it may fit
    assert planner.next_chunk(pending) == ["long"] and pending == ["short"]


def test_without_a_deadline_all_tests_are_one_chunk():
    planner = ChunkPlanner({"a": 5.0, "b": 9.0})
    pending = ["a", "b", "c"]
    assert planner.next_chunk(pending) == ["a", "b", "c"] and pending == []


def test_the_quickest_test_reaching_each_entry_point_comes_first():
    nodes = ["t::a", "t::b", "t::c", "t::d"]
    durations = {"t::a": 3.0, "t::b": 1.0, "t::c": 0.5, "t::d": 2.0}
    assert chunk_order(nodes, {"t::d", "t::c"}, durations) == ["t::c", "t::d", "t::a", "t::b"]


def test_the_chunks_measurements_merge_into_one_per_entry_point_and_metric():
    def m(metric: Metric, values: list[float], qualname: str = "pkg.f") -> Measurement:
        return Measurement(qualname, "tests:tests", metric, Histogram.of(values))

    merged = merge_measurements(
        [
            m(Metric.WALL, [100, 200]),
            m(Metric.CALLS, [3]),
            m(Metric.WALL, [300]),
            m(Metric.CALLS, [2]),
            m(Metric.CALLS, [7], "pkg.g"),
        ]
    )
    by_key = {(x.qualname, x.metric): x.histogram for x in merged}
    assert len(merged) == 3
    assert by_key["pkg.f", Metric.WALL].count == 3  # every call's time, of both chunks
    # calls per run: the chunks together are one run of the tests
    assert by_key["pkg.f", Metric.CALLS].count == 1 and by_key["pkg.f", Metric.CALLS].total == 5
    assert by_key["pkg.g", Metric.CALLS].total == 7
    edges = merge_edges([CallEdge("a", "b", 2), CallEdge("a", "b", 3), CallEdge("a", "c", 1)])
    assert sorted(edges, key=lambda e: e.callee) == [CallEdge("a", "b", 5), CallEdge("a", "c", 1)]


def test_a_profile_cut_off_keeps_what_its_finished_passes_measured():
    from apiprof.engine.measure import profiler

    def work(n: int) -> list[int]:
        return [i * i for i in range(n)]

    runs = []

    def run_once() -> None:
        runs.append(1)
        if len(runs) > 1:  # the timing pass's run: the deadline came
            raise TimeoutError("cut")
        work(100)

    report = profiler.ProfileReport()
    with pytest.raises(TimeoutError):
        profiler.profile(
            run_once,
            [profiler.Target("mod.work", work)],
            scenario_id="tests:t",
            repeat=1,
            time_budget=0.0,
            warmup=False,
            report=report,
        )
    metrics = {m.metric for m in report.measurements}
    assert Metric.ALLOC_INCL in metrics and Metric.CALLS in metrics  # the allocation pass
    assert Metric.WALL not in metrics  # its timing pass did not finish


WORKER = """
import json, sys
sys.path.insert(0, {installed!r})
from apiprof.engine.isolation.protocol import RunSuite
from apiprof.engine.isolation.worker import Worker
from apiprof.engine.measure import profiler
from apiprof.engine.scenarios import suitechunks, suitepasses
{patch}
worker = Worker(None, 512, send=lambda task_id, message: None)
reply = worker.handle(
    RunSuite("suite_pkg", {suite!r}, "tests:tests", {targets!r}, budget=600)
)
keys = [(m.qualname, str(m.metric)) for m in reply.measurements]
calls = {{m.qualname: m.histogram.total for m in reply.measurements if m.metric == "calls_per_run"}}
print(json.dumps({{
    "problem": reply.problem, "notes": reply.notes, "keys": keys, "calls": calls,
    "reached": sorted({{m.qualname for m in reply.measurements}}),
    "metrics": sorted({{str(m.metric) for m in reply.measurements}}),
    "passed": reply.outcomes["passed"],
}}))
"""


def run_worker(installed: Path, tmp_path: Path, patch: str) -> dict:
    script = WORKER.format(
        installed=str(installed), suite=str(SUITE), targets=ENTRY_POINTS, patch=patch
    )
    return run_printing_json(script, tmp_path)


def test_a_suite_profiled_in_chunks_of_one_test_gives_what_one_run_of_all_would(
    installed, tmp_path
):
    # every chunk as small as can be: one test each
    patch = "suitechunks.FIRST_CHUNK_SHARE = suitechunks.CHUNK_SHARE = 1e-12"
    found = run_worker(installed, tmp_path, patch)
    assert found["problem"] == "" and found["passed"] == 6
    assert sorted(found["reached"]) == ENTRY_POINTS
    assert len(found["keys"]) == len(set(map(tuple, found["keys"])))  # merged: one of each
    # parse_record: 3 calls in the ledger's test, 2 in the journal's — one run of both
    assert found["calls"]["suite_pkg.parse_record"] == 5
    assert any("ran the tests in 6 chunk(s)" in note for note in found["notes"])


def test_a_chunk_cut_off_after_its_allocation_pass_keeps_that_pass(installed, tmp_path):
    # the deadline comes as the first timing pass starts (deterministic, not a race of timers)
    patch = """
def late(*args, **kwargs):
    raise suitepasses.SuiteOutOfTime("the deadline passed during a run")
profiler.settled_pass = late
"""
    found = run_worker(installed, tmp_path, patch)
    assert found["problem"] == ""  # measurements kept: not "nothing of them was kept"
    assert sorted(found["reached"]) == ENTRY_POINTS
    assert "alloc_incl_bytes" in found["metrics"] and "wall_ns" not in found["metrics"]
    assert any(
        "chunk 1 was cut off by --tests-timeout after 1 complete run(s)" in note
        and "what its finished passes measured is kept" in note
        for note in found["notes"]
    )
