"""``apiprof merge``: combine databases from different runs or machines by addition."""

from __future__ import annotations

from pathlib import Path

import sqlite_utils

from apiprof.db.schema import open_db
from apiprof.db.store import (
    ADD_BUCKETS_SQL,
    ADD_EDGES_SQL,
    ADD_SUB_BUCKETS_SQL,
    recompute_growth,
)


def merge_into(target: sqlite_utils.Database, source_path: str | Path) -> dict[str, int]:
    """Add every profile of ``source_path`` into ``target``; returns rows read per table.

    Buckets and call edges add; descriptive rows (entry points, scenarios, environments) are
    copied when missing; scans are appended with new ids; coverage keeps the better status
    ("profiled" wins over any failure).
    """
    source = open_db(source_path, readonly=True)  # validates that it is an apiprof file
    source.conn.close()
    counts: dict[str, int] = {}
    conn = target.conn
    conn.execute("ATTACH DATABASE ? AS src", [f"file:{Path(source_path)}?mode=ro"])
    try:
        with conn:
            for table in ("environments", "entry_points", "aliases", "scenarios", "packages"):
                counts[table] = conn.execute(
                    f"INSERT OR IGNORE INTO main.{table} SELECT * FROM src.{table}"
                ).rowcount
            scan_ids = {}
            for row in conn.execute(
                "SELECT id, package, started_at, finished_at, status, environment_id, calibration, options FROM src.scans"
            ).fetchall():
                cur = conn.execute(
                    "INSERT INTO main.scans (package, started_at, finished_at, status, environment_id, calibration, options) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    row[1:],
                )
                scan_ids[row[0]] = cur.lastrowid
            counts["scans"] = len(scan_ids)
            rows = conn.execute(
                "SELECT qualname, metric, scenario_id, size, environment_id, bucket, count, sum, sum_sq FROM src.buckets"
            ).fetchall()
            conn.executemany(ADD_BUCKETS_SQL, rows)
            counts["buckets"] = len(rows)
            has_subs = conn.execute(
                "SELECT 1 FROM src.sqlite_master WHERE type = 'table' AND name = 'sub_buckets'"
            ).fetchone()
            sub_rows = (
                conn.execute(
                    "SELECT qualname, metric, scenario_id, size, environment_id, bucket, sub, count, sum, sum_sq "
                    "FROM src.sub_buckets"
                ).fetchall()
                if has_subs
                else []
            )
            conn.executemany(ADD_SUB_BUCKETS_SQL, sub_rows)
            counts["sub_buckets"] = len(sub_rows)
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
            touched = [
                r[0]
                for r in conn.execute("SELECT DISTINCT qualname FROM src.buckets WHERE size != -1")
            ]
            recompute_growth(target, touched)
    finally:
        conn.execute("DETACH DATABASE src")
    return counts


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
