"""The embedded store: an apiprof profile database (same schema, migrations and additive
statements as every other), plus trace files in a data directory.

Writes are serialised by one lock on one connection (SQLite has a single writer anyway) and run
as ``BEGIN IMMEDIATE … COMMIT`` with ``synchronous = FULL``: an acknowledged batch is on disk.
Readers use their own read-only connections and see a WAL snapshot.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from apiprof.db.schema import open_db
from apiprof.db.store import refresh_derived
from apiprof.engine.collect.wire import AGGREGATE_TABLES, slice_of
from apiprof.service.contribution import INSERT_BATCH_SQL, Contribution, touched_qualnames
from apiprof.service.store import (
    CHUNK_ROWS,
    StorageUnavailable,
    Store,
    TraceConflict,
    TraceInfo,
    sha256,
)


class SqliteStore(Store):
    backend = "sqlite"

    def __init__(self, path: Path, data_dir: Path) -> None:
        self.path, self.data_dir = path, data_dir
        self.db = open_db(path)
        self.conn = self.db.conn
        self.conn.execute("PRAGMA synchronous = FULL")
        self.lock = threading.Lock()

    def add(self, contribution: Contribution) -> bool:
        try:
            return self._add(contribution)
        except sqlite3.OperationalError as exc:  # disk full, I/O error: nothing was committed
            raise StorageUnavailable(f"the database cannot be written ({exc})") from exc

    def _add(self, contribution: Contribution) -> bool:
        with self.lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute(INSERT_BATCH_SQL, contribution.batch_row()).rowcount == 0:
                    conn.rollback()
                    return False
                for sql, rows in contribution.steps:
                    conn.executemany(sql, rows)
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
            touched = touched_qualnames(contribution)
            if touched:
                refresh_derived(self.db, touched)  # derived data, its own transaction
                conn.commit()
            return True

    def aggregate(self, part: int | None, slices: int) -> Iterator[tuple[str, list[tuple]]]:
        reader = open_db(self.path, readonly=True).conn
        reader.create_function("apiprof_slice", 2, slice_of, deterministic=True)
        try:
            reader.execute("BEGIN")  # one snapshot for every table
            for table, columns, slice_column in AGGREGATE_TABLES:
                query, params = f"SELECT {', '.join(columns)} FROM {table}", []
                if part is not None and slice_column is not None:
                    query += f" WHERE apiprof_slice({slice_column}, ?) = ?"
                    params = [slices, part]
                cursor = reader.execute(query, params)
                while rows := cursor.fetchmany(CHUNK_ROWS):
                    yield table, rows
            reader.rollback()
        finally:
            reader.close()

    # -- traces: files under the data directory ------------------------------------------------
    def _trace_path(self, trace_id: str, filename: str) -> Path:
        return self.data_dir / "traces" / trace_id / filename

    def put_trace(self, trace_id: str, filename: str, data: bytes) -> bool:
        path = self._trace_path(trace_id, filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{filename}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, path)  # create-if-absent, atomically
        except FileExistsError:
            if sha256(path.read_bytes()) != sha256(data):
                raise TraceConflict(
                    f"{trace_id}/{filename} was stored before with different content"
                ) from None
            return False
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def traces(self) -> list[TraceInfo]:
        root = self.data_dir / "traces"
        found = []
        for path in sorted(root.glob("*/*")) if root.is_dir() else []:
            if path.name.startswith("."):
                continue
            data = path.read_bytes()
            stamp = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")
            found.append(TraceInfo(path.parent.name, path.name, len(data), sha256(data), stamp))
        return found

    def trace(self, trace_id: str, filename: str) -> bytes | None:
        try:
            return self._trace_path(trace_id, filename).read_bytes()
        except FileNotFoundError:
            return None

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()
