"""Scenarios that stop their worker (stuck in C code, a crash) are dropped, and the entry point's
other scenarios and smaller sizes still run, in a new worker (fixture ``stuck_pkg``)."""

from __future__ import annotations

import itertools
import math
import shutil
from pathlib import Path

import pytest

from apiprof.db.schema import open_db
from apiprof.engine import timeouts
from apiprof.engine.isolation.pool import Task, TaskResult
from apiprof.engine.isolation.protocol import EntryFinished, ProfileEntry, ScenarioOutcome
from apiprof.engine.isolation.rerun import MAX_RERUNS, rerun_task, stop_failures
from apiprof.engine.scan import ScanOptions, scan
from apiprof.engine.scenarios.consume import consume
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.engine.scenarios.stops import IDLE, Running, Stop, scenario_key, watching
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import (
    NO_SIZE,
    Coverage,
    EntryKind,
    EntryPoint,
    Failure,
    Phase,
    ScenarioSource,
)

FIXTURES = Path(__file__).parent / "fixtures"
STUCK = Failure(Coverage.TIMED_OUT, "did not answer the interrupt (C code)")


def spec(call: str = "1 / 0", sizes: tuple[int, ...] = (3, 6, 40)) -> ScenarioSpec:
    return ScenarioSpec(
        id="synth:pkg.f",
        qualname="pkg.f",
        source=ScenarioSource.SYNTHESIZED,
        description="",
        setup="",
        call=call,
        size_axis="n",
        sizes=sizes,
    )


def test_a_drain_of_slow_items_made_in_c_answers_the_time_limit():
    # one C loop over these would run for minutes; drained in chunks, the alarm gets in
    slow_items = map(math.factorial, itertools.repeat(4000))
    with pytest.raises(timeouts.CallTimeout), timeouts.alarm(0.2):
        consume(slow_items, 10**7)


def test_a_stop_covers_its_size_and_larger_ones_of_that_very_scenario():
    stop = Stop(scenario_key(spec()), "synth:pkg.f", 6)
    assert [stop.covers(scenario_key(spec()), n) for n in (3, 6, 40)] == [False, True, True]
    other_variant = scenario_key(spec(call="2 / 0"))
    assert not stop.covers(other_variant, 40)
    unsized = Stop("k", "s", NO_SIZE)
    assert unsized.covers("k", NO_SIZE) and not unsized.covers("k", 3)


def test_a_trial_that_stopped_a_worker_fails_at_once_and_others_are_announced():
    announced: list[Running] = []
    stop = Stop(scenario_key(spec()), "synth:pkg.f", 6, reason="a single call did not answer")
    with watching(announced.append, [stop]):
        failure, _ = try_scenario(spec(), 40, calls=1)  # would raise ZeroDivisionError if run
        assert failure is not None and failure.kind is Coverage.TIMED_OUT
        assert "stopped its worker at size 6 in a trial call" in failure.reason
        assert "(and its larger sizes) was dropped" in failure.reason
        assert not announced
        failure, _ = try_scenario(spec(), 3, calls=1)
    assert failure is not None and "ZeroDivisionError" in failure.reason
    # and once it is over, that nothing runs: a death while building the next is not its doing
    assert announced == [Running(scenario_key(spec()), "synth:pkg.f", 3, Phase.COLLECT), IDLE]


def entry_task(**changes) -> Task:
    entry = EntryPoint("pkg.f", "pkg", "pkg", EntryKind.FUNCTION)
    return Task("pkg.f", ProfileEntry("pkg", entry, **changes))


def test_a_task_whose_worker_died_in_a_scenario_runs_again_without_it():
    measured = ScenarioOutcome(spec(), 3)
    died = TaskResult(
        entry_task(),
        lost=STUCK,
        partials=[measured],
        running=Running(scenario_key(spec()), "synth:pkg.f", 6, Phase.CALL),
    )
    again = rerun_task(died)
    assert again is not None and isinstance(again.request, ProfileEntry)
    assert [(s.size, s.phase, s.kind) for s in again.request.stops] == [
        (6, Phase.CALL, Coverage.TIMED_OUT)
    ]
    assert [(r.key, r.size) for r in again.request.measured] == [(scenario_key(spec()), 3)]
    # what each worker sent is kept, once; the sizes dropped say why
    finished = TaskResult(again, EntryFinished(), partials=[ScenarioOutcome(spec(), 3)])
    whole = finished.after(died)
    assert len(whole.partials) == 2
    (dropped,) = stop_failures(whole)
    assert dropped.scenario == "synth:pkg.f" and "at size 6 in a measured call" in dropped.reason
    # no rerun for a finished task, a death outside any scenario, or past the limit
    assert rerun_task(finished) is None
    assert rerun_task(TaskResult(entry_task(), lost=STUCK)) is None
    stops = [Stop(str(n), "s") for n in range(MAX_RERUNS)]
    assert rerun_task(TaskResult(entry_task(stops=stops), lost=STUCK, running=died.running)) is None


@pytest.fixture(scope="module")
def stuck_scan(tmp_path_factory):
    home = tmp_path_factory.mktemp("stuck")
    home.chmod(0o755)  # readable by the sandbox's uid when tests run as root
    shutil.copytree(FIXTURES / "stuck_pkg", home / "stuck_pkg")
    options = ScanOptions(
        repeat=3,
        max_seconds=0.5,
        jobs=2,
        sizes=(3, 6, 40),
        call_timeout=1.0,
        python_path=(str(home),),
    )
    summary = scan("stuck_pkg", db_path=home / "stuck.db", options=options)
    db = open_db(home / "stuck.db", readonly=True)
    try:
        rows = db.execute("SELECT DISTINCT qualname, scenario_id, size FROM buckets").fetchall()
    finally:
        db.conn.close()
    sizes: dict[tuple[str, str], set[int]] = {}
    for qualname, scenario, size in rows:
        sizes.setdefault((qualname.removeprefix("stuck_pkg."), scenario), set()).add(size)
    return summary, sizes


@pytest.mark.slow
def test_calls_stuck_in_c_at_a_large_size_keep_the_entry_point_and_its_small_sizes(stuck_scan):
    summary, sizes = stuck_scan
    assert summary.not_profiled == [], summary.not_profiled
    # the synthesised list of 40 got stuck in a measured call (first_derangement) or while
    # its iterator was drained (derangements): sizes 3 and 6 stay
    for name in ("first_derangement", "derangements"):
        assert sizes[(name, f"synth:stuck_pkg.{name}")] == {3, 6}, sizes
    # the captured example resized to 40 got stuck in its trial: replayed at 3 and 6
    assert sizes[("first_derangement", "captured:stuck_pkg.first_derangement#1")] == {3, 6}
    # a huge iterator written in C is drained only in part, at every size
    assert sizes[("orders", "synth:stuck_pkg.orders")] == {3, 6, 40}
