"""``apiprof sync``: a local mirror of the service's aggregate for the docs, the editor and
collection (the default reference).

The mirror is an ordinary profile database. Each call pulls either the whole aggregate or the
next few of N slices (APIs partitioned by a hash of their name, :func:`~apiprof.engine.collect.wire.slice_of`),
rotating, so a daily sync spreads the download; small tables come whole every time. What a
pull brings *replaces* what the mirror held for the same APIs (one transaction per pull, so an
interrupted download changes nothing), with growth fits and stored figures made again for them. A database
that holds scans of its own is refused: a mirror is not a place to scan into.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils

from apiprof.db.schema import open_db
from apiprof.db.store import refresh_derived
from apiprof.engine.collect.upload import ServiceConnection, UploadError
from apiprof.engine.collect.wire import AGGREGATE_FORMAT, AGGREGATE_TABLES, slice_of
from apiprof.errors import UsageError

STATE_KEY = "sync_state"
DERIVED_TABLES = ("growth", "slice_figures", "api_figures")
"""Tables made from the buckets, per API: cleared with their slice and made again by the pull."""


@dataclass
class SyncReport:
    server: str
    slices: list[int] = field(default_factory=list)  # slices pulled; [] for the whole aggregate
    of: int = 1
    rows: dict[str, int] = field(default_factory=dict)
    next_slice: int = 0


def _state(db: sqlite_utils.Database) -> dict:
    row = db.execute("SELECT value FROM meta WHERE key = ?", [STATE_KEY]).fetchone()
    try:
        data = json.loads(row[0]) if row else {}
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


def _check_mirror(db: sqlite_utils.Database, path: Path, server: str) -> None:
    scans = db.execute("SELECT COUNT(*) FROM scans").fetchone()[0]
    if scans:
        raise UsageError(
            f"{path} holds {scans} scan(s) of its own; sync into a separate mirror "
            "(--db PATH, default: reference.db in the apiprof home)"
        )
    known = _state(db).get("server")
    if known and known != server:
        raise UsageError(
            f"{path} mirrors {known}, not {server}; use another --db for a second service"
        )


def sync(
    server: str,
    path: Path,
    *,
    whole: bool = False,
    slices: int = 16,
    per_call: int = 2,
    token: str = "",
) -> SyncReport:
    """Pull the aggregate (or the next ``per_call`` of ``slices`` slices) into ``path``."""
    if slices < 1 or per_call < 1:
        raise UsageError("--slices and --per-call must be at least 1")
    path.parent.mkdir(parents=True, exist_ok=True)
    db = open_db(path)
    try:
        _check_mirror(db, path, server)
        state = _state(db)
        connection = ServiceConnection(server, token)
        report = SyncReport(server, of=slices)
        try:
            if whole or not state.get("complete") or state.get("slices") != slices:
                _pull(connection, db, None, slices, report)
                state = {"server": server, "complete": True, "slices": slices, "next": 0}
            else:
                start = int(state.get("next", 0)) % slices
                for offset in range(min(per_call, slices)):
                    part = (start + offset) % slices
                    _pull(connection, db, part, slices, report)
                    report.slices.append(part)
                state["next"] = (start + min(per_call, slices)) % slices
        finally:
            connection.close()
        report.next_slice = state["next"]
        with db.conn:
            db.conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [STATE_KEY, json.dumps(state)],
            )
        return report
    finally:
        db.conn.close()


def _stream(connection: ServiceConnection, part: int | None, slices: int) -> Iterator[dict]:
    query = "" if part is None else f"?slice={part}&slices={slices}"
    try:
        response = connection.stream(f"/v1/aggregate{query}")
    except OSError as exc:
        raise UploadError(f"cannot reach {connection.parts.geturl()}: {exc}") from exc
    try:
        if response.status != 200:
            raise UploadError(
                f"the service answered HTTP {response.status} to the sync: "
                f"{response.read()[:200].decode('utf-8', 'replace')}"
            )
        for raw in response:
            yield json.loads(raw)
    finally:
        response.close()
        connection.close()  # a streamed body may leave the connection mid-chunk


def _pull(
    connection: ServiceConnection,
    db: sqlite_utils.Database,
    part: int | None,
    slices: int,
    report: SyncReport,
) -> None:
    """One pull, applied in one transaction only once its stream arrived complete."""
    chunks: list[tuple[str, list[list]]] = []
    ended = False
    lines = _stream(connection, part, slices)
    header = next(lines, None)
    if not header or header.get("format") != AGGREGATE_FORMAT:
        raise UploadError(f"{connection.parts.geturl()} did not answer with an apiprof aggregate")
    for line in lines:
        if line.get("end"):
            ended = True
            break
        chunks.append((line["table"], line["rows"]))
    if not ended:
        raise UploadError("the aggregate download ended early; nothing was changed — sync again")
    columns = {table: cols for table, cols, _ in AGGREGATE_TABLES}
    conn = db.conn
    conn.create_function("apiprof_slice", 2, slice_of, deterministic=True)
    touched: set[str] = set()
    conn.execute("BEGIN IMMEDIATE")
    try:
        derived = [t for t in DERIVED_TABLES if t in db.table_names()]
        for table, slice_column in [(t, c) for t, _, c in AGGREGATE_TABLES] + [
            (t, "qualname") for t in derived
        ]:
            if part is None or slice_column is None:
                conn.execute(f"DELETE FROM {table}")
            else:  # growth fits and figures are derived: they go with their slice, made again below
                conn.execute(
                    f"DELETE FROM {table} WHERE apiprof_slice({slice_column}, ?) = ?",
                    [slices, part],
                )
        for table, rows in chunks:
            cols = columns[table]
            marks = ", ".join("?" * len(cols))
            conn.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})", rows)
            report.rows[table] = report.rows.get(table, 0) + len(rows)
            if table == "buckets":
                touched.update(row[0] for row in rows)
        refresh_derived(db, touched)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
