"""The delay tracker: settings, the watchdog on a fake clock, and real slow events.

The fake-clock tests drive :meth:`DelayTracker.tick` by hand, so nothing races a timer. The
real-time tests make the slow event 20× slower than its threshold and the fast ones thousands
of times faster, and only assert what that margin guarantees.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from apiprof.errors import SettingsError
from apiprof.tracing.delays import DelayTracker
from apiprof.tracing.recording import Recording
from apiprof.tracing.settings import (
    TrackerSettings,
    load_settings,
    merge_settings,
    read_settings,
)
from apiprof.tracing.window import window_report

MS = 1_000_000


# -- settings ---------------------------------------------------------------------------


def test_settings_file_is_read(tmp_path):
    path = tmp_path / "delays.toml"
    path.write_text(
        textwrap.dedent(
            """
            output_dir = "traces"
            interval_ms = 2
            hang_seconds = 0

            [events.completion]
            threshold_ms = 100
            trace_seconds = 4

            [events.hover]
            threshold_ms = 250.5

            [upload]
            url = "http://127.0.0.1:9/collect"
            token_env = "MY_TOKEN"
            retries = 2
            """
        )
    )
    settings = load_settings(path)
    assert settings.output_dir == tmp_path / "traces"
    assert settings.interval_ms == 2.0 and settings.hang_seconds == 0.0
    assert settings.events["completion"].threshold_ns == 100 * MS
    assert settings.events["completion"].trace_seconds == 4.0
    assert settings.events["hover"].trace_seconds == 3.0  # the default
    assert settings.upload.enabled and settings.upload.retries == 2
    assert settings.ring_seconds == TrackerSettings().ring_seconds


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"events": {"x": {"trace_seconds": 1}}}, "events.x.threshold_ms: missing"),
        ({"events": {"x": {"threshold_ms": "fast"}}}, "events.x.threshold_ms: expected a number"),
        ({"events": {"x": {"threshold_ms": 0}}}, "expected a positive number"),
        ({"events": {"x": {"threshold_ms": 5, "colour": 1}}}, "unknown setting colour"),
        ({"ring_secs": 1}, "unknown setting ring_secs (known: events, hang_seconds"),
        ({"hang_seconds": -1}, "hang_seconds: expected zero or more"),
        ({"ring_while_idle": "yes"}, "ring_while_idle: expected true or false"),
        ({"upload": {"url": "ftp://x"}}, "upload.url: expected an http"),
        ({"upload": {"retries": 1.5}}, "upload.retries: expected a whole number"),
        ({"events": []}, "events: expected a table"),
    ],
)
def test_settings_mistakes_name_their_key(data, message):
    with pytest.raises(SettingsError) as error:
        read_settings(data)
    assert message in str(error.value)


def test_settings_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[events.x\n")
    with pytest.raises(SettingsError, match=r"bad\.toml: not valid TOML"):
        load_settings(bad)
    bad.write_text("[events.x]\nthreshold_ms = -3\n")
    with pytest.raises(SettingsError, match=r"bad\.toml: events\.x\.threshold_ms"):
        load_settings(bad)
    with pytest.raises(SettingsError, match="no such settings file"):
        load_settings(tmp_path / "missing.toml")


def test_editor_options_override_file_settings_key_by_key():
    base = {"interval_ms": 5, "events": {"completion": {"threshold_ms": 100, "trace_seconds": 3}}}
    merged = merge_settings(
        base, {"events": {"completion": {"thresholdMs": 300}}, "ringSeconds": 1}
    )
    settings = read_settings(merged)
    assert settings.events["completion"].threshold_ms == 300
    assert settings.events["completion"].trace_seconds == 3
    assert settings.ring_seconds == 1 and settings.interval_ms == 5


# -- the watchdog on a fake clock -------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.ns = 10_000 * MS
        self.epoch = 1_700_000_000.0

    def __call__(self) -> int:
        return self.ns

    def wall(self) -> float:
        return self.epoch + self.ns / 1e9


def fake_settings(tmp_path: Path, **overrides) -> TrackerSettings:
    data = {
        "output_dir": str(tmp_path / "delays"),
        "interval_ms": 5,
        "ring_seconds": 0.05,
        "hang_seconds": 0,
        "min_minutes_between_traces": 0,
        "events": {
            "render": {"threshold_ms": 100, "trace_seconds": 0.2},
            "save": {"threshold_ms": 30, "trace_seconds": 0.1},
        },
    }
    return read_settings({**data, **overrides})


def busy_rendering(entered: threading.Event, release: threading.Event) -> None:
    entered.set()
    release.wait()


class Worker:
    """A thread that sits inside ``busy_rendering`` while a marked event runs on it."""

    def __init__(self, tracker: DelayTracker, event: str) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.done = threading.Event()
        self.tracker, self.event = tracker, event
        self.thread = threading.Thread(target=self._run, name="render-worker")

    def _run(self) -> None:
        with self.tracker.event(self.event):
            busy_rendering(self.entered, self.release)
        self.done.set()

    def __enter__(self) -> Worker:
        self.thread.start()
        assert self.entered.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(30)


def run_ticks(tracker: DelayTracker, clock: FakeClock, ms: float) -> None:
    """Advance the fake clock ``ms`` milliseconds, one watchdog tick per 5 ms."""
    for _ in range(round(ms / 5)):
        clock.ns += 5 * MS
        tracker.tick(clock.ns)


def trace_dirs(tmp_path: Path) -> list[Path]:
    root = tmp_path / "delays"
    return sorted(d for d in root.iterdir() if d.is_dir()) if root.exists() else []


def test_fast_events_produce_nothing(tmp_path):
    clock = FakeClock()
    tracker = DelayTracker(fake_settings(tmp_path), clock=clock, wall=clock.wall)
    for _ in range(50):
        mark = tracker.begin("render")
        clock.ns += 1 * MS
        tracker.end(mark)
        with tracker.event("save"):
            clock.ns += 1 * MS
        run_ticks(tracker, clock, 5)
    assert tracker.traces == [] and not tracker.recording
    assert trace_dirs(tmp_path) == [] and not (tmp_path / "delays" / "state.json").exists()


def test_slow_event_triggers_one_trace_of_the_configured_length(tmp_path):
    clock = FakeClock()
    seen = []
    tracker = DelayTracker(
        fake_settings(tmp_path), clock=clock, wall=clock.wall, on_trace=seen.append
    )
    with Worker(tracker, "render") as worker:
        run_ticks(tracker, clock, 100)  # at the threshold, not past it
        assert not tracker.recording
        run_ticks(tracker, clock, 5)
        assert tracker.recording
        trigger = clock.ns
        run_ticks(tracker, clock, 195)
        assert tracker.recording  # 0.2 s trace: 5 ms to go
        run_ticks(tracker, clock, 5)
        assert not tracker.recording
    assert worker.done.is_set()
    assert len(tracker.traces) == 1 and seen == tracker.traces
    files = tracker.traces[0]
    assert trace_dirs(tmp_path) == [files.directory]
    summary = json.loads(files.summary.read_text())
    assert summary["trigger"]["event"] == "render"
    assert summary["trigger"]["elapsed_ms_at_trigger"] == 105.0
    assert summary["trace"]["trace_seconds"] == summary["trace"]["configured_trace_seconds"] == 0.2
    assert summary["trace"]["pre_trigger_seconds"] == 0.05  # the ring: 50 ms
    assert summary["session_id"] == tracker.session_id
    assert summary["machine"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert summary["delays"][0]["event"] == "render"
    assert summary["delays"][0]["running_for_ms"] > 100
    with Recording(files.trace) as recording:
        times, _, _ = recording.sample_arrays()
        at = recording.meta["trigger"]["at_ns"]
        assert at == 105 * MS  # times count from the start of the slow event
        assert times[0] == 55 * MS  # the first sample of the 50 ms ring
        assert times[-1] - at == clock.ns - trigger == 200 * MS
        assert [m.event for m in recording.markers] == ["render"]
    assert files.thread == "render-worker"  # the event's thread, for the report command
    report = window_report(
        files.trace, *(round(x * 1e9) for x in files.window), threads=[files.thread]
    )
    functions = {row.frame.function for row in report.by_inclusive}
    assert "busy_rendering" in functions
    assert report.trigger is not None and "Delay trace: render" in report.render()


def test_only_the_first_exceedance_is_traced_even_after_a_restart(tmp_path):
    clock = FakeClock()
    tracker = DelayTracker(fake_settings(tmp_path), clock=clock, wall=clock.wall)
    with Worker(tracker, "render"):
        run_ticks(tracker, clock, 400)
    with Worker(tracker, "render"):
        run_ticks(tracker, clock, 400)
    assert len(tracker.traces) == 1 and tracker.suppressed["render"] == 1
    restarted = DelayTracker(fake_settings(tmp_path), clock=clock, wall=clock.wall)
    with Worker(restarted, "render"):
        run_ticks(restarted, clock, 400)
    assert restarted.traces == [] and restarted.suppressed["render"] == 1
    with Worker(restarted, "save"):  # another event is traced
        run_ticks(restarted, clock, 200)
    assert [t.event for t in restarted.traces] == ["save"]
    assert len(trace_dirs(tmp_path)) == 2


def test_traces_are_rate_limited_across_events(tmp_path):
    clock = FakeClock()
    settings = fake_settings(tmp_path, min_minutes_between_traces=10, retrace_after_days=1)
    tracker = DelayTracker(settings, clock=clock, wall=clock.wall)
    with Worker(tracker, "render"):
        run_ticks(tracker, clock, 400)
    with Worker(tracker, "save"):
        run_ticks(tracker, clock, 100)
    assert [t.event for t in tracker.traces] == ["render"] and tracker.suppressed["save"] == 1
    clock.epoch += 11 * 60  # past the rate limit
    with Worker(tracker, "save"):
        run_ticks(tracker, clock, 200)
    assert [t.event for t in tracker.traces] == ["render", "save"]
    clock.epoch += 2 * 86400  # past retrace_after_days: render is traced again
    with Worker(tracker, "render"):
        run_ticks(tracker, clock, 400)
    assert [t.event for t in tracker.traces] == ["render", "save", "render"]


def test_an_event_slower_than_its_threshold_between_two_ticks_is_caught(tmp_path):
    clock = FakeClock()
    tracker = DelayTracker(fake_settings(tmp_path), clock=clock, wall=clock.wall)
    mark = tracker.begin("save")
    clock.ns += 31 * MS  # past 30 ms, before any tick looked
    tracker.end(mark)
    tracker.tick(clock.ns)
    assert tracker.recording
    run_ticks(tracker, clock, 100)
    assert [t.event for t in tracker.traces] == ["save"]
    summary = json.loads(tracker.traces[0].summary.read_text())
    assert summary["delays"] == [
        {
            "event": "save",
            "thread": "MainThread",
            "start_s": summary["delays"][0]["start_s"],
            "duration_ms": 31.0,
            "running_for_ms": None,
            "threshold_ms": 30.0,
        }
    ]


def test_unknown_events_are_markers_that_never_trigger(tmp_path):
    clock = FakeClock()
    tracker = DelayTracker(fake_settings(tmp_path), clock=clock, wall=clock.wall)
    with tracker.event("not-configured"):
        run_ticks(tracker, clock, 500)
    assert tracker.traces == []


def test_closing_mid_trace_writes_what_was_recorded(tmp_path):
    clock = FakeClock()
    tracker = DelayTracker(fake_settings(tmp_path), clock=clock, wall=clock.wall)
    with Worker(tracker, "render"):
        run_ticks(tracker, clock, 150)
        assert tracker.recording
        tracker.close()
    summary = json.loads(tracker.traces[0].summary.read_text())
    assert summary["trace"]["cut_short"] is True
    assert summary["trace"]["trace_seconds"] < summary["trace"]["configured_trace_seconds"]


# -- real time ----------------------------------------------------------------------------


def slow_function_under_test(seconds: float) -> None:
    import time

    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


@pytest.mark.slow
def test_a_real_slow_event_yields_exactly_one_trace_naming_the_slow_function(tmp_path):
    settings = read_settings(
        {
            "output_dir": str(tmp_path / "delays"),
            "interval_ms": 2,
            "hang_seconds": 0,
            "events": {"request": {"threshold_ms": 50, "trace_seconds": 0.5}},
        }
    )
    fast_done = threading.Event()

    with DelayTracker(settings) as tracker:

        @tracker.mark("request")
        def fast_request() -> int:
            return sum(range(10))

        def many_fast_requests() -> None:  # from another thread at the same time
            for _ in range(2000):
                token = tracker.begin("request")
                tracker.end(token)
            fast_done.set()

        helper = threading.Thread(target=many_fast_requests)
        helper.start()
        for _ in range(2000):
            fast_request()
        with tracker.event("request"):
            slow_function_under_test(1.0)  # 20× the threshold, twice the trace length
        helper.join()
    assert fast_done.is_set()
    assert len(tracker.traces) == 1
    files = tracker.traces[0]
    summary = json.loads(files.summary.read_text())
    assert summary["trace"]["trace_seconds"] >= 0.5
    assert summary["trace"]["configured_trace_seconds"] == 0.5
    assert [d["event"] for d in summary["delays"]] == ["request"]
    assert files.thread == "MainThread"
    # the suite's other threads (event loops of earlier tests) are in the trace too
    report = window_report(
        files.trace, *(round(x * 1e9) for x in files.window), threads=[files.thread]
    )
    assert report.by_exclusive[0].frame.function == "slow_function_under_test"
    assert report.by_exclusive[0].exclusive > 0.5 * report.samples


HANG_PROGRAM = """
import ctypes, sys
from apiprof.tracing.delays import DelayTracker
from apiprof.tracing.settings import read_settings

settings = read_settings({
    "output_dir": sys.argv[1], "hang_seconds": 0.5, "interval_ms": 5,
    "events": {"compute": {"threshold_ms": 100, "trace_seconds": 0.2}},
})
libc = ctypes.PyDLL(None)  # PyDLL calls keep holding the GIL

def stuck_in_c_with_the_gil():
    libc.sleep(3)

with DelayTracker(settings) as tracker:
    with tracker.event("compute"):
        stuck_in_c_with_the_gil()
print(tracker.traces[0].trace)
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="libc sleep through ctypes.PyDLL(None)")
def test_a_hang_holding_the_gil_is_caught_by_the_fallback(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(HANG_PROGRAM)
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "delays")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    trace = Path(run.stdout.strip())
    summary = json.loads((trace.parent / "summary.json").read_text())
    assert len(summary["hangs"]) == 1
    assert "stuck_in_c_with_the_gil" in summary["hangs"][0]["dump"]
    report = window_report(trace)
    assert report.by_exclusive[0].frame.function == "stuck_in_c_with_the_gil"
    assert not list((tmp_path / "delays").glob(".hang-*"))  # the dump file is cleaned up
