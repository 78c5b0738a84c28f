"""Sampled traces: interning, the sampler, the Python API and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_trace_file import synthetic_recording

from apiprof.errors import TraceFileError, UsageError
from apiprof.tracing.record import Recorder, split_python_command, trace_command
from apiprof.tracing.recording import Recording
from apiprof.tracing.sampler import Sampler
from apiprof.tracing.stacks import EMPTY_STACK, Frame, StackTable
from apiprof.tracing.window import (
    parse_time,
    short_file,
    summarize,
    window_report,
)

FIXTURES = Path(__file__).parent / "fixtures"
PROGRAM = FIXTURES / "traced_program.py"
APIPROF = [sys.executable, "-m", "apiprof.cli"]

MAIN = Frame("main", "app.py", 1)
PARSE, RENDER = Frame("parse", "app.py", 5), Frame("render", "app.py", 9)


def test_stacks_share_their_prefixes():
    table = StackTable()
    parse = table.intern([MAIN, PARSE])
    render = table.intern([MAIN, RENDER])
    assert table.intern([MAIN, PARSE]) == parse
    assert len(table.stacks) == 1 + 3  # empty, main, main→parse, main→render
    assert table.stacks[parse][0] == table.stacks[render][0] == table.intern([MAIN])
    assert table.resolve(render) == (MAIN, RENDER)
    assert table.resolve(EMPTY_STACK) == ()


def test_live_stack_is_interned_outermost_first():
    table = StackTable()

    def outer():
        return inner()

    def inner():
        return table.intern_python(sys._getframe())

    frames = table.resolve(outer())
    assert [f.function for f in frames[-2:]] == [
        "test_live_stack_is_interned_outermost_first.<locals>.outer",
        "test_live_stack_is_interned_outermost_first.<locals>.inner",
    ]
    assert frames[-1].file == __file__


def blocked_in_known_place(ready: threading.Event, release: threading.Event) -> None:
    ready.set()
    release.wait()


def test_sampler_sees_every_thread_but_its_own():
    ready, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=blocked_in_known_place, args=(ready, release), name="blocked")
    thread.start()
    try:
        assert ready.wait(30)
        sampler = Sampler(lambda t, batch: None, interval=0.01)
        batch = sampler.sample()
    finally:
        release.set()
        thread.join()
    names = {sampler.threads.threads[number].name for number, _ in batch}
    assert {"MainThread", "blocked"} <= names
    leaves = {sampler.stacks.resolve(stack)[-1].function for _, stack in batch}
    assert "blocked_in_known_place" in {
        f.function for _, stack in batch for f in sampler.stacks.resolve(stack)
    }
    assert "Sampler.sample" in leaves  # this thread, caught looking
    assert "test_sampler_sees_every_thread_but_its_own" in {
        f.function for _, stack in batch for f in sampler.stacks.resolve(stack)
    }


def test_a_late_look_stands_for_the_intervals_it_missed():
    sampler = Sampler(lambda t, batch: None, interval=0.001)
    assert sampler.looks_owed(0) == 1  # the first look
    assert sampler.looks_owed(1_000_000) == 1  # on time
    assert sampler.looks_owed(5_200_000) == 4  # 4.2 intervals late: the GIL was busy
    assert sampler.looks_owed(5_300_000) == 1  # early looks count once
    assert sampler.looks_owed(10**15) == 10_000  # capped


def computes_then_sleeps(seconds: float) -> None:
    import time

    crunch(seconds)
    time.sleep(seconds)


@pytest.mark.slow
def test_busy_and_idle_phases_weigh_their_duration(tmp_path):
    """Looks come late while a thread computes; the report must not favour idle phases."""
    path = tmp_path / "phases.trace"
    with Recorder(path, interval=0.001):
        computes_then_sleeps(0.4)
    report = window_report(path, threads=["MainThread"])
    own = {row.frame.function: row.exclusive for row in report.by_exclusive}
    assert 0.4 < own["crunch"] / own["computes_then_sleeps"] < 2.5, own


def test_sampler_restores_the_switch_interval():
    before = sys.getswitchinterval()
    sampler = Sampler(lambda t, batch: None, interval=0.001)
    sampler.start()
    try:
        assert sys.getswitchinterval() == pytest.approx(0.001)
        sampler.interval = 0.05  # slower than the default: the default stays
        assert sys.getswitchinterval() == pytest.approx(before)
    finally:
        sampler.stop()
    assert sys.getswitchinterval() == before


def crunch(seconds: float) -> int:
    import time

    deadline, total = time.perf_counter() + seconds, 0
    while time.perf_counter() < deadline:
        total += 1
    return total


@pytest.mark.slow
def test_recorder_context_manager(tmp_path):
    path = tmp_path / "api.trace"
    with Recorder(path, interval=0.002) as recorder:
        crunch(0.3)
    summary = recorder.stop() if recorder.sampler else Recording(path).close() or None
    assert summary is None  # stopped by the with block
    report = window_report(path, threads=["MainThread"])  # not the suite's other threads
    assert report.samples > 5 and report.exact
    assert report.by_exclusive[0].frame.function == "crunch"
    with Recording(path) as recording:
        assert recording.meta["complete"] is True
        assert recording.meta["interval_ns"] == 2_000_000
        assert recording.meta["duration_ns"] >= 300_000_000
        assert "MainThread" in {t.name for t in recording.threads}
        stored = recording.conn.execute("SELECT COUNT(*) FROM trees").fetchone()[0]
    assert stored == 1  # built when the recording stopped, reused by the report


def test_a_full_disk_stops_the_recording_not_the_program(tmp_path, monkeypatch):
    from apiprof.tracing.recording import RecordingWriter

    def disk_full(self, stacks, threads):
        raise OSError(28, "No space left on device")

    recorder = Recorder(tmp_path / "full.trace", interval=0.001).start()
    monkeypatch.setattr(RecordingWriter, "due", lambda self: True)
    monkeypatch.setattr(RecordingWriter, "flush", disk_full)
    crunch(0.05)  # the program goes on
    with pytest.raises(TraceFileError, match=r"No space left on device.*another disk"):
        recorder.stop()


def test_recorder_refuses_misuse(tmp_path):
    recorder = Recorder(tmp_path / "x.trace")
    with pytest.raises(UsageError, match="not recording"):
        recorder.stop()
    with pytest.raises(UsageError, match=r"between 0\.1 ms and 10 s"):
        Recorder(tmp_path / "y.trace", interval=0)


# -- small pieces of the CLI -------------------------------------------------------------


def test_commands_are_split_into_interpreter_and_target():
    py = sys.executable
    assert split_python_command(["python3", "-X", "dev", "-u", "s.py", "a"]) == (
        ["python3", "-X", "dev", "-u"],
        ["s.py", "a"],
    )
    assert split_python_command(["python", "-m", "pkg.cli", "-v"]) == (
        ["python"],
        ["-m", "pkg.cli", "-v"],
    )
    assert split_python_command(["s.py", "x"]) == ([py], ["s.py", "x"])
    assert split_python_command([py, "-c", "pass"]) == ([py], ["-c", "pass"])
    for bad in ([], ["ls", "-l"], ["python"], ["python", "-m"], ["python", "-"]):
        with pytest.raises(UsageError):
            split_python_command(bad)


def test_times_are_read_with_units():
    assert parse_time("1.5") == 1_500_000_000
    assert parse_time("250ms") == 250_000_000
    assert parse_time("40us") == parse_time("40µs") == 40_000
    assert parse_time(".5s") == 500_000_000
    with pytest.raises(UsageError, match="250ms"):
        parse_time("soon")


def test_library_paths_are_shortened():
    assert short_file("/usr/lib/python3.12/threading.py") == "threading.py"
    assert short_file("/v/lib/python3.13t/site-packages/jedi/api.py") == "jedi/api.py"
    assert short_file("/somewhere/else.py") == "/somewhere/else.py"


def test_trace_command_runs_code_and_modules(tmp_path):
    code, summary = trace_command(
        [sys.executable, "-c", "import sys; sys.exit(4)"], tmp_path / "c.trace"
    )
    assert code == 4 and summary is not None and summary.path == (tmp_path / "c.trace").resolve()
    code, summary = trace_command(
        [sys.executable, "-m", "json.tool", "--help"], tmp_path / "m.trace", interval=0.005
    )
    assert code == 0 and summary is not None
    with Recording(summary.path) as recording:
        assert recording.meta["command"] == ["-m", "json.tool", "--help"]
        assert recording.meta["interval_ns"] == 5_000_000


def test_program_errors_read_as_python_prints_them(tmp_path):
    """The program's traceback starts at its own code; a missing script or module gets
    python's one line and exit code, not the launcher's frames."""
    script = tmp_path / "fails.py"
    script.write_text("def parse():\n    raise ValueError('bad input')\n\nparse()\n")
    for target, code, expected, absent in (
        ([str(script)], 1, "in parse\n    raise ValueError('bad input')", "launch.py"),
        ([str(tmp_path / "missing.py")], 2, ": [Errno 2] No such file", "Traceback"),
        (["-m", "no_such_module_here"], 1, ": No module named no_such_module_here", "Traceback"),
    ):
        run = subprocess.run(
            [*APIPROF, "trace", "-o", str(tmp_path / "e.trace"), "--", sys.executable, *target],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert run.returncode == code, run.stderr
        assert expected in run.stderr and absent not in run.stderr and "runpy" not in run.stderr


# -- the CLI end to end --------------------------------------------------------------------


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    path = tmp_path_factory.mktemp("cli") / "program.trace"
    run = subprocess.run(
        [*APIPROF, "trace", "-o", str(path), "--interval", "2ms", "--",
         sys.executable, str(PROGRAM), "0.4", "3"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return path, run


@pytest.mark.slow
def test_trace_runs_the_program_and_keeps_its_exit_code(traced):
    path, run = traced
    assert run.returncode == 3, run.stderr
    assert "done ['0.4', '3']" in run.stdout
    assert "samples of" in run.stderr and f"apiprof window {path}" in run.stderr


@pytest.mark.slow
def test_the_traced_program_does_not_see_numpy_loaded_by_the_recorder(tmp_path):
    """The time tree uses NumPy, but only once the program has ended: while it runs, the
    program's modules are its own (a program that checks for NumPy or measures its start-up
    must not see apiprof's)."""
    script = tmp_path / "looks.py"
    script.write_text("import sys\nprint('numpy loaded:', 'numpy' in sys.modules)\n")
    run = subprocess.run(
        [*APIPROF, "trace", "-o", str(tmp_path / "looks.trace"), "--", sys.executable, str(script)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "numpy loaded: False" in run.stdout


@pytest.mark.slow
def test_window_json_names_the_busy_function(traced):
    path, _ = traced
    run = subprocess.run(
        [*APIPROF, "window", str(path), "--json", "--top", "20"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    report = json.loads(run.stdout)
    assert report["exact"] and report["unattributed"] == 0
    assert report["samples"] > 20
    inclusive = {row["function"]: row["inclusive"] for row in report["functions_by_inclusive"]}
    assert inclusive["crunch_numbers"] > 0.5 * inclusive["main"]
    assert "wait_for_input" in inclusive  # the other thread is sampled too
    assert not any("apiprof" in row["file"] for row in report["functions_by_inclusive"])
    assert report["stacks"][0]["frames"][0]["function"] in ("<module>", "Thread._bootstrap")
    assert {row["thread"] for row in report["by_thread"]} == {"MainThread", "waiter"}
    assert {row["thread"] for row in report["stacks"]} <= {"MainThread", "waiter"}


@pytest.mark.slow
def test_window_of_one_thread(traced):
    path, _ = traced
    run = subprocess.run(
        [*APIPROF, "window", str(path), "--thread", "waiter", "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    report = json.loads(run.stdout)
    assert report["threads"] == ["waiter"]
    assert {row["thread"] for row in report["stacks"]} == {"waiter"}
    assert report["functions_by_exclusive"][0]["function"] in ("Condition.wait", "Event.wait")
    assert "crunch_numbers" not in {row["function"] for row in report["functions_by_inclusive"]}


@pytest.mark.slow
def test_window_text_for_part_of_the_trace(traced):
    path, _ = traced
    run = subprocess.run(
        [*APIPROF, "window", str(path), "--from", "100ms", "--to", "0.2", "--top", "3"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "window 0.100–0.200 s" in run.stdout
    assert "Exact: every sample in the window is counted" in run.stdout
    assert "crunch_numbers" in run.stdout


def test_window_errors_are_one_actionable_line(tmp_path):
    path = tmp_path / "s.trace"
    synthetic_recording(path, n=50)
    run = subprocess.run(
        [*APIPROF, "window", str(path), "--from", "2", "--to", "1"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 2 and "must end after it starts" in run.stderr
    run = subprocess.run(
        [*APIPROF, "window", str(tmp_path / "none.trace")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 3 and "apiprof trace -o" in run.stderr
    run = subprocess.run(
        [*APIPROF, "trace", "-o", str(tmp_path / "x.trace"), "--", "ls"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 2 and "Python interpreter" in run.stderr


def test_function_totals_count_each_sample_once_even_in_recursion():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    frames = [Frame(f"f{i}", "r.py", i) for i in range(4)]

    @settings(max_examples=100, deadline=None)
    @given(
        st.lists(
            st.tuples(st.lists(st.integers(0, 3), min_size=1, max_size=6), st.integers(1, 9)),
            max_size=12,
        )
    )
    def check(stack_counts):
        table = StackTable()
        counts: dict[int, int] = {}
        for path, count in stack_counts:
            stack = table.intern(frames[i] for i in path)
            counts[stack] = counts.get(stack, 0) + count
        summary = summarize(counts, table, top=10)
        by_inclusive, by_exclusive = summary.by_inclusive, summary.by_exclusive
        inclusive, exclusive = {}, {}
        for stack, count in counts.items():
            path = table.resolve(stack)
            for frame in set(path):
                inclusive[frame] = inclusive.get(frame, 0) + count
            exclusive[path[-1]] = exclusive.get(path[-1], 0) + count
        assert {r.frame: r.inclusive for r in by_inclusive} == inclusive
        assert {r.frame: r.exclusive for r in by_exclusive} == exclusive

    check()


def test_top_rows_are_the_largest_counts_ties_to_the_smaller_id():
    from hypothesis import given
    from hypothesis import strategies as st

    from apiprof.tracing.window import top_items

    @given(st.dictionaries(st.integers(0, 50), st.integers(1, 5)), st.integers(1, 6))
    def check(counts, top):
        expected = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
        assert top_items(counts, top) == expected

    check()
