"""The recording file: samples, interned stacks, threads, markers and time trees in SQLite.

One file per trace, readable with any SQLite client. Times are nanoseconds since the
recording started; samples are numbered (``seq``) in time order, which is what lets a time
tree leaf name its samples by a ``seq`` range. The format has its own version
(``PRAGMA user_version`` and ``meta.format_version``): readers refuse files from a newer
apiprof and upgrade older ones in place when they can write them.

Format 2 added the function totals of inner tree nodes (``tree_nodes.functions``). Opening a
format 1 file that can be written upgrades it: the column is added and its trees, which lack
the totals, are dropped, to be rebuilt on the next report. A read-only format 1 file is read as
it is, its reports summing the window's stacks into function totals (slower, same numbers).

Tables::

    meta(key, value)                          JSON values: format, started_at, interval_ns, ...
    threads(id, ident, native_id, name)       id = the thread's number in samples
    frames(id, function, file, line)
    stacks(id, prefix, frame)                 prefix 0 = the empty stack
    samples(seq, t_ns, thread, stack)
    markers(id, event, thread, start_ns, end_ns, threshold_ns)   end_ns NULL: still running
    trees(id, leaf_size, fanout, keep_percent, samples, end_ns)
    tree_nodes(tree, id, parent, start_ns, end_ns, first_seq, stop_seq, kept, functions)
                                              kept NULL = leaf; else int64 LE stack ids then counts;
                                              functions: int64 LE frame ids, then their
                                              inclusive, then exclusive samples (kept stacks')
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apiprof.errors import TraceFileError
from apiprof.tracing.sampler import ThreadInfo
from apiprof.tracing.stacks import Frame, StackTable
from apiprof.tracing.storedtree import StoredTree, store_tree
from apiprof.tracing.timetree import DEFAULT_SHAPE, TreeShape, int_array

FORMAT = "apiprof-trace"
FORMAT_VERSION = 2

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE threads (
    id INTEGER PRIMARY KEY, ident INTEGER NOT NULL, native_id INTEGER, name TEXT NOT NULL);
CREATE TABLE frames (
    id INTEGER PRIMARY KEY, function TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL);
CREATE TABLE stacks (id INTEGER PRIMARY KEY, prefix INTEGER NOT NULL, frame INTEGER NOT NULL);
CREATE TABLE samples (
    seq INTEGER PRIMARY KEY, t_ns INTEGER NOT NULL, thread INTEGER NOT NULL,
    stack INTEGER NOT NULL);
CREATE TABLE markers (
    id INTEGER PRIMARY KEY, event TEXT NOT NULL, thread INTEGER NOT NULL,
    start_ns INTEGER NOT NULL, end_ns INTEGER, threshold_ns INTEGER);
CREATE TABLE trees (
    id INTEGER PRIMARY KEY, leaf_size INTEGER NOT NULL, fanout INTEGER NOT NULL,
    keep_percent REAL NOT NULL, samples INTEGER NOT NULL, end_ns INTEGER NOT NULL,
    UNIQUE (leaf_size, fanout, keep_percent));
CREATE TABLE tree_nodes (
    tree INTEGER NOT NULL, id INTEGER NOT NULL, parent INTEGER NOT NULL,
    start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
    first_seq INTEGER NOT NULL, stop_seq INTEGER NOT NULL, kept BLOB, functions BLOB,
    PRIMARY KEY (tree, id)) WITHOUT ROWID;
CREATE INDEX tree_children ON tree_nodes (tree, parent, start_ns);
CREATE INDEX markers_start ON markers (start_ns);
"""

FLUSH_ROWS = 20_000
FLUSH_SECONDS = 1.0


@dataclass(frozen=True)
class Marker:
    """One occurrence of an event of interest on a thread, from its start to its end."""

    event: str
    thread: int
    start_ns: int
    end_ns: int | None  # None: still running when the recording ended
    threshold_ns: int | None = None

    @property
    def duration_ns(self) -> int | None:
        return None if self.end_ns is None else self.end_ns - self.start_ns

    @property
    def slow(self) -> bool:
        """Longer than its threshold (a marker without one is never slow)."""
        return (
            self.threshold_ns is not None
            and self.duration_ns is not None
            and self.duration_ns > self.threshold_ns
        )


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")  # a trace lost to a power cut can be re-recorded
    return conn


class RecordingWriter:
    """Writes one recording file: samples as they arrive, the rest when it is finished.

    The file is usable (by ``apiprof window``) even if the process dies mid-recording: every
    flush writes the new frames, stacks and threads along with the samples that use them.
    """

    def __init__(self, path: str | Path, meta: Mapping[str, Any]) -> None:
        self.path = Path(path)
        refuse_foreign_file(self.path)
        self.path.unlink(missing_ok=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = _connect(self.path)
        with self.conn:
            self.conn.execute("BEGIN")
            self.conn.executescript(_SCHEMA)
            self.conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
            self._set_meta(
                {"format": FORMAT, "format_version": FORMAT_VERSION, "complete": False, **meta}
            )
        self.samples = 0
        self._rows: list[tuple[int, int, int, int]] = []
        self._frames_written = 0
        self._stacks_written = 1  # stack 0, the empty stack, is implicit
        self._threads_written = 0
        self._last_flush = time.monotonic()

    def add_tick(self, t_ns: int, batch: Sequence[tuple[int, int]]) -> None:
        seq = self.samples
        self._rows.extend((seq + i, t_ns, thread, stack) for i, (thread, stack) in enumerate(batch))
        self.samples += len(batch)

    def due(self) -> bool:
        """Whether enough has accumulated to be worth a flush."""
        return len(self._rows) >= FLUSH_ROWS or time.monotonic() - self._last_flush >= FLUSH_SECONDS

    def flush(self, stacks: StackTable, threads: Sequence[ThreadInfo]) -> None:
        with self.conn:
            self.conn.execute("BEGIN")
            self._write_tables(stacks, threads)
            self.conn.executemany("INSERT INTO samples VALUES (?, ?, ?, ?)", self._rows)
        self._rows.clear()
        self._last_flush = time.monotonic()

    def add_markers(self, markers: Iterable[Marker]) -> None:
        with self.conn:
            self.conn.execute("BEGIN")
            self.conn.executemany(
                "INSERT INTO markers (event, thread, start_ns, end_ns, threshold_ns)"
                " VALUES (?, ?, ?, ?, ?)",
                [(m.event, m.thread, m.start_ns, m.end_ns, m.threshold_ns) for m in markers],
            )

    def finish(
        self,
        stacks: StackTable,
        threads: Sequence[ThreadInfo],
        meta: Mapping[str, Any],
        tree: TreeShape | None = DEFAULT_SHAPE,
    ) -> Path:
        """Write what is left, mark the file complete and (optionally) build its time tree."""
        self.flush(stacks, threads)
        with self.conn:
            self.conn.execute("BEGIN")
            self._set_meta({**meta, "samples": self.samples, "complete": True})
        self.conn.close()
        if tree is not None:
            with Recording(self.path, writable=True) as recording:
                recording.tree(tree)
        return self.path

    def close(self) -> None:
        self.conn.close()

    def _write_tables(self, stacks: StackTable, threads: Sequence[ThreadInfo]) -> None:
        new_frames = stacks.frames[self._frames_written :]
        self.conn.executemany(
            "INSERT INTO frames VALUES (?, ?, ?, ?)",
            [
                (self._frames_written + i, f.function, f.file, f.line)
                for i, f in enumerate(new_frames)
            ],
        )
        self._frames_written += len(new_frames)
        new_stacks = stacks.stacks[self._stacks_written :]
        self.conn.executemany(
            "INSERT INTO stacks VALUES (?, ?, ?)",
            [(self._stacks_written + i, p, f) for i, (p, f) in enumerate(new_stacks)],
        )
        self._stacks_written += len(new_stacks)
        new_threads = threads[self._threads_written :]
        self.conn.executemany(
            "INSERT INTO threads VALUES (?, ?, ?, ?)",
            [(t.number, t.ident, t.native_id, t.name) for t in new_threads],
        )
        self._threads_written += len(new_threads)

    def _set_meta(self, meta: Mapping[str, Any]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [(key, json.dumps(value)) for key, value in meta.items()],
        )


def refuse_foreign_file(path: Path) -> None:
    """Overwriting an old trace is fine; overwriting anything else is a typo's price."""
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        Recording(path).close()
    except TraceFileError as exc:
        raise TraceFileError(
            f"{path} exists and is not an apiprof trace; choose another output file"
        ) from exc


def write_recording(
    path: str | Path,
    *,
    times: Sequence[int],
    samples: Sequence[tuple[int, int]],
    stacks: StackTable,
    threads: Sequence[ThreadInfo],
    markers: Iterable[Marker] = (),
    meta: Mapping[str, Any],
    tree: TreeShape | None = DEFAULT_SHAPE,
) -> Path:
    """Write a whole recording at once (``samples[i]`` = (thread, stack) taken at ``times[i]``)."""
    writer = RecordingWriter(path, meta)
    try:
        for t, sample in zip(times, samples, strict=True):
            writer.add_tick(t, (sample,))
            if writer.due():
                writer.flush(stacks, threads)
        writer.add_markers(markers)
    except BaseException:
        writer.close()
        raise
    return writer.finish(stacks, threads, {}, tree)


class Recording:
    """A recording file opened for reading (and for adding time trees when writable)."""

    def __init__(self, path: str | Path, *, writable: bool = False) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise TraceFileError(
                f"{self.path}: no such trace file (record one with `apiprof trace -o {self.path} -- python script.py`)"
            )
        uri = self.path.resolve().as_uri() + ("" if writable else "?mode=ro")
        try:
            self.conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self.meta = {
                key: json.loads(value) for key, value in self.conn.execute("SELECT * FROM meta")
            }
        except sqlite3.DatabaseError as exc:
            raise TraceFileError(f"{self.path} is not an apiprof trace ({exc})") from exc
        if self.meta.get("format") != FORMAT:
            self.conn.close()
            raise TraceFileError(f"{self.path} is not an apiprof trace (no trace metadata)")
        version = self.meta.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            self.conn.close()
            raise TraceFileError(
                f"{self.path} was written by a newer apiprof (trace format {version}, this one reads"
                f" up to {FORMAT_VERSION}); upgrade apiprof to read it"
            )
        self.writable = writable
        self._stacks: StackTable | None = None
        self.version = version
        if version < FORMAT_VERSION:
            self._upgrade()

    def _upgrade(self) -> None:
        """Bring a format 1 file to format 2 if it can be written; else read it as format 1."""
        writer = sqlite3.connect(self.path, isolation_level=None)
        try:
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("ALTER TABLE tree_nodes ADD COLUMN functions BLOB")
            writer.execute("DELETE FROM tree_nodes")  # trees without totals: rebuilt on use
            writer.execute("DELETE FROM trees")
            writer.execute(
                "INSERT OR REPLACE INTO meta VALUES ('format_version', ?)", (FORMAT_VERSION,)
            )
            writer.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
            writer.execute("COMMIT")
        except sqlite3.OperationalError:  # read-only file or directory, or locked: read as is
            return
        finally:
            writer.close()
        self.version = self.meta["format_version"] = FORMAT_VERSION

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    # -- contents ---------------------------------------------------------------------------
    @property
    def sample_count(self) -> int:
        row = self.conn.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM samples").fetchone()
        return int(row[0])

    @property
    def duration_ns(self) -> int:
        """The recording's length: its stated duration, or just past its last sample."""
        row = self.conn.execute("SELECT t_ns FROM samples ORDER BY seq DESC LIMIT 1").fetchone()
        last = -1 if row is None else int(row[0])
        return max(int(self.meta.get("duration_ns") or 0), last + 1)

    @property
    def interval_ns(self) -> int:
        return int(self.meta.get("interval_ns") or 0)

    @property
    def stacks(self) -> StackTable:
        if self._stacks is None:
            frames = [
                Frame(function, file, line)
                for function, file, line in self.conn.execute(
                    "SELECT function, file, line FROM frames ORDER BY id"
                )
            ]
            stacks = self.conn.execute("SELECT prefix, frame FROM stacks ORDER BY id").fetchall()
            self._stacks = StackTable(frames, stacks)
        return self._stacks

    @property
    def threads(self) -> list[ThreadInfo]:
        return [
            ThreadInfo(*row)
            for row in self.conn.execute(
                "SELECT id, ident, native_id, name FROM threads ORDER BY id"
            )
        ]

    @property
    def markers(self) -> list[Marker]:
        return [
            Marker(*row)
            for row in self.conn.execute(
                "SELECT event, thread, start_ns, end_ns, threshold_ns FROM markers ORDER BY start_ns, id"
            )
        ]

    def sample_arrays(
        self, first: int = 0, stop: int | None = None
    ) -> tuple[array[int], array[int], array[int]]:
        """Times, stack ids and thread numbers of samples ``[first, stop)`` (by ``seq``)."""
        times, stacks, threads = int_array(), int_array(), int_array()
        for t, thread, stack in self._sample_rows(first, stop):
            times.append(t)
            threads.append(thread)
            stacks.append(stack)
        return times, stacks, threads

    def _sample_rows(self, first: int, stop: int | None) -> Iterator[tuple[int, int, int]]:
        return self.conn.execute(
            "SELECT t_ns, thread, stack FROM samples WHERE seq >= ? AND seq < ? ORDER BY seq",
            (first, sys.maxsize if stop is None else stop),
        )

    # -- time trees -------------------------------------------------------------------------
    def tree(self, shape: TreeShape = DEFAULT_SHAPE) -> StoredTree:
        """The time tree of this shape: stored in the file, built (and stored) on first use.

        A read-only file gets a tree built in memory for this reader only.
        """
        found = self._find_tree(shape)
        if found is not None:
            return found
        if not self.writable:
            try:
                with Recording(self.path, writable=True) as writer:
                    writer.tree(shape)
            except sqlite3.OperationalError:  # read-only file or directory
                return self._memory_tree(shape)
            found = self._find_tree(shape)
            assert found is not None
            return found
        return self._store_tree(shape)

    def _find_tree(self, shape: TreeShape) -> StoredTree | None:
        row = self.conn.execute(
            "SELECT id, samples, end_ns FROM trees"
            " WHERE leaf_size = ? AND fanout = ? AND keep_percent = ?",
            (shape.leaf_size, shape.fanout, shape.keep_percent),
        ).fetchone()
        if row is None or row[1] != self.sample_count:  # a tree of an unfinished recording
            return None
        return StoredTree(self.conn, row[0], shape, row[2], functions=self.version >= 2)

    def _store_tree(self, shape: TreeShape) -> StoredTree:
        times, stacks, _ = self.sample_arrays()
        return store_tree(self.conn, times, stacks, self.stacks, self.duration_ns, shape)

    def _memory_tree(self, shape: TreeShape) -> StoredTree:
        """Build the tree into a private in-memory database (the file is read-only)."""
        memory = sqlite3.connect(":memory:", check_same_thread=False)
        memory.executescript(_SCHEMA)
        times, stacks, threads = self.sample_arrays()
        memory.executemany(
            "INSERT INTO samples VALUES (?, ?, ?, ?)",
            zip(range(len(times)), times, threads, stacks, strict=True),
        )
        return store_tree(memory, times, stacks, self.stacks, self.duration_ns, shape)
