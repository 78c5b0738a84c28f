"""Resume: find the package's last unfinished scan, become the one process continuing it, and
read back what it stored already."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sqlite_utils

from apiprof import errors
from apiprof.db.schema import immediate, open_db
from apiprof.db.store import (
    take_over_scan,
)
from apiprof.model.owner import owner_of_row


def find_resumable_scan(db: sqlite_utils.Database, package: str) -> dict[str, Any] | None:
    """The package's newest scan that did not finish (interrupted, killed, or still running
    elsewhere: ``owner`` says which process last ran it, None for scans older than schema 3)."""
    row = db.execute(
        "SELECT id, status, calibration, options, host, pid, process_started FROM scans WHERE package = ? "
        "ORDER BY id DESC LIMIT 1",
        [package],
    ).fetchone()
    if row is None or row[1] == "finished":
        return None
    owner = owner_of_row(row[4:7])
    return {
        "id": row[0],
        "status": row[1],
        "calibration": json.loads(row[2] or "{}"),
        "options": json.loads(row[3] or "{}"),
        "owner": owner if row[1] == "running" else None,
    }


def claim_resumed_scan(
    db: sqlite_utils.Database, db_path: str | Path, package: str, scan_id: int
) -> None:
    """Become the one process resuming scan ``scan_id``, or refuse: its owner is alive."""
    owner = take_over_scan(db, scan_id)
    if owner is not None:
        raise errors.UsageError(
            f"{db_path}: scan #{scan_id} of {package!r} is still running (process {owner.pid} on "
            f"this host); let it finish, or stop it (kill {owner.pid}) and then --resume"
        )


def record_isolation(db: sqlite_utils.Database, scan_id: int, isolation: str) -> None:
    """A resumed scan records the isolation of each run that added to it."""
    row = db.execute("SELECT isolation FROM scans WHERE id = ?", [scan_id]).fetchone()
    earlier = row[0] if row and row[0] else ""
    if earlier != isolation:
        text = f"{earlier}; resumed with {isolation}" if earlier else isolation
        with immediate(db):
            db.execute("UPDATE scans SET isolation = ? WHERE id = ?", [text, scan_id])


def completed_entry_points(db: sqlite_utils.Database, scan_id: int) -> set[str]:
    return {r[0] for r in db.execute("SELECT qualname FROM coverage WHERE scan_id = ?", [scan_id])}


def last_scan_status(db_path: str | Path, package: str) -> str | None:
    """Status of the package's newest scan in the database ("running", "interrupted",
    "finished"), or None when the file or the package's scans do not exist."""
    rows = _stored_rows(
        db_path, "SELECT status FROM scans WHERE package = ? ORDER BY id DESC LIMIT 1", package
    )
    return rows[0][0] if rows else None


def stored_coverage(db_path: str | Path, package: str) -> dict[str, tuple[str, str]]:
    """qualname -> (status, reason) stored for the package, {} without a database or scan."""
    rows = _stored_rows(
        db_path, "SELECT qualname, status, reason FROM coverage WHERE package = ?", package
    )
    return {qualname: (status, reason) for qualname, status, reason in rows}


def _stored_rows(db_path: str | Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows of one query on a database opened read-only; [] when the file does not exist."""
    if not Path(db_path).exists():
        return []
    db = open_db(db_path, readonly=True)
    try:
        return db.execute(sql, list(params)).fetchall()
    finally:
        db.conn.close()
