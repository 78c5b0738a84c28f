"""The recording file: the stored time tree, format upgrades, markers, refusing foreign files."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from apiprof.errors import TraceFileError
from apiprof.tracing.record import Recorder, trace_command
from apiprof.tracing.recording import FORMAT_VERSION, Marker, Recording, write_recording
from apiprof.tracing.sampler import ThreadInfo
from apiprof.tracing.stacks import Frame, StackTable
from apiprof.tracing.timetree import MemoryTree, TreeShape, count_linearly, query
from apiprof.tracing.window import (
    summarize,
    summarize_window,
    window_report,
)

MAIN, WORKER = Frame("main", "app.py", 1), Frame("worker", "app.py", 20)
PARSE, RENDER = Frame("parse", "app.py", 5), Frame("render", "app.py", 9)


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
