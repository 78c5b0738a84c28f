"""The collection runtime on a user's machine: opt-in start-up hook, choice of APIs, caps,
budget, spool — and a host program that never notices anything went wrong."""

from __future__ import annotations

import errno
import json
import os
import random
import sys
from pathlib import Path

import pytest
from collecthelp import (
    make_reference,
)

from apiprof.engine.collect import spool
from apiprof.engine.collect.choose import (
    Candidate,
    ListedCandidates,
    ReferenceCandidates,
    draw,
    resolve,
)
from apiprof.engine.collect.collector import Collector
from apiprof.engine.collect.config import CollectConfig, config_problems, load_config
from apiprof.engine.collect.control import find_hook
from apiprof.engine.collect.home import default_home
from apiprof.engine.collect.paths import Layout
from apiprof.engine.collect.slots import acquire_slot, slots_in_use
from apiprof.engine.collect.upload import UploadError, send_with_retries
from apiprof.engine.collect.wire import Batch, parse_batch, slice_of
from apiprof.engine.measure.live import LiveCosts
from apiprof.model.records import EntryKind, Metric

HOOK_CHECK = "import sys; print('apiprof.engine.collect.bootstrap' in sys.modules)"


# -- settings ----------------------------------------------------------------------------------


def test_environment_overrides_the_file_and_bad_values_are_skipped(tmp_path):
    layout = Layout(tmp_path)
    layout.config.write_text(json.dumps({"rate": 0.2, "max_programs": 3, "colour": "red"}))
    env = {"APIPROF_COLLECT_RATE": "0.5", "APIPROF_COLLECT_BUDGET": "lots"}
    config = load_config(layout, env)
    assert (config.rate, config.max_programs, config.budget) == (0.5, 3, 0.01)
    problems = config_problems(layout, env)
    assert any("colour" in p for p in problems) and any(
        "APIPROF_COLLECT_BUDGET" in p for p in problems
    )


def test_apis_at_once_defaults_to_four_and_rate_one_means_everything():
    assert CollectConfig().apis_at_once == 4
    assert CollectConfig(rate=1.0).apis_at_once is None
    assert CollectConfig(rate=1.0, max_apis=2).apis_at_once == 2
    assert CollectConfig(max_apis=0).apis_at_once is None


@pytest.mark.parametrize("xdg", [True, False])
def test_the_start_up_hook_looks_where_apiprof_keeps_its_home(tmp_path, xdg):
    assert find_hook() is not None, "the installed package ships apiprof-collect.pth"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APIPROF_", "XDG_"))}
    env.update(HOME=str(tmp_path / "user"), APIPROF_COLLECT_BUDGET="1")
    if xdg:
        env["XDG_DATA_HOME"] = str(tmp_path / "data")
    flag = Path(default_home(env)) / "collect-enabled"
    assert str(flag).startswith(str(tmp_path))
    flag.parent.mkdir(parents=True)
    flag.touch()
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", HOOK_CHECK], env=env, capture_output=True, text=True, check=False
    )
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize(
    "flag, forced, expected",
    [(False, None, "False"), (True, None, "True"), (True, "0", "False"), (False, "1", "True")],
)
def test_the_hook_runs_only_when_collection_is_on(tmp_path, flag, forced, expected):
    data = tmp_path / "data"
    if flag:  # `apiprof collect enable` in the default home (no APIPROF_HOME)
        (data / "apiprof").mkdir(parents=True)
        (data / "apiprof" / "collect-enabled").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith("APIPROF_")}
    env.update(XDG_DATA_HOME=str(data), APIPROF_COLLECT_BUDGET="1")
    if forced is not None:
        env["APIPROF_COLLECT"] = forced
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", HOOK_CHECK], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.strip() == expected


# -- the batch format ----------------------------------------------------------------------------


def test_a_batch_survives_its_own_strict_reading():
    from apiprof.engine.collect.wire import ApiSample
    from apiprof.model.histogram import Histogram

    batch = Batch(
        "0" * 32,
        "3.12.1",
        "cpython",
        "Linux",
        "x86_64",
        1.5e6,
        (
            ApiSample(
                "json.dumps",
                "json",
                "function",
                "2.0.9",
                # the wire carries log2 buckets (sub-buckets stay on the machine)
                {
                    Metric.WALL: Histogram.from_buckets(
                        Histogram.of([0, 1, 2047.5, 2048, 9e9]).rows()
                    )
                },
            ),
        ),
    )
    again = parse_batch(batch.to_bytes())
    assert again == batch
    assert again.environment.cpu == ""
    assert {slice_of(f"m.f{i}", 8) for i in range(200)} == set(range(8))


# -- choosing APIs -------------------------------------------------------------------------------


def test_reference_candidates_are_python_entry_points_of_imported_modules(tmp_path):
    ref = make_reference(
        tmp_path / "ref.db",
        extra=[
            ("json.JSONEncoder", "json", EntryKind.CLASS),
            ("json.JSONEncoder.encode", "json", EntryKind.METHOD),
        ],
        edges=[
            ("json.dumps", "json.JSONEncoder.encode", 5),
            ("json.JSONEncoder.encode", "json.JSONEncoder.iterencode", 5),
        ],
    )
    source = ReferenceCandidates(ref)
    found = {c.qualname for c in source.for_modules(["json", "os"])}
    assert found == {"json.dumps", "json.loads", "json.JSONEncoder.encode"}  # no class, no os
    assert source.shares_stack("json.dumps", "json.JSONEncoder.encode")
    assert source.shares_stack("json.JSONEncoder.iterencode", "json.dumps")  # through encode
    assert not source.shares_stack("json.dumps", "json.loads")
    source.close()


def test_the_draw_takes_each_candidate_with_the_rate():
    candidates = [Candidate(f"m.f{i}", "m", "function") for i in range(4000)]
    drawn = draw(candidates, 0.05, random.Random(7))
    assert 140 <= len(drawn) <= 260
    assert draw(candidates, 1.0, random.Random(7)) == candidates
    assert draw(candidates, 0.0, random.Random(7)) == []


def test_listed_apis_resolve_to_the_objects_behind_them():
    listed = ListedCandidates(
        ["json.dumps", "json.JSONDecoder.decode", "textwrap.TextWrapper.wrap", "nope.f"]
    )
    found = listed.for_modules(["json", "textwrap"])
    assert [c.module for c in found] == ["json", "json", "textwrap"]
    kinds = {c.qualname: resolve(c)[1] for c in found}
    assert kinds == {
        "json.dumps": "function",
        "json.JSONDecoder.decode": "method",
        "textwrap.TextWrapper.wrap": "method",
    }
    assert resolve(Candidate("json.missing", "json", "function")) is None


class FakeProbes:
    """What the collector sees of live probes, with a hand-set call count."""

    def __init__(self) -> None:
        self.paused, self.watched, self.probe_cost_ns, self.n = False, {}, 1000.0, 0

    def watch(self, obj):
        handle = max(self.watched, default=0) + 1
        self.watched[handle] = obj
        return handle

    def unwatch(self, handle):
        del self.watched[handle]
        return LiveCosts()

    def calls(self):
        return self.n

    def pause(self):
        self.paused = True
        return {}

    def resume(self):
        self.paused = False

    def drain(self):
        return {}

    def close(self):
        pass


class Clock:
    """Wall time and the process's CPU time, set by hand."""

    def __init__(self) -> None:
        self.now = self.cpu = 0

    def perf_counter_ns(self) -> int:
        return self.now

    def process_time_ns(self) -> int:
        return self.cpu

    def thread_time_ns(self) -> int:
        return 0


def _collector(tmp_path, monkeypatch, source, **settings) -> tuple[Collector, Clock]:
    clock = Clock()
    monkeypatch.setattr("apiprof.engine.collect.collector.time", clock)
    config = CollectConfig(max_load=1000, **settings)
    collector = Collector(Layout(tmp_path), config, started_ns=0, main_thread_ns=0)
    collector.probes, collector.source = FakeProbes(), source  # type: ignore[assignment]
    collector.speed_ns = 1.0
    return collector, clock


def test_apis_sharing_a_stack_are_never_instrumented_together(tmp_path, monkeypatch):
    ref = make_reference(tmp_path / "ref.db", edges=[("json.dumps", "json.loads", 1)])
    collector, _ = _collector(tmp_path, monkeypatch, ReferenceCandidates(ref), rate=1.0, samples=10)
    collector.queue = [
        Candidate("json.dumps", "json", "function"),
        Candidate("json.loads", "json", "function"),
        Candidate("textwrap.wrap", "textwrap", "function"),
    ]
    collector._fill()
    assert {m.candidate.qualname for m in collector.active.values()} == {
        "json.dumps",
        "textwrap.wrap",
    }
    assert [c.qualname for c in collector.queue] == ["json.loads"]  # waits for dumps to retire
    for measured in collector.active.values():
        measured.samples = 10
    collector._retire()
    collector._fill()
    assert {m.candidate.qualname for m in collector.active.values()} == {"json.loads"}


def test_an_api_the_program_never_calls_gives_way_to_the_next_drawn(tmp_path, monkeypatch):
    collector, clock = _collector(tmp_path, monkeypatch, ListedCandidates([]), max_apis=1)
    never_called, called = (Candidate(f"json.{n}", "json", "function") for n in ("loads", "dumps"))
    collector.queue = [never_called, called]

    def tick_after(cpu_ns: int) -> set[str]:
        clock.cpu += cpu_ns
        collector._tick()
        return {m.candidate.qualname for m in collector.active.values()}

    assert tick_after(0) == {"json.loads"}
    assert tick_after(900_000_000) == {"json.loads"}  # not yet a second of work without a call
    collector.probes.n = 10**9  # far over budget: probes off, and that time is not idle time
    assert tick_after(5_000_000_000) == {"json.loads"} and collector.probes.paused
    collector.probes.n = 0
    assert tick_after(100_000_000) == {"json.loads"}
    tick_after(200_000_000)  # 1.2 s of probed work without a call: its place goes to the next
    assert "json.loads" in collector.done
    assert tick_after(0) == {"json.dumps"}
    assert tick_after(30_000_000_000) == {"json.dumps"}  # nobody waits: it keeps its place


def test_past_the_budget_every_probe_goes_off_until_the_program_has_paid(tmp_path, monkeypatch):
    collector, clock = _collector(tmp_path, monkeypatch, ListedCandidates([]), budget=0.01)
    probes = collector.probes
    clock.now, clock.cpu = 3_000_000_000, 1_000_000_000  # a busy machine: 1 s of work in 3 s
    probes.n = 5_000  # × 1 µs = 5 ms spent, of 10 ms (1 % of the work, not of the wall time)
    delay = collector._tick()
    assert not probes.paused and delay > 0
    probes.n = 20_000  # 20 ms spent
    delay = collector._tick()
    assert probes.paused
    assert delay == pytest.approx(1.0, abs=0.05)  # until 2 s of the program's work pay for it
    clock.now, clock.cpu = 9_000_000_000, 1_900_000_000  # wall time alone pays for nothing
    collector._tick()
    assert probes.paused
    clock.cpu = 2_500_000_000
    collector._tick()
    assert not probes.paused


def test_a_busy_machine_and_taken_slots_mean_no_collection(tmp_path, monkeypatch):
    layout = Layout(tmp_path)
    monkeypatch.setattr("apiprof.engine.collect.collector._load_per_cpu", lambda: 5.0)
    busy = Collector(layout, CollectConfig(max_load=0.75, apis=("json.dumps",)), 0, 0)
    assert not busy.begin()
    assert busy.slot is None and busy.probes is None
    held = [acquire_slot(layout, 2) for _ in range(2)]
    assert acquire_slot(layout, 2) is None and slots_in_use(layout, 2) == 2
    full = Collector(
        layout, CollectConfig(max_load=1000, max_programs=2, apis=("json.dumps",)), 0, 0
    )
    assert not full.begin()
    assert full.probes is None
    for slot in held:
        slot.release()
    assert slots_in_use(layout, 2) == 0


# -- the spool -----------------------------------------------------------------------------------


def test_a_failed_write_leaves_no_trace_and_raises_nothing(tmp_path, monkeypatch):
    def full_disk(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spool.os, "write", full_disk)
    assert spool.write_atomic(tmp_path / "spool" / "b.json", b"{}") is None
    assert list((tmp_path / "spool").iterdir()) == []


def test_retries_back_off_and_give_up_with_the_spool_kept():
    answers = iter([OSError("refused"), (503, b'{"error": "busy"}'), (200, b"{}")])
    sleeps: list[float] = []

    def send():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert send_with_retries(send, attempts=3, backoff=1.0, sleep=sleeps.append) == (200, b"{}")
    # exponential back-off with ±50 % jitter: try n waits backoff × 2^n × [0.5, 1.5)
    assert len(sleeps) == 2 and 0.5 <= sleeps[0] < 1.5 and 1.0 <= sleeps[1] < 3.0
    with pytest.raises(UploadError, match="spool is kept"):
        send_with_retries(lambda: (503, b"{}"), attempts=2, backoff=0, sleep=lambda s: None)
    assert send_with_retries(lambda: (422, b"{}"), sleep=lambda s: None)[0] == 422  # not retried
