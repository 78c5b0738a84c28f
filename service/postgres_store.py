"""The shared store: PostgreSQL through psycopg 3 and a connection pool, for a service that
outgrows one machine (several ``apiprof serve`` processes or hosts on one database).

The tables mirror the profile database's, with the same additive statements. A contribution is
one transaction: its batch id first (a second transaction with the same id waits on the unique
index and then finds it taken), then its rows, sorted by key so concurrent transactions lock
rows in one order; a deadlock or serialisation failure is retried. Aggregate reads run in a
repeatable-read transaction through a server-side cursor, so one snapshot streams in chunks.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
from psycopg import errors
from psycopg_pool import ConnectionPool, PoolTimeout

from apiprof.engine.collect.wire import AGGREGATE_TABLES
from apiprof.errors import DatabaseError
from apiprof.service.contribution import INSERT_BATCH_SQL, Contribution
from apiprof.service.store import (
    CHUNK_ROWS,
    StorageUnavailable,
    Store,
    TraceConflict,
    TraceInfo,
    sha256,
)

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS apiprof_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS packages (name TEXT PRIMARY KEY, version TEXT, last_scan BIGINT);
CREATE TABLE IF NOT EXISTS environments (
    id TEXT PRIMARY KEY, python TEXT, implementation TEXT, system TEXT, machine TEXT, cpu TEXT);
CREATE TABLE IF NOT EXISTS entry_points (
    qualname TEXT PRIMARY KEY, package TEXT, module TEXT, kind TEXT, signature TEXT,
    summary TEXT, source_file TEXT, source_line BIGINT);
CREATE TABLE IF NOT EXISTS aliases (alias TEXT PRIMARY KEY, qualname TEXT);
CREATE TABLE IF NOT EXISTS scenarios (
    id TEXT PRIMARY KEY, qualname TEXT, source TEXT, description TEXT, size_axis TEXT);
CREATE TABLE IF NOT EXISTS buckets (
    qualname TEXT NOT NULL, metric TEXT NOT NULL, scenario_id TEXT NOT NULL, size BIGINT NOT NULL,
    environment_id TEXT NOT NULL, bucket INTEGER NOT NULL, count BIGINT NOT NULL,
    sum DOUBLE PRECISION NOT NULL, sum_sq DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (qualname, metric, scenario_id, size, environment_id, bucket));
CREATE TABLE IF NOT EXISTS call_edges (
    caller TEXT NOT NULL, callee TEXT NOT NULL, count BIGINT NOT NULL,
    PRIMARY KEY (caller, callee));
CREATE TABLE IF NOT EXISTS coverage (
    qualname TEXT PRIMARY KEY, package TEXT, status TEXT, reason TEXT, scan_id BIGINT);
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY, received_at TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS collected_versions (
    package TEXT NOT NULL, version TEXT NOT NULL, batches BIGINT NOT NULL,
    PRIMARY KEY (package, version));
CREATE TABLE IF NOT EXISTS machine_speeds (
    environment_id TEXT NOT NULL, bucket INTEGER NOT NULL, count BIGINT NOT NULL,
    sum DOUBLE PRECISION NOT NULL, sum_sq DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (environment_id, bucket));
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT NOT NULL, filename TEXT NOT NULL, data BYTEA NOT NULL, sha256 TEXT NOT NULL,
    size BIGINT NOT NULL, received_at TEXT NOT NULL, PRIMARY KEY (trace_id, filename));
"""
_SCHEMA_LOCK = 0x61706970  # advisory lock id: two services starting at once create tables once
_RETRIES = 5
_SLICE = "mod(('x' || substr(md5({column}), 1, 8))::bit(32)::bigint, %s) = %s"
"""Same partition as :func:`apiprof.engine.collect.wire.slice_of`: MD5's first 32 bits."""


def postgres_sql(sql: str) -> str:
    """A statement written for SQLite's ``?`` parameters in psycopg's ``%s`` style."""
    return sql.replace("?", "%s")


class PostgresStore(Store):
    backend = "postgresql"

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        self.pool = ConnectionPool(
            url, min_size=1, max_size=pool_size, open=False, timeout=30.0, name="apiprof"
        )
        try:
            self.pool.open(wait=True, timeout=30.0)
        except PoolTimeout as exc:
            self.pool.close()
            raise DatabaseError(
                f"cannot connect to PostgreSQL at {_redacted(url)} within 30 s; check that the "
                "server runs and the URL (host, port, database, user, password) is right"
            ) from exc
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
            conn.execute(SCHEMA)
            row = conn.execute(
                "SELECT value FROM apiprof_meta WHERE key = 'schema_version'"
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO apiprof_meta (key, value) VALUES ('schema_version', %s)",
                    [str(SCHEMA_VERSION)],
                )
            elif int(row[0]) > SCHEMA_VERSION:
                raise DatabaseError(
                    f"this PostgreSQL database was set up by a newer apiprof (schema {row[0]}); "
                    "upgrade apiprof"
                )

    def add(self, contribution: Contribution) -> bool:
        for attempt in range(_RETRIES):
            try:
                with self.pool.connection() as conn:
                    return self._add(conn, contribution)
            except (errors.DeadlockDetected, errors.SerializationFailure):
                time.sleep(0.01 * 2**attempt)
            except (PoolTimeout, psycopg.OperationalError) as exc:
                raise StorageUnavailable(f"PostgreSQL is unavailable: {exc}") from exc
        raise StorageUnavailable("PostgreSQL kept aborting the transaction; retry later")

    @staticmethod
    def _add(conn: psycopg.Connection, contribution: Contribution) -> bool:
        with conn.transaction():
            cursor = conn.cursor()
            cursor.execute(postgres_sql(INSERT_BATCH_SQL), contribution.batch_row())
            if cursor.rowcount == 0:
                return False
            for sql, rows in contribution.steps:
                if rows:
                    cursor.executemany(postgres_sql(sql), rows)
        return True

    def aggregate(self, part: int | None, slices: int) -> Iterator[tuple[str, list[tuple]]]:
        with self.pool.connection() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            for table, columns, slice_column in AGGREGATE_TABLES:
                query, params = f"SELECT {', '.join(columns)} FROM {table}", []
                if part is not None and slice_column is not None:
                    query += " WHERE " + _SLICE.format(column=slice_column)
                    params = [slices, part]
                with conn.cursor(name=f"apiprof_{table}") as cursor:
                    cursor.itersize = CHUNK_ROWS
                    cursor.execute(query, params)
                    while rows := cursor.fetchmany(CHUNK_ROWS):
                        yield table, rows
            conn.rollback()

    def put_trace(self, trace_id: str, filename: str, data: bytes) -> bool:
        with self.pool.connection() as conn, conn.transaction():
            cursor = conn.execute(
                "INSERT INTO traces (trace_id, filename, data, sha256, size, received_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (trace_id, filename) DO NOTHING",
                [
                    trace_id,
                    filename,
                    data,
                    sha256(data),
                    len(data),
                    datetime.now(UTC).isoformat(timespec="seconds"),
                ],
            )
            if cursor.rowcount:
                return True
            row = conn.execute(
                "SELECT sha256 FROM traces WHERE trace_id = %s AND filename = %s",
                [trace_id, filename],
            ).fetchone()
        if row is None or row[0] != sha256(data):
            raise TraceConflict(f"{trace_id}/{filename} was stored before with different content")
        return False

    def traces(self) -> list[TraceInfo]:
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT trace_id, filename, size, sha256, received_at FROM traces "
                "ORDER BY trace_id, filename"
            ).fetchall()
        return [TraceInfo(*row) for row in rows]

    def trace(self, trace_id: str, filename: str) -> bytes | None:
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT data FROM traces WHERE trace_id = %s AND filename = %s",
                [trace_id, filename],
            ).fetchone()
        return bytes(row[0]) if row else None

    def close(self) -> None:
        self.pool.close()


def _redacted(url: str) -> str:
    """The URL without its password, for messages."""
    head, sep, tail = url.partition("@")
    if not sep or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, credentials = head.partition("//")
    return f"{scheme}//{credentials.split(':', 1)[0]}:***@{tail}"
