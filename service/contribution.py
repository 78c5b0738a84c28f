"""What one batch (an upload) or one lab database (``apiprof serve --import``) adds to the
aggregate, as rows ready for either backend — pre-aggregated by key and sorted, so one statement
never touches a key twice and concurrent writers lock rows in the same order.

Statements are written once, in SQLite's parameter style; the PostgreSQL store swaps ``?`` for
``%s``. The additive ones are the profile database's own (:mod:`apiprof.db.store`).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from apiprof.db.schema import open_db
from apiprof.db.store import (
    ADD_BUCKETS_SQL,
    ADD_EDGES_SQL,
    ADD_SPEEDS_SQL,
    ADD_VERSIONS_SQL,
    bucket_rows,
)
from apiprof.engine.collect.wire import Batch
from apiprof.errors import DatabaseError
from apiprof.model.buckets import check_bucket
from apiprof.model.histogram import Histogram
from apiprof.model.records import Measurement, ScenarioSource

COLLECTED_SCENARIO = (
    str(ScenarioSource.COLLECTED),
    "",
    str(ScenarioSource.COLLECTED),
    "measured in real programs (in-the-wild collection)",
    "",
)
"""The one scenario every collected bucket belongs to (id ``collected``, no size axis)."""
_ENVIRONMENT_FIELDS = ("python", "implementation", "system", "machine", "cpu")

INSERT_BATCH_SQL = (
    "INSERT INTO batches (id, received_at, source) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING"
)
ADD_ENVIRONMENT_SQL = (
    "INSERT INTO environments (id, python, implementation, system, machine, cpu) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
)
ADD_SCENARIO_SQL = (
    "INSERT INTO scenarios (id, qualname, source, description, size_axis) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO NOTHING"
)
_ENTRY_COLUMNS = "qualname, package, module, kind, signature, summary, source_file, source_line"
KNOWN_ENTRY_SQL = (
    f"INSERT INTO entry_points ({_ENTRY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (qualname) DO NOTHING"
)
REPLACE_ENTRY_SQL = (
    f"INSERT INTO entry_points ({_ENTRY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (qualname) DO UPDATE SET package = excluded.package, module = excluded.module, "
    "kind = excluded.kind, signature = excluded.signature, summary = excluded.summary, "
    "source_file = excluded.source_file, source_line = excluded.source_line"
)
REPLACE_ALIAS_SQL = (
    "INSERT INTO aliases (alias, qualname) VALUES (?, ?) "
    "ON CONFLICT (alias) DO UPDATE SET qualname = excluded.qualname"
)
REPLACE_PACKAGE_SQL = (
    "INSERT INTO packages (name, version) VALUES (?, ?) "
    "ON CONFLICT (name) DO UPDATE SET version = excluded.version"
)
BETTER_COVERAGE_SQL = (
    "INSERT INTO coverage (qualname, package, status, reason) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (qualname) DO UPDATE SET status = excluded.status, reason = excluded.reason "
    "WHERE coverage.status != 'profiled'"
)


@dataclass(frozen=True)
class Contribution:
    """Rows one batch adds, as ``(statement, rows)`` steps in a fixed order."""

    batch_id: str
    source: str  # "upload" or "import"
    steps: tuple[tuple[str, tuple[tuple, ...]], ...] = field(default_factory=tuple)

    @property
    def bucket_rows(self) -> int:
        return sum(len(rows) for sql, rows in self.steps if sql == ADD_BUCKETS_SQL)

    def batch_row(self) -> tuple[str, str, str]:
        return (self.batch_id, datetime.now(UTC).isoformat(timespec="seconds"), self.source)


def _step(sql: str, rows: Iterable[tuple]) -> tuple[str, tuple[tuple, ...]]:
    return (sql, tuple(sorted(rows, key=lambda row: tuple(map(str, row)))))


def from_batch(batch: Batch) -> Contribution:
    """An upload: collected buckets (scenario ``collected``), the entry points it names if the
    aggregate lacks them, its package versions and machine-speed index."""
    environment = batch.environment
    env_row = (environment.id, *(getattr(environment, f) for f in _ENVIRONMENT_FIELDS))
    scenario = str(ScenarioSource.COLLECTED)
    measurements = [
        Measurement(api.qualname, scenario, metric, hist)
        for api in batch.apis
        for metric, hist in api.histograms.items()
    ]
    entries = {
        (api.qualname, api.package, api.module, api.kind, "", "", "", 0) for api in batch.apis
    }
    versions: dict[tuple[str, str], int] = {}
    for api in batch.apis:
        versions[(api.package, api.version)] = 1
    speeds: tuple[tuple, ...] = ()
    if batch.machine_speed_ns is not None:
        speed = Histogram.of([batch.machine_speed_ns])
        speeds = tuple((environment.id, *row) for row in speed.rows())
    return Contribution(
        batch.batch_id,
        "upload",
        (
            _step(ADD_ENVIRONMENT_SQL, [env_row]),
            _step(ADD_SCENARIO_SQL, [COLLECTED_SCENARIO]),
            _step(KNOWN_ENTRY_SQL, entries),
            _step(ADD_BUCKETS_SQL, bucket_rows(measurements, environment.id)),
            _step(ADD_VERSIONS_SQL, [(p, v, n) for (p, v), n in versions.items()]),
            _step(ADD_SPEEDS_SQL, speeds),
        ),
    )


def import_id(path: str | Path) -> str:
    """A lab database's batch id: the hash of its content, so importing the same file twice
    adds it once."""
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    return "import:" + digest.hexdigest()


def from_database(path: str | Path, batch_id: str = "") -> Contribution:
    """A lab scan database: everything ``apiprof merge`` would add, as one batch — under
    ``batch_id``, or by default under its content's hash (:func:`import_id`).

    Raises :class:`DatabaseError` for a file that is not a readable apiprof database or holds a
    bucket row no real values could give (it may come from another machine)."""
    db = open_db(path, readonly=True)
    try:
        read = db.execute
        buckets = read(
            "SELECT qualname, metric, scenario_id, size, environment_id, bucket, "
            "SUM(count), SUM(sum), SUM(sum_sq) FROM buckets "
            "GROUP BY qualname, metric, scenario_id, size, environment_id, bucket"
        ).fetchall()
        for qualname, metric, *_, bucket, count, total, total_sq in buckets:
            try:
                check_bucket(bucket, count, total, total_sq)
            except (TypeError, ValueError) as exc:
                raise DatabaseError(f"{qualname} {metric}: {exc}") from None
        steps = [
            _step(
                ADD_ENVIRONMENT_SQL,
                read(f"SELECT id, {', '.join(_ENVIRONMENT_FIELDS)} FROM environments").fetchall(),
            ),
            _step(REPLACE_PACKAGE_SQL, read("SELECT name, version FROM packages").fetchall()),
            _step(
                ADD_SCENARIO_SQL,
                read(
                    "SELECT id, qualname, source, description, size_axis FROM scenarios"
                ).fetchall(),
            ),
            _step(REPLACE_ENTRY_SQL, read(f"SELECT {_ENTRY_COLUMNS} FROM entry_points").fetchall()),
            _step(REPLACE_ALIAS_SQL, read("SELECT alias, qualname FROM aliases").fetchall()),
            _step(
                BETTER_COVERAGE_SQL,
                read("SELECT qualname, package, status, reason FROM coverage").fetchall(),
            ),
            _step(ADD_BUCKETS_SQL, [tuple(r) for r in buckets]),
            _step(ADD_EDGES_SQL, read("SELECT caller, callee, count FROM call_edges").fetchall()),
        ]
    finally:
        db.conn.close()
    return Contribution(batch_id or import_id(path), "import", tuple(steps))


SCAN_TASK_PREFIX = "scan-task:"
"""Batch ids of scan databases sent by ``apiprof-scan --cluster --server``: one per task id, so a
task sent again (a lost answer, a resumed scan) is added once."""


def from_scan_upload(task_id: str, data: bytes) -> Contribution:
    """A scan task's database as sent over HTTP, checked like any lab database; errors name
    no local path."""
    with tempfile.TemporaryDirectory(prefix="apiprof-scan-upload-") as scratch:
        path = Path(scratch, "scan.db")
        path.write_bytes(data)
        try:
            return from_database(path, SCAN_TASK_PREFIX + task_id)
        except DatabaseError as exc:
            reason = str(exc).replace(f"{path}: ", "").replace(str(path), "the file")
            raise DatabaseError(reason) from None


def touched_qualnames(contribution: Contribution) -> set[str]:
    """APIs whose derived data (growth fits, stored figures) the contribution may change."""
    return {row[0] for sql, rows in contribution.steps if sql == ADD_BUCKETS_SQL for row in rows}
