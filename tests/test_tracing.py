"""Sampled traces: interning, the sampler, the recording file, the Python API and the CLI."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from apiprof.errors import TraceFileError, UsageError
from apiprof.tracing.record import Recorder, split_python_command, trace_command
from apiprof.tracing.recording import FORMAT_VERSION, Marker, Recording, write_recording
from apiprof.tracing.sampler import Sampler, ThreadInfo
from apiprof.tracing.stacks import EMPTY_STACK, Frame, StackTable
from apiprof.tracing.timetree import MemoryTree, TreeShape, count_linearly, query
from apiprof.tracing.window import (
    parse_time,
    short_file,
    summarize,
    summarize_window,
    window_report,
)

FIXTURES = Path(__file__).parent / "fixtures"
PROGRAM = FIXTURES / "traced_program.py"
APIPROF = [sys.executable, "-m", "apiprof.cli"]

MAIN, WORKER = Frame("main", "app.py", 1), Frame("worker", "app.py", 20)
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


# -- the recording file ------------------------------------------------------------------


def synthetic_recording(path: Path, n: int = 5000, tree: TreeShape | None = None) -> list[int]:
    table = StackTable()
    choices = [table.intern(s) for s in ([MAIN], [MAIN, PARSE], [MAIN, RENDER], [WORKER])]
    times = [i * 1000 + (i % 3) for i in range(n)]
    samples = [(i % 2, choices[(i // 7 + i % 2 * 3) % 4]) for i in range(n)]
    write_recording(
        path,
        times=times,
        samples=samples,
        stacks=table,
        threads=[ThreadInfo(0, 11, 101, "MainThread"), ThreadInfo(1, 12, 102, "worker")],
        markers=[Marker("load", 0, 1_000_000, 3_000_000, 1_000_000)],
        meta={"interval_ns": 1000, "duration_ns": n * 1000},
        tree=tree,
    )
    return times


def test_stored_tree_answers_like_the_memory_tree(tmp_path):
    path = tmp_path / "s.trace"
    shape = TreeShape(leaf_size=64, fanout=3, keep_percent=100)
    synthetic_recording(path, tree=shape)
    with Recording(path) as recording:
        times, stacks, _ = recording.sample_arrays()
        memory = MemoryTree(times, stacks, shape, end=recording.duration_ns)
        stored = recording.tree(shape)
        for lo, hi in [(0, 5_000_000), (1_234_567, 2_345_678), (4_000_000, 9_000_000)]:
            answer = query(stored, lo, hi)
            assert answer.stacks == memory.window(lo, hi).stacks
            assert answer.stacks == count_linearly(times, stacks, lo, hi)
            assert answer.visits == memory.window(lo, hi).visits


def test_tree_is_built_on_first_use_and_stored(tmp_path):
    path = tmp_path / "s.trace"
    synthetic_recording(path, tree=None)
    shape = TreeShape(leaf_size=100, fanout=2, keep_percent=50)
    first = window_report(path, shape=shape)
    with Recording(path) as recording:
        assert recording.conn.execute("SELECT COUNT(*) FROM trees").fetchone()[0] == 1
        assert recording._find_tree(shape) is not None
    assert window_report(path, shape=shape) == first
    assert not first.exact and "Approximate" in first.accuracy()


def test_read_only_reader_builds_the_tree_in_memory(tmp_path):
    path = tmp_path / "s.trace"
    times = synthetic_recording(path, n=800, tree=None)
    shape = TreeShape(leaf_size=50, fanout=2)
    with Recording(path) as recording:
        tree = recording._memory_tree(shape)
        _, stacks, _ = recording.sample_arrays()
        assert query(tree, 100_000, 500_000).stacks == count_linearly(
            times, stacks, 100_000, 500_000
        )
        assert recording.conn.execute("SELECT COUNT(*) FROM trees").fetchone()[0] == 0


@pytest.mark.parametrize("keep_percent", [100, 60])
def test_tree_function_totals_equal_the_roll_up_of_its_counts(tmp_path, keep_percent):
    """The totals a report adds up from the tree's nodes are those of the stacks it counted
    (at P = 100 those of every sample in the window), in memory and through the file."""
    path = tmp_path / "s.trace"
    shape = TreeShape(leaf_size=64, fanout=2, keep_percent=keep_percent)
    times = synthetic_recording(path, tree=shape)
    with Recording(path) as recording:
        table, stored = recording.stacks, recording.tree(shape)
        _, stacks, _ = recording.sample_arrays()
        memory = MemoryTree(times, stacks, shape, end=recording.duration_ns, table=table)
        assert all(node.functions is not None for node in memory.walk() if not node.leaf)
        for lo, hi in [(0, 5_000_000), (1_234_567, 2_345_678), (0, 700_000), (10, 20)]:
            for answer in (query(stored, lo, hi, table), memory.window(lo, hi)):
                assert summarize_window(answer, table) == summarize(answer.stacks, table)
                if keep_percent == 100:
                    linear = count_linearly(times, stacks, lo, hi)
                    assert summarize_window(answer, table) == summarize(linear, table)


def downgrade_to_format_1(path: Path) -> None:
    """Make ``path`` a file as apiprof wrote it before function totals (trace format 1)."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("ALTER TABLE tree_nodes DROP COLUMN functions")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'format_version'")
        conn.execute("PRAGMA user_version = 1")
    conn.close()


def test_format_1_files_are_upgraded_when_writable(tmp_path):
    path = tmp_path / "old.trace"
    synthetic_recording(path, tree=TreeShape())
    expected = window_report(path, 1_000_000, 4_000_000)
    downgrade_to_format_1(path)
    with Recording(path) as recording:
        assert recording.version == FORMAT_VERSION == recording.meta["format_version"]
        assert recording.conn.execute("SELECT COUNT(*) FROM trees").fetchone()[0] == 0
    assert window_report(path, 1_000_000, 4_000_000) == expected  # the tree is rebuilt
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT_VERSION
    assert conn.execute("SELECT COUNT(*) FROM tree_nodes WHERE functions IS NOT NULL").fetchone()
    conn.close()


def test_format_1_files_that_cannot_be_written_are_read_as_they_are(tmp_path, monkeypatch):
    path = tmp_path / "old.trace"
    synthetic_recording(path, tree=TreeShape())
    expected = window_report(path, 1_000_000, 4_000_000)
    downgrade_to_format_1(path)
    before = path.read_bytes()
    monkeypatch.setattr(Recording, "_upgrade", lambda self: None)  # as on a read-only disk
    with Recording(path) as recording:
        assert recording.version == 1
        tree = recording.tree(TreeShape())
        assert all(tree.contents(node)[1] is None for node in tree.children(tree.root()))
        assert window_report(recording, 1_000_000, 4_000_000) == expected
    assert path.read_bytes() == before


def test_markers_and_threads_round_trip(tmp_path):
    path = tmp_path / "s.trace"
    synthetic_recording(path, n=10)
    with Recording(path) as recording:
        assert recording.markers == [Marker("load", 0, 1_000_000, 3_000_000, 1_000_000)]
        assert recording.markers[0].slow
        assert [t.name for t in recording.threads] == ["MainThread", "worker"]
        assert recording.stacks.resolve(recording.sample_arrays(0, 1)[1][0]) == (MAIN,)


def test_foreign_and_newer_files_are_refused(tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(TraceFileError, match="not an apiprof trace"):
        Recording(other)
    with pytest.raises(TraceFileError, match="not an apiprof trace; choose another"):
        Recorder(other).start()
    with pytest.raises(TraceFileError, match="not an apiprof trace; choose another"):
        trace_command([sys.executable, "-c", "pass"], other)
    assert other.exists() and sqlite3.connect(other).execute("SELECT * FROM t").fetchall() == []
    text = tmp_path / "notes.txt"
    text.write_text("not sqlite at all")
    with pytest.raises(TraceFileError, match="not an apiprof trace"):
        Recording(text)
    newer = tmp_path / "newer.trace"
    synthetic_recording(newer, n=10)
    conn = sqlite3.connect(newer)
    with conn:
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'format_version'", (str(FORMAT_VERSION + 1),)
        )
    conn.close()
    with pytest.raises(TraceFileError, match="newer apiprof"):
        Recording(newer)
    with pytest.raises(TraceFileError, match="no such trace file"):
        Recording(tmp_path / "missing.trace")


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

    from apiprof.tracing.window import summarize

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
