"""Writing to the profile database: additive, one transaction per batch.

Bucket counts, sums and call-graph edges are *added* (``INSERT … ON CONFLICT DO UPDATE SET
count = buckets.count + excluded.count``), never overwritten, so scanning twice doubles the
counts and merging databases is addition. The existing row is named by its table so the same
statements run on PostgreSQL, where the aggregation service keeps its store. Facts about entry points and coverage are replaced by the
newest scan. Growth fits and stored figures are derived data and are recomputed for every
entry point a batch touches (:func:`refresh_derived`).
"""

from __future__ import annotations

import json
import typing
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import sqlite_utils

from apiprof.db.charts import refresh_charts
from apiprof.db.figures import refresh_figures
from apiprof.db.schema import immediate, new_scan_uid
from apiprof.model.growth import fit_growth
from apiprof.model.histogram import Histogram
from apiprof.model.owner import ScanOwner, owner_of_row, still_running, this_process
from apiprof.model.records import (
    NO_SIZE,
    Calibration,
    CallEdge,
    CoverageRecord,
    Disturbance,
    EntryPoint,
    Environment,
    Measurement,
    Metric,
    ScanBatch,
)

BucketKey = tuple[str, str, str, int, str, int]  # qualname, metric, scenario, size, env, bucket

ADD_BUCKETS_SQL = """
INSERT INTO buckets (qualname, metric, scenario_id, size, environment_id, bucket, count, sum, sum_sq)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (qualname, metric, scenario_id, size, environment_id, bucket) DO UPDATE SET
    count = buckets.count + excluded.count, sum = buckets.sum + excluded.sum,
    sum_sq = buckets.sum_sq + excluded.sum_sq
"""

ADD_SUB_BUCKETS_SQL = """
INSERT INTO sub_buckets (qualname, metric, scenario_id, size, environment_id, bucket, sub, count, sum, sum_sq)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (qualname, metric, scenario_id, size, environment_id, bucket, sub) DO UPDATE SET
    count = count + excluded.count, sum = sum + excluded.sum, sum_sq = sum_sq + excluded.sum_sq
"""

ADD_EDGES_SQL = """
INSERT INTO call_edges (caller, callee, count) VALUES (?, ?, ?)
ON CONFLICT (caller, callee) DO UPDATE SET count = call_edges.count + excluded.count
"""

ADD_VERSIONS_SQL = """
INSERT INTO collected_versions (package, version, batches) VALUES (?, ?, ?)
ON CONFLICT (package, version) DO UPDATE SET
    batches = collected_versions.batches + excluded.batches
"""

ADD_SPEEDS_SQL = """
INSERT INTO machine_speeds (environment_id, bucket, count, sum, sum_sq) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (environment_id, bucket) DO UPDATE SET
    count = machine_speeds.count + excluded.count, sum = machine_speeds.sum + excluded.sum,
    sum_sq = machine_speeds.sum_sq + excluded.sum_sq
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def begin_scan(
    db: sqlite_utils.Database,
    package: str,
    version: str,
    environment: Environment,
    calibration: Calibration,
    options: dict[str, Any],
    isolation: str = "",
) -> int:
    """Record the start of a scan (with the isolation its workers got); returns its id."""
    with immediate(db):
        db.table("environments").insert(
            {"id": environment.id, **asdict(environment)}, pk="id", ignore=True
        )
        scan_id = (
            db.table("scans")
            .insert(
                {
                    "package": package,
                    "started_at": _now(),
                    "finished_at": None,
                    "status": "running",
                    "environment_id": environment.id,
                    "calibration": json.dumps(calibration.to_json(), sort_keys=True),
                    "options": json.dumps(options, sort_keys=True),
                    "isolation": isolation,
                    "uid": new_scan_uid(),
                    **this_process().to_row(),
                }
            )
            .last_pk
        )
        db.table("packages").upsert(
            {"name": package, "version": version, "last_scan": scan_id}, pk="name"
        )
    return int(typing.cast(int, scan_id))


def take_over_scan(db: sqlite_utils.Database, scan_id: int) -> ScanOwner | None:
    """Make this process the owner of a scan it resumes, unless a live process owns it: one
    ``--resume`` owner at a time. Returns that live owner (nothing changed), or None. The check
    and the change are one write transaction, so of two resumers exactly one wins."""
    with immediate(db):
        row = db.execute(
            "SELECT status, host, pid, process_started FROM scans WHERE id = ?", [scan_id]
        ).fetchone()
        owner = owner_of_row(row[1:]) if row else None
        if row and row[0] == "running" and owner is not None and still_running(owner):
            return owner
        db.table("scans").update(
            scan_id, {"status": "running", "finished_at": None, **this_process().to_row()}
        )
    return None


def finish_scan(db: sqlite_utils.Database, scan_id: int, status: str = "finished") -> None:
    with immediate(db):
        db.table("scans").update(scan_id, {"finished_at": _now(), "status": status})
    # Fold the WAL into the database file and empty it: a reader that stays open (an editor)
    # keeps SQLite from deleting the WAL at close, and a stale WAL left beside the file would be
    # replayed onto whatever file is copied over it next.
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def record_scan_conditions(
    db: sqlite_utils.Database, scan_id: int, machine_speed_ns: float, disturbance: Disturbance
) -> None:
    """Store the machine-speed index (lower is faster) and what the scan saw of other load, so
    readers can compare databases from different machines and tell busy-machine scans."""
    with db.conn:
        db.table("scans").update(
            scan_id,
            {
                "machine_speed_ns": machine_speed_ns or None,
                "disturbance": json.dumps(disturbance.to_json(), sort_keys=True),
            },
        )


def store_entry_points(db: sqlite_utils.Database, entry_points: Iterable[EntryPoint]) -> None:
    """Insert or refresh the descriptive rows for entry points and their aliases."""
    entry_points = list(entry_points)
    with immediate(db):
        db.table("entry_points").upsert_all(
            (
                {
                    "qualname": ep.qualname,
                    "package": ep.package,
                    "module": ep.module,
                    "kind": str(ep.kind),
                    "signature": ep.signature,
                    "summary": ep.summary,
                    "source_file": ep.source_file,
                    "source_line": ep.source_line,
                }
                for ep in entry_points
            ),
            pk="qualname",
        )
        db.table("aliases").upsert_all(
            (
                {"alias": alias, "qualname": ep.qualname}
                for ep in entry_points
                for alias in ep.aliases
            ),
            pk="alias",
        )


def bucket_rows(measurements: Iterable[Measurement], environment_id: str) -> list[tuple]:
    """Pre-aggregated bucket rows: one row per key even if measurements repeat a key."""
    totals: dict[BucketKey, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for m in measurements:
        for bucket, count, total, total_sq in m.histogram.rows():
            acc = totals[(m.qualname, str(m.metric), m.scenario_id, m.size, environment_id, bucket)]
            acc[0] += count
            acc[1] += total
            acc[2] += total_sq
    return [(*key, int(c), s, sq) for key, (c, s, sq) in totals.items()]


def sub_bucket_rows(measurements: Iterable[Measurement], environment_id: str) -> list[tuple]:
    """Pre-aggregated sub-bucket rows (bucket key plus the sub-bucket), like :func:`bucket_rows`."""
    totals: dict[tuple, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for m in measurements:
        for bucket, sub, count, total, total_sq in m.histogram.sub_rows():
            key = (m.qualname, str(m.metric), m.scenario_id, m.size, environment_id, bucket, sub)
            acc = totals[key]
            acc[0] += count
            acc[1] += total
            acc[2] += total_sq
    return [(*key, int(c), s, sq) for key, (c, s, sq) in totals.items()]


def store_batch(
    db: sqlite_utils.Database,
    batch: ScanBatch,
    *,
    environment_id: str,
    package: str,
    scan_id: int | None = None,
) -> None:
    """Add one batch of scan results in a single transaction."""
    with immediate(db):
        if batch.scenarios:
            db.table("scenarios").upsert_all(
                (
                    {
                        "id": s.id,
                        "qualname": s.qualname,
                        "source": str(s.source),
                        "description": s.description,
                        "size_axis": s.size_axis,
                        "setup": s.setup,
                        "call": s.call,
                        "inputs": s.inputs,
                    }
                    for s in batch.scenarios
                ),
                pk="id",
                alter=True,
            )
        db.conn.executemany(ADD_BUCKETS_SQL, bucket_rows(batch.measurements, environment_id))
        db.conn.executemany(
            ADD_SUB_BUCKETS_SQL, sub_bucket_rows(batch.measurements, environment_id)
        )
        db.conn.executemany(ADD_EDGES_SQL, _edge_rows(batch.edges))
        if batch.coverage:
            db.table("coverage").upsert_all(
                (
                    {
                        "qualname": c.qualname,
                        "package": package,
                        "status": str(c.status),
                        "reason": c.reason,
                        "scan_id": scan_id,
                    }
                    for c in batch.coverage
                ),
                pk="qualname",
            )
            store_failures(db, batch.coverage, scan_id)
        refresh_derived(db, {m.qualname for m in batch.measurements})


def store_failures(
    db: sqlite_utils.Database, records: Iterable[CoverageRecord], scan_id: int | None
) -> None:
    """Replace the stored failures of these entry points with the ones behind their new verdict."""
    records = list(records)
    names = [record.qualname for record in records]
    if "failures" not in db.table_names() or not names:
        return
    db.execute(f"DELETE FROM failures WHERE qualname IN ({','.join('?' * len(names))})", names)
    db.table("failures").insert_all(
        (
            {
                "qualname": record.qualname,
                "position": position,
                "scan_id": scan_id,
                "scenario_id": failure.scenario,
                "phase": failure.phase,
                "kind": str(failure.kind),
                "reason": failure.reason,
                "location": failure.location,
                "traceback": failure.traceback,
            }
            for record in records
            for position, failure in enumerate(record.failures)
        ),
        pk=("qualname", "position"),
    )


def _edge_rows(edges: Iterable[CallEdge]) -> list[tuple[str, str, int]]:
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for edge in edges:
        totals[(edge.caller, edge.callee)] += edge.count
    return [(caller, callee, count) for (caller, callee), count in totals.items()]


def refresh_derived(db: sqlite_utils.Database, qualnames: Iterable[str] | None = None) -> None:
    """Work out again what is derived from the buckets of ``qualnames`` (all entry points when
    None) — growth fits, stored figures and charts — after a write; the caller owns the
    transaction."""
    names = None if qualnames is None else set(qualnames)
    recompute_growth(db, names)
    refresh_figures(db, names)
    refresh_charts(db, names)  # drawn from the fits and the figures


def recompute_growth(db: sqlite_utils.Database, qualnames: Iterable[str] | None = None) -> None:
    """Refit growth classes from the sized buckets (all entry points when ``qualnames`` is None).

    The caller owns the transaction. Each size contributes the *median* of its merged histogram,
    not the mean: one preempted call on a busy machine moves a mean by orders of magnitude but
    leaves the median alone. Fits therefore always reflect every run merged so far.
    """
    where, params = "size != ?", [NO_SIZE]  # type: str, list[object]
    if qualnames is not None:
        qualnames = sorted(qualnames)
        if not qualnames:
            return
        where += f" AND qualname IN ({','.join('?' * len(qualnames))})"
        params += qualnames
    series: dict[tuple[str, str, str], dict[int, Histogram]] = defaultdict(
        lambda: defaultdict(Histogram)
    )
    for qualname, metric, scenario_id, size, bucket, count, total, total_sq in db.execute(
        "SELECT qualname, metric, scenario_id, size, bucket, SUM(count), SUM(sum), SUM(sum_sq) FROM buckets "
        f"WHERE {where} AND metric != ? GROUP BY qualname, metric, scenario_id, size, bucket",
        [*params, str(Metric.CALLS)],
    ):
        series[(qualname, metric, scenario_id)][size].merge(
            Histogram.from_buckets([(bucket, count, total, total_sq)])
        )
    for qualname, metric, scenario_id, size, *row in db.execute(
        "SELECT qualname, metric, scenario_id, size, bucket, sub, SUM(count), SUM(sum), SUM(sum_sq) "
        f"FROM sub_buckets WHERE {where} AND metric != ? "
        "GROUP BY qualname, metric, scenario_id, size, bucket, sub",
        [*params, str(Metric.CALLS)],
    ):
        series[(qualname, metric, scenario_id)][size].merge(Histogram.from_buckets((), [row]))
    axes = dict(db.execute("SELECT id, size_axis FROM scenarios").fetchall())
    rows = []
    for (qualname, metric, scenario_id), by_size in series.items():
        sizes = sorted(by_size)
        fit = fit_growth(sizes, [by_size[s].median for s in sizes])
        if fit is None:
            continue
        rows.append(
            {
                "qualname": qualname,
                "metric": metric,
                "scenario_id": scenario_id,
                "growth_class": fit.growth_class,
                "intercept": fit.intercept,
                "coefficient": fit.coefficient,
                "rel_error": fit.rel_error,
                "r2": fit.r2,
                "points": fit.points,
                "size_axis": axes.get(scenario_id, "") or "n",
            }
        )
    if rows:
        db.table("growth").upsert_all(rows, pk=("qualname", "metric", "scenario_id"))


def add_histograms(
    db: sqlite_utils.Database,
    qualname: str,
    histograms: dict[Metric, Histogram],
    *,
    scenario_id: str = "manual",
    environment: Environment | None = None,
) -> None:
    """Add histograms for one API outside a scan (in-the-wild collectors, tests, imports)."""
    environment = environment or Environment.current()
    with immediate(db):
        db.table("environments").insert(
            {"id": environment.id, **asdict(environment)}, pk="id", ignore=True
        )
    store_batch(
        db,
        ScanBatch(
            measurements=[Measurement(qualname, scenario_id, m, h) for m, h in histograms.items()]
        ),
        environment_id=environment.id,
        package=qualname.split(".", 1)[0],
    )
