"""profile(): the two-phase pipeline end to end on the ground-truth package."""

from __future__ import annotations

import json

import groundtruth_pkg as gt
import pytest

from apiprof.engine.measure.calibrate import calibrate
from apiprof.engine.measure.costs import PREEMPTED_SHARE
from apiprof.engine.measure.profiler import Target, profile
from apiprof.model.records import Calibration, Metric

TARGETS = [
    Target(f"gt.{name}", getattr(gt, name))
    for name in ("top", "mid", "leaf", "parent_alloc", "child_alloc")
]


def by_metric(report, metric):
    return {m.qualname: m.histogram for m in report.measurements if m.metric is metric}


@pytest.fixture(scope="module")
def report():
    return profile(
        lambda: (gt.top(), gt.parent_alloc()),
        TARGETS,
        scenario_id="gt:basic",
        size=7,
        repeat=3,
        time_budget=0.0,
    )


def test_every_target_that_ran_gets_all_metrics(report):
    names = {t.qualname for t in TARGETS}
    assert report.seen == names
    for metric in Metric:
        if metric not in (Metric.CONSUME_WALL, Metric.CONSUME_ALLOC):  # none returns an iterator
            assert set(by_metric(report, metric)) == names, metric
    assert all(m.scenario_id == "gt:basic" and m.size == 7 for m in report.measurements)
    assert by_metric(report, Metric.CALLS)["gt.leaf"].mean == gt.LEAF_CALLS
    # every call timed, but for the few a preemption hit (left out: costs.PREEMPTED_SHARE)
    timed = by_metric(report, Metric.WALL)["gt.leaf"].count
    assert 3 * gt.LEAF_CALLS * (1 - PREEMPTED_SHARE) <= timed <= 3 * gt.LEAF_CALLS


def test_groups_respect_the_costack_rule(report):
    stacked = [
        {"gt.top", "gt.mid"},
        {"gt.mid", "gt.leaf"},
        {"gt.top", "gt.leaf"},
        {"gt.parent_alloc", "gt.child_alloc"},
    ]
    for group in report.timing_groups:
        assert not any(pair <= set(group) for pair in stacked)
    assert len(report.timing_groups) == 3  # top/mid/leaf is a triangle


def test_edges_and_calibration_provenance(report):
    edges = {(e.caller, e.callee): e.count for e in report.edges}
    assert edges[("gt.mid", "gt.leaf")] == 3 * gt.LEAF_CALLS
    assert edges[("gt.top", "gt.mid")] == 3
    assert ("gt.top", "gt.leaf") not in edges  # nearest enclosing target only
    cal = report.calibration
    assert cal is calibrate() and cal.mechanism and cal.alloc_mechanism
    assert {"enter", "exit", "c_enter", "c_exit"} <= set(cal.overhead_ns)
    assert Calibration.from_json(json.loads(json.dumps(cal.to_json()))) == cal


def test_inclusive_time_contains_the_callees(report):
    wall = by_metric(report, Metric.WALL)
    assert wall["gt.mid"].percentile(50) > 1_000  # 1000 calls of leaf cannot take under 1 ns each
    alloc = by_metric(report, Metric.ALLOC_INCL)
    assert alloc["gt.parent_alloc"].mean > alloc["gt.child_alloc"].mean >= gt.CHILD_BYTES


def test_aliases_share_one_measurement_and_unseen_targets_are_absent():
    report = profile(
        gt.sibling_a,
        [
            Target("gt.sibling_a", gt.sibling_a),
            Target("gt.alias", gt.sibling_a),
            Target("gt.sibling_b", gt.sibling_b),
        ],
        scenario_id="s",
        repeat=2,
    )
    assert report.seen == {"gt.sibling_a", "gt.alias"}
    walls = by_metric(report, Metric.WALL)
    assert walls["gt.sibling_a"] is walls["gt.alias"]


def test_scenario_exceptions_propagate_without_leaks():
    def broken():
        gt.leaf()
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        profile(broken, [Target("gt.leaf", gt.leaf)], scenario_id="s")
    assert not any(type(c).__name__ == "ProbeId" for c in gt.leaf.__code__.co_consts)


def test_iterator_results_are_consumed_and_measured_as_such():
    """A generator function and a function returning an iterator cost almost nothing to call;
    the consumption metrics measure the call plus exhausting the result (allocation exact)."""

    def lazy_copies(n):
        return map(bytearray, [100] * n)

    report = profile(
        lambda: (list(gt.countdown(4)), list(lazy_copies(3))),
        [Target("gt.countdown", gt.countdown), Target("lazy_copies", lazy_copies)],
        scenario_id="gt:lazy",
        repeat=3,
        time_budget=0.0,
    )
    consumed = by_metric(report, Metric.CONSUME_ALLOC)
    header = bytearray(0).__sizeof__()
    # countdown(4) yields bytearrays of 400, 300, 200, 100 bytes (+ header + 1 each)
    assert consumed["gt.countdown"].percentile(0) >= 1000 + 4 * (header + 1)
    assert consumed["lazy_copies"].percentile(0) >= 3 * (100 + header + 1)
    assert by_metric(report, Metric.CONSUME_WALL)["lazy_copies"].count == 3
    assert lazy_copies.__code__.co_name == "lazy_copies"  # restored after the pass
    assert list(lazy_copies(2)) == [bytearray(100)] * 2


def test_plain_results_get_no_consumption_figures(report):
    assert not by_metric(report, Metric.CONSUME_WALL)
