"""Store: each entry point's batch in its own transaction as it arrives, so an interrupted scan
keeps everything measured so far."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Generator
from pathlib import Path

import sqlite_utils

from apiprof import errors
from apiprof.db.store import (
    finish_scan,
    store_batch,
)
from apiprof.engine.scan.plan import Plan
from apiprof.engine.scan.progress import ProgressTracker, ScanProgress
from apiprof.model.records import (
    ScanBatch,
)


def claim_write_access(db: sqlite_utils.Database, db_path: str | Path) -> None:
    """Fail now, not after discovery, if another process holds the write lock."""
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        raise errors.DatabaseError(
            f"{db_path}: the database is locked by another process ({exc}); wait for it to finish or use another --db"
        ) from exc


def store_results(
    db: sqlite_utils.Database,
    batches: Generator[tuple[str, ScanBatch], None, None],
    plan: Plan,
    scan_id: int,
    environment_id: str,
    package: str,
    report: Callable[[ScanProgress], None],
    jobs: int = 1,
) -> str:
    """Store each entry point's batch in its own transaction as it arrives; returns the scan's
    final status ("finished", or "interrupted" when anything — Ctrl-C included — stops it)."""
    status = "interrupted"
    tracker = ProgressTracker([r.entry.qualname for r in plan.requests], jobs)
    try:
        store_batch(
            db,
            ScanBatch(coverage=plan.known),
            environment_id=environment_id,
            package=package,
            scan_id=scan_id,
        )
        report(tracker.event())
        for qualname, batch in batches:
            store_batch(db, batch, environment_id=environment_id, package=package, scan_id=scan_id)
            tracker.finished(qualname, str(batch.coverage[0].status))
            report(tracker.event())
        status = "finished"
    finally:
        batches.close()  # stops the run: busy workers are killed at once
        try:
            finish_scan(db, scan_id, status)
        except sqlite3.Error:
            if status == "finished":
                raise  # otherwise an error is on its way already; it is the one to report
    return status


def scans_stored(db: sqlite_utils.Database) -> bool:
    """Whether the database holds any scan (True when it cannot tell: keep the file then)."""
    try:
        return db.execute("SELECT 1 FROM scans LIMIT 1").fetchone() is not None
    except sqlite3.Error:
        return True
