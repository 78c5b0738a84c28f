"""``apiprof merge``: combine databases from different runs or machines by addition.

An input is someone else's file: everything in it is checked before anything is added —
names must be Python names, histogram rows must be numbers real measurements can produce
(:mod:`apiprof.model.checks`), statuses and metrics must be known — and one bad row refuses the
whole input with the reason. An input whose scans (by their ``uid``, kept across merges) are
already in the output was merged before: adding it again would count its samples twice, so it
is refused unless ``allow_repeats``. The output itself is recognised by file identity (device
and inode), not by path, so a hard link or another spelling of it is refused too.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from apiprof.db.schema import immediate, open_db, usable_readonly_uri
from apiprof.db.store import (
    ADD_BUCKETS_SQL,
    ADD_EDGES_SQL,
    ADD_SPEEDS_SQL,
    ADD_SUB_BUCKETS_SQL,
    ADD_VERSIONS_SQL,
    refresh_derived,
)
from apiprof.errors import DatabaseError, UsageError
from apiprof.model.checks import (
    MAX_COUNT,
    bucket_row_problem,
    qualname_problem,
    scenario_id_problem,
    sub_bucket_row_problem,
)
from apiprof.model.records import Coverage, Metric

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
    "disturbance",
    "isolation",
    "uid",
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


class AlreadyMerged(UsageError):
    """The input's scans are already in the output."""


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file (device and inode), e.g. through a hard link."""
    try:
        first, second = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def merge_into(
    target: sqlite_utils.Database,
    source_path: str | Path,
    *,
    allow_repeats: bool = False,
    task: MergedTask | None = None,
) -> dict[str, int]:
    """Add every profile of ``source_path`` into ``target``; returns rows read per table.

    Buckets and call edges add; descriptive rows (entry points, scenarios, environments) are
    copied when missing; scans are appended with new ids (keeping their ``uid``); coverage keeps
    the better status ("profiled" wins over any failure). Nothing is added when the input holds
    a row that fails the checks, or (unless ``allow_repeats``) scans already merged.
    With ``task``, the task is recorded in the same transaction, and an input whose task id is
    already recorded adds nothing (``{"skipped": 1}``): a retried or resumed task is counted
    once.
    """
    source = open_db(source_path, readonly=True)  # validates that it is an apiprof file
    try:
        check_source(source, str(source_path))
    finally:
        source.conn.close()
    counts: dict[str, int] = {}
    conn = target.conn
    conn.execute("ATTACH DATABASE ? AS src", [usable_readonly_uri(source_path)])
    try:
        with immediate(target):
            if task is not None and _already_merged(conn, task):
                return {"skipped": 1}
            if not allow_repeats:
                refuse_repeats(conn, str(source_path))
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
            for table, sql in (
                ("collected_versions", ADD_VERSIONS_SQL),
                ("machine_speeds", ADD_SPEEDS_SQL),
            ):
                if not conn.execute(
                    "SELECT 1 FROM src.sqlite_master WHERE type = 'table' AND name = ?", [table]
                ).fetchone():
                    continue  # written before collection existed
                rows = conn.execute(f"SELECT * FROM src.{table}").fetchall()
                conn.executemany(sql, rows)
                counts[table] = len(rows)
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
            touched = [r[0] for r in conn.execute("SELECT DISTINCT qualname FROM src.buckets")]
            refresh_derived(target, touched)
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


def refuse_repeats(conn: sqlite3.Connection, source_path: str) -> None:
    """Refuse an input whose scans the output already holds (merged before)."""
    repeated = conn.execute(
        "SELECT COUNT(*), MIN(src.scans.package) FROM src.scans "
        "JOIN main.scans ON main.scans.uid = src.scans.uid WHERE src.scans.uid IS NOT NULL"
    ).fetchone()
    if repeated[0]:
        raise AlreadyMerged(
            f"{source_path}: {repeated[0]} of its scans (of {repeated[1]!r}) are already in the "
            "output — it was merged before, and adding it again would count its samples twice; "
            "pass --allow-repeats if that is what you want"
        )


def check_source(source: sqlite_utils.Database, path: str) -> None:
    """Refuse an input holding a row no honest apiprof could have written (the first one
    found is named); nothing is merged then."""
    problem = next(source_problems(source), "")
    if problem:
        raise DatabaseError(f"{path}: refused, nothing was merged: {problem}")


def source_problems(source: sqlite_utils.Database) -> Iterator[str]:
    statuses = {str(c) for c in Coverage}
    names = "SELECT qualname FROM entry_points UNION SELECT alias FROM aliases UNION SELECT qualname FROM scenarios"
    for (name,) in source.execute(names):
        if problem := qualname_problem(name):
            yield f"the name {problem}"
    for (scenario_id,) in source.execute("SELECT id FROM scenarios"):
        if problem := scenario_id_problem(scenario_id):
            yield problem
    for qualname, status in source.execute("SELECT qualname, status FROM coverage"):
        if problem := qualname_problem(qualname):
            yield f"a coverage row's name {problem}"
        if status not in statuses:
            yield f"the coverage status {str(status)[:40]!r} of {qualname} is unknown"
    if "failures" in source.table_names():  # the attempts behind a verdict (schema v7)
        for qualname, kind in source.execute("SELECT qualname, kind FROM failures"):
            if problem := qualname_problem(qualname):
                yield f"a failure row's name {problem}"
            if kind not in statuses:
                yield f"the failure kind {str(kind)[:40]!r} of {qualname} is unknown"
    rows = source.execute(
        "SELECT qualname, metric, scenario_id, size, bucket, 0, count, sum, sum_sq FROM buckets"
    )
    yield from _histogram_row_problems(rows, "a histogram row", sub_buckets=False)
    if "sub_buckets" in source.table_names():  # finer buckets beside the log2 ones (schema v8)
        rows = source.execute(
            "SELECT qualname, metric, scenario_id, size, bucket, sub, count, sum, sum_sq "
            "FROM sub_buckets"
        )
        yield from _histogram_row_problems(rows, "a sub-bucket row", sub_buckets=True)
        for qualname, metric, scenario_id, size, bucket in source.execute(OVERFULL_SUB_BUCKETS):
            yield (
                f"{qualname} ({metric}, scenario {scenario_id}, size {size}): the sub-buckets "
                f"of bucket {bucket} hold more values than the bucket"
            )
    for caller, callee, count in source.execute("SELECT caller, callee, count FROM call_edges"):
        if qualname_problem(caller) or qualname_problem(callee):
            yield f"a call edge joins names that are not Python names ({str(caller)[:60]!r})"
        elif not (isinstance(count, int) and 0 <= count <= MAX_COUNT):
            yield f"the call edge {caller} → {callee} has an impossible count ({count})"


OVERFULL_SUB_BUCKETS = """
SELECT s.qualname, s.metric, s.scenario_id, s.size, s.bucket
FROM sub_buckets AS s
LEFT JOIN buckets AS b USING (qualname, metric, scenario_id, size, environment_id, bucket)
GROUP BY s.qualname, s.metric, s.scenario_id, s.size, s.environment_id, s.bucket
HAVING SUM(s.count) > COALESCE(MAX(b.count), 0)
"""
"""Sub-bucket groups holding more values than their log2 bucket: no real histogram has them."""


def _histogram_row_problems(
    rows: Iterable[tuple[Any, ...]], what: str, *, sub_buckets: bool
) -> Iterator[str]:
    """Problems of (log2 or sub-) bucket rows: names, metrics, sizes, numbers in their bounds."""
    metrics = {str(m): m for m in Metric}
    for qualname, metric, scenario_id, size, bucket, sub, count, total, total_sq in rows:
        where = f"{qualname} ({metric}, scenario {scenario_id}, size {size})"
        if problem := qualname_problem(qualname):
            yield f"{what}'s name {problem}"
        elif metric not in metrics:
            yield f"{where}: the metric is unknown"
        elif not (isinstance(size, int) and size >= -1):
            yield f"{where}: the size is not a size"
        elif not all(isinstance(v, (int, float)) for v in (bucket, sub, count, total, total_sq)):
            yield f"{where}: {what} holds something other than numbers"
        elif problem := (
            sub_bucket_row_problem(
                metrics[metric], int(bucket), int(sub), int(count), total, total_sq
            )
            if sub_buckets
            else bucket_row_problem(metrics[metric], int(bucket), int(count), total, total_sq)
        ):
            yield f"{where}: {problem}"


def merge_files(
    output: str | Path, inputs: list[str | Path], *, allow_repeats: bool = False
) -> dict[str, int]:
    """Create or extend ``output`` with the sum of ``inputs``. Every input is checked before
    the first is added, so a refused input leaves the output as it was."""
    for path in inputs:
        if same_file(path, output):
            raise UsageError(f"{path} is the output file itself ({output}); name a new output file")
    seen = scan_uids(output, f"the output {output}") if Path(output).exists() else {}
    for path in inputs:
        source = open_db(path, readonly=True)
        try:
            check_source(source, str(path))
            uids = scan_uids(source, str(path))
        finally:
            source.conn.close()
        repeated = set(uids) & set(seen)
        if repeated and not allow_repeats:
            earlier = seen[next(iter(repeated))]
            raise AlreadyMerged(
                f"{path}: {len(repeated)} of its scans are already in {earlier} (merged before, "
                "or named twice) — adding it again would count its samples twice; pass "
                "--allow-repeats if that is what you want (nothing was merged)"
            )
        seen.update(dict.fromkeys(uids, str(path)))
    target = open_db(output)
    totals: dict[str, int] = {}
    try:
        for path in inputs:
            for table, n in merge_into(target, path, allow_repeats=allow_repeats).items():
                totals[table] = totals.get(table, 0) + n
    finally:
        target.conn.close()
    return totals


def scan_uids(db: sqlite_utils.Database | str | Path, where: str = "") -> dict[str, str]:
    """The scan uids a database holds, each mapped to ``where`` it was seen (for messages)."""
    if not isinstance(db, sqlite_utils.Database):
        opened = open_db(db, readonly=True)
        try:
            return scan_uids(opened, where or str(db))
        finally:
            opened.conn.close()
    columns = {r[1] for r in db.execute("PRAGMA table_info(scans)")}
    if "uid" not in columns:
        return {}
    return {r[0]: where for r in db.execute("SELECT uid FROM scans WHERE uid IS NOT NULL")}
