"""``apiprof merge``: combine databases from different runs or machines by addition."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from apiprof.db.schema import open_db
from apiprof.db.store import ADD_BUCKETS_SQL, ADD_EDGES_SQL, recompute_growth

SCAN_COLUMNS = (
    "package",
    "started_at",
    "finished_at",
    "status",
    "environment_id",
    "calibration",
    "options",
    "host",
    "machine_speed_ns",
)
"""The scan columns a merge copies (not the process id: the copy is not running anywhere)."""


@dataclass(frozen=True)
class MergedTask:
    """An input added under a task id: added at most once, and remembered with where it ran."""

    task_id: str
    package: str
    status: str
    worker: str = ""
    elapsed_seconds: float = 0.0
    details: Mapping[str, Any] = field(default_factory=dict)


def merged_tasks(db: sqlite_utils.Database) -> dict[str, dict[str, Any]]:
    """The tasks whose inputs this database already holds: task id -> their details."""
    rows = db.execute("SELECT task_id, details FROM merged_tasks")
    return {task_id: json.loads(details or "{}") for task_id, details in rows}


def merge_into(
    target: sqlite_utils.Database, source_path: str | Path, *, task: MergedTask | None = None
) -> dict[str, int]:
    """Add every profile of ``source_path`` into ``target``; returns rows read per table.

    Buckets and call edges add; descriptive rows (entry points, scenarios, environments) are
    copied when missing; scans are appended with new ids; coverage keeps the better status
    ("profiled" wins over any failure). With ``task``, the task is recorded in the same
    transaction, and an input whose task id is already recorded adds nothing
    (``{"skipped": 1}``): a retried or resumed task is counted once.
    """
    source = open_db(source_path, readonly=True)  # validates that it is an apiprof file
    source.conn.close()
    counts: dict[str, int] = {}
    conn = target.conn
    conn.execute("ATTACH DATABASE ? AS src", [f"file:{Path(source_path)}?mode=ro"])
    try:
        with conn:
            if task is not None and _already_merged(conn, task):
                return {"skipped": 1}
            for table in ("environments", "entry_points", "aliases", "scenarios", "packages"):
                counts[table] = conn.execute(
                    f"INSERT OR IGNORE INTO main.{table} SELECT * FROM src.{table}"
                ).rowcount
            scan_ids = {}
            columns = [*SCAN_COLUMNS]
            present = {r[1] for r in conn.execute("PRAGMA src.table_info(scans)")}
            chosen = ", ".join(c if c in present else "NULL" for c in columns)  # older schemas
            placeholders = ", ".join("?" * len(columns))
            for row in conn.execute(f"SELECT id, {chosen} FROM src.scans").fetchall():
                cur = conn.execute(
                    f"INSERT INTO main.scans ({', '.join(columns)}) VALUES ({placeholders})",
                    row[1:],
                )
                scan_ids[row[0]] = cur.lastrowid
            counts["scans"] = len(scan_ids)
            rows = conn.execute(
                "SELECT qualname, metric, scenario_id, size, environment_id, bucket, count, sum, sum_sq FROM src.buckets"
            ).fetchall()
            conn.executemany(ADD_BUCKETS_SQL, rows)
            counts["buckets"] = len(rows)
            edges = conn.execute("SELECT caller, callee, count FROM src.call_edges").fetchall()
            conn.executemany(ADD_EDGES_SQL, edges)
            counts["call_edges"] = len(edges)
            coverage = conn.execute(
                "SELECT qualname, package, status, reason, scan_id FROM src.coverage"
            ).fetchall()
            for qualname, package, status, reason, scan_id in coverage:
                conn.execute(
                    "INSERT INTO main.coverage (qualname, package, status, reason, scan_id) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (qualname) DO UPDATE SET status = excluded.status, reason = excluded.reason, "
                    "scan_id = excluded.scan_id WHERE main.coverage.status != 'profiled'",
                    [qualname, package, status, reason, scan_ids.get(scan_id)],
                )
            counts["coverage"] = len(coverage)
            counts["failures"] = _merge_failures(conn, scan_ids)
            touched = [
                r[0]
                for r in conn.execute("SELECT DISTINCT qualname FROM src.buckets WHERE size != -1")
            ]
            recompute_growth(target, touched)
            if task is not None:
                _record(conn, task, [i for i in scan_ids.values() if i is not None])
    finally:
        conn.execute("DETACH DATABASE src")
    return counts


def _merge_failures(conn: Any, scan_ids: dict[int, int | None]) -> int:
    """The failed attempts behind each verdict the merge took from the source (its coverage row
    now names the source's scan) replace the target's; returns the rows copied."""
    tables = {row[0] for row in conn.execute("SELECT name FROM src.sqlite_master")}
    if "failures" not in tables:  # a source from before failures were kept
        return 0
    rows = conn.execute(
        "SELECT qualname, position, scan_id, scenario_id, phase, kind, reason, location, "
        "traceback FROM src.failures ORDER BY qualname, position"
    ).fetchall()
    verdicts = dict(conn.execute("SELECT qualname, scan_id FROM main.coverage").fetchall())
    new_scans = {scan for scan in scan_ids.values() if scan is not None}
    replaced = [[name] for name, scan in verdicts.items() if scan in new_scans]
    conn.executemany("DELETE FROM main.failures WHERE qualname = ?", replaced)
    taken = [
        (row[0], row[1], scan_ids.get(row[2]), *row[3:])
        for row in rows
        if row[2] in scan_ids and verdicts.get(row[0]) == scan_ids[row[2]]
    ]
    conn.executemany(f"INSERT INTO main.failures VALUES ({', '.join('?' * 9)})", taken)
    return len(taken)


def _already_merged(conn: Any, task: MergedTask) -> bool:
    row = conn.execute("SELECT 1 FROM main.merged_tasks WHERE task_id = ?", [task.task_id])
    return row.fetchone() is not None


def _record(conn: Any, task: MergedTask, scan_ids: list[int]) -> None:
    details = json.dumps({**task.details, "scan_ids": scan_ids}, sort_keys=True)
    conn.execute(
        "INSERT INTO main.merged_tasks (task_id, package, status, worker, elapsed_seconds, "
        "details, merged_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            task.task_id,
            task.package,
            task.status,
            task.worker,
            task.elapsed_seconds,
            details,
            datetime.now(UTC).isoformat(timespec="seconds"),
        ],
    )


def merge_files(output: str | Path, inputs: list[str | Path]) -> dict[str, int]:
    """Create or extend ``output`` with the sum of ``inputs``."""
    target = open_db(output)
    totals: dict[str, int] = {}
    try:
        for path in inputs:
            for table, n in merge_into(target, path).items():
                totals[table] = totals.get(table, 0) + n
    finally:
        target.conn.close()
    return totals
