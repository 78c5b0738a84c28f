"""The SQLite schema, built and evolved by numbered migrations.

``meta.schema_version`` records how far a file has been migrated; :func:`open_db` brings any
apiprof database up to :data:`SCHEMA_VERSION` and refuses files that are not ours or that a newer
apiprof wrote. Each migration runs in one ``BEGIN IMMEDIATE`` transaction that re-reads the
version first, so a killed upgrade leaves the old version and two processes creating or
upgrading one file at once take turns (the second finds the work done). Read-only opens work on
files and folders the reader cannot write (:func:`readonly_uri`).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from apiprof.errors import DatabaseError

if TYPE_CHECKING:  # loaded by open_db only: readers (open_reader) never import sqlite-utils
    import sqlite_utils

APP_ID = "apiprof"
DEFAULT_DB = "apiprof.db"


def _v1_core(db: sqlite_utils.Database) -> None:
    db.table("packages").create({"name": str, "version": str, "last_scan": int}, pk="name")
    db.table("environments").create(
        {
            "id": str,
            "python": str,
            "implementation": str,
            "system": str,
            "machine": str,
            "cpu": str,
        },
        pk="id",
    )
    db.table("scans").create(
        {
            "id": int,
            "package": str,
            "started_at": str,
            "finished_at": str,
            "status": str,  # running | finished | interrupted
            "environment_id": str,
            "calibration": str,  # JSON of apiprof.model.records.Calibration
            "options": str,  # JSON of the scan options, for --resume
        },
        pk="id",
    )
    db.table("entry_points").create(
        {
            "qualname": str,
            "package": str,
            "module": str,
            "kind": str,
            "signature": str,
            "summary": str,
            "source_file": str,
            "source_line": int,
        },
        pk="qualname",
    )
    db.table("entry_points").create_index(["package"])
    db.table("aliases").create({"alias": str, "qualname": str}, pk="alias")
    db.table("scenarios").create(
        {"id": str, "qualname": str, "source": str, "description": str, "size_axis": str}, pk="id"
    )
    db.table("scenarios").create_index(["qualname"])
    db.execute(
        """CREATE TABLE buckets (
            qualname TEXT NOT NULL, metric TEXT NOT NULL, scenario_id TEXT NOT NULL,
            size INTEGER NOT NULL, environment_id TEXT NOT NULL, bucket INTEGER NOT NULL,
            count INTEGER NOT NULL, sum REAL NOT NULL, sum_sq REAL NOT NULL,
            PRIMARY KEY (qualname, metric, scenario_id, size, environment_id, bucket)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """CREATE TABLE call_edges (
            caller TEXT NOT NULL, callee TEXT NOT NULL, count INTEGER NOT NULL,
            PRIMARY KEY (caller, callee)
        ) WITHOUT ROWID"""
    )
    db.table("coverage").create(
        {"qualname": str, "package": str, "status": str, "reason": str, "scan_id": int},
        pk="qualname",
    )
    db.table("coverage").create_index(["package"])


def _v2_growth_and_module_index(db: sqlite_utils.Database) -> None:
    # Growth fits are derived from the additive buckets and recomputed after every write.
    db.table("growth").create(
        {
            "qualname": str,
            "metric": str,
            "scenario_id": str,
            "growth_class": str,
            "intercept": float,
            "coefficient": float,
            "rel_error": float,
            "r2": float,
            "points": int,
            "size_axis": str,
        },
        pk=("qualname", "metric", "scenario_id"),
    )
    db.table("entry_points").create_index(["module"])


def _v3_scan_owner(db: sqlite_utils.Database) -> None:
    # The process running a scan (model/owner.py), so --resume can refuse a scan that is still alive.
    for column, kind in (("host", str), ("pid", int), ("process_started", str)):
        db.table("scans").add_column(column, kind)


def _v4_machine_speed(db: sqlite_utils.Database) -> None:
    # How fast the measuring machine ran a fixed reference workload (ns, lower is faster), so
    # databases from different machines can be compared API by API.
    db.table("scans").add_column("machine_speed_ns", float)


def _v5_merged_tasks(db: sqlite_utils.Database) -> None:
    # Inputs added under a task id (a cluster scan's tasks), so a retried or resumed task is
    # added once, and the database says where and how each part was measured.
    db.table("merged_tasks").create(
        {
            "task_id": str,
            "package": str,
            "status": str,
            "worker": str,  # host, Python and machine that ran it
            "elapsed_seconds": float,
            "details": str,  # JSON: requirement, batch, entry points, scan ids
            "merged_at": str,
        },
        pk="task_id",
    )


def _v6_isolation_and_scan_uid(db: sqlite_utils.Database) -> None:
    # The isolation a scan's workers got (provenance: engine/isolation/confine.py), and an id
    # that stays with a scan across merges, so merge can refuse an input it already added.
    db.table("scans").add_column("isolation", str)
    db.table("scans").add_column("uid", str)
    for row in db.execute(
        "SELECT id, package, started_at, host, pid, process_started, calibration FROM scans"
    ).fetchall():
        db.execute("UPDATE scans SET uid = ? WHERE id = ?", [legacy_scan_uid(row[1:]), row[0]])
    db.execute("CREATE INDEX scans_uid ON scans (uid)")


def new_scan_uid() -> str:
    return uuid.uuid4().hex


def legacy_scan_uid(fields: tuple) -> str:
    """A scan's id derived from what it recorded, so copies of one old file agree on it."""
    return hashlib.sha256(repr(tuple(map(str, fields))).encode()).hexdigest()[:32]


def _v7_collection(db: sqlite_utils.Database) -> None:
    # In-the-wild collection, as the aggregation service stores it: the ids of the batches
    # already added (exactly-once adds), which package versions collected figures come from,
    # and the machine-speed index of the contributing machines — all additive.
    db.execute(
        "CREATE TABLE batches (id TEXT PRIMARY KEY, received_at TEXT NOT NULL, source TEXT NOT NULL)"
    )
    db.execute(
        """CREATE TABLE collected_versions (
            package TEXT NOT NULL, version TEXT NOT NULL, batches INTEGER NOT NULL,
            PRIMARY KEY (package, version)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """CREATE TABLE machine_speeds (
            environment_id TEXT NOT NULL, bucket INTEGER NOT NULL,
            count INTEGER NOT NULL, sum REAL NOT NULL, sum_sq REAL NOT NULL,
            PRIMARY KEY (environment_id, bucket)
        ) WITHOUT ROWID"""
    )


def _v8_sub_buckets(db: sqlite_utils.Database) -> None:
    # Finer additive buckets beside the log2 ones (8 per power of two) for accurate percentiles,
    # and what each scan saw of the machine's load. Older rows simply have no sub-buckets.
    db.execute(
        """CREATE TABLE sub_buckets (
            qualname TEXT NOT NULL, metric TEXT NOT NULL, scenario_id TEXT NOT NULL,
            size INTEGER NOT NULL, environment_id TEXT NOT NULL, bucket INTEGER NOT NULL,
            sub INTEGER NOT NULL, count INTEGER NOT NULL, sum REAL NOT NULL, sum_sq REAL NOT NULL,
            PRIMARY KEY (qualname, metric, scenario_id, size, environment_id, bucket, sub)
        ) WITHOUT ROWID"""
    )
    db.table("scans").add_column("disturbance", str)  # JSON of model.records.Disturbance


def _v9_failures_and_inputs(db: sqlite_utils.Database) -> None:
    # Every failed scenario behind a "not profiled" verdict (phase, where it raised, the last
    # frames of the traceback), and what a scenario ran, so a person can reproduce it by hand.
    db.table("failures").create(
        {
            "qualname": str,
            "position": int,  # order in which the attempts were made
            "scan_id": int,
            "scenario_id": str,
            "phase": str,  # collect | setup | call | consume | ""
            "kind": str,  # a coverage status
            "reason": str,
            "location": str,  # file:line in function
            "traceback": str,
        },
        pk=("qualname", "position"),
    )
    for column in ("setup", "call", "inputs"):
        db.table("scenarios").add_column(column, str)


def _v10_stored_figures(db: sqlite_utils.Database) -> None:
    # Every slice's and API's printed figures, kept current by every writer (db/figures.py), so
    # readers need not work them out from the buckets; open_db fills them after migrating.
    from apiprof.db.figures import create_tables

    create_tables(db)


def _v11_growth_charts(db: sqlite_utils.Database) -> None:
    # Every charted growth fit drawn (db/charts.py), kept current by every writer, so a docs
    # build reads the charts instead of drawing them; open_db draws them after migrating.
    from apiprof.db.charts import create_table

    create_table(db)


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _v1_core,
    _v2_growth_and_module_index,
    _v3_scan_owner,
    _v4_machine_speed,
    _v5_merged_tasks,
    _v6_isolation_and_scan_uid,
    _v7_collection,
    _v8_sub_buckets,
    _v9_failures_and_inputs,
    _v10_stored_figures,
    _v11_growth_charts,
]
SCHEMA_VERSION = len(MIGRATIONS)
READABLE_SINCE = 2
"""The oldest schema the readers (Sphinx, the language server, ``apiprof show``) can use as it
is: later migrations only add what scanning needs, so a read-only open need not migrate."""


class Readable(Protocol):
    """What the queries need of a database: ``sqlite_utils.Database`` and :class:`Reader` both."""

    def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> sqlite3.Cursor: ...

    def table_names(self) -> list[str]: ...


D = TypeVar("D", bound=Readable)


class Reader:
    """A read-only database on a plain ``sqlite3`` connection (see :func:`open_reader`)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> sqlite3.Cursor:
        return self.conn.execute(sql) if parameters is None else self.conn.execute(sql, parameters)

    def table_names(self) -> list[str]:
        query = "SELECT name FROM sqlite_master WHERE type = 'table'"
        return [row[0] for row in self.conn.execute(query)]

    def close(self) -> None:
        self.conn.close()


def schema_version(db: Readable) -> int:
    if "meta" not in db.table_names():
        return 0
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(db: sqlite_utils.Database, target: int = SCHEMA_VERSION) -> int:
    """Apply the migrations between the file's version and ``target``; returns the new version.
    Each step holds the write lock from reading the version to committing its result."""
    current = schema_version(db)
    version = current
    while version < target:
        with immediate(db):
            version = schema_version(db)  # another process may have migrated meanwhile
            if version >= target:
                break
            version += 1
            if version == 1:
                db.table("meta").create({"key": str, "value": str}, pk="key")
                db.table("meta").insert({"key": "app", "value": APP_ID})
            MIGRATIONS[version - 1](db)
            db.table("meta").upsert({"key": "schema_version", "value": str(version)}, pk="key")
    return max(version, target)


class immediate:
    """``with immediate(db):`` a write transaction that takes the lock at its start (``BEGIN
    IMMEDIATE``), waiting up to the busy timeout: no read-then-upgrade deadlock, which SQLite
    answers with an immediate "locked" whatever the timeout. Commits, or rolls back on error."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.conn = db.conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        if kind is None:
            self.conn.commit()
        else:
            self.conn.rollback()


def readonly_uri(path: str | Path, *, immutable: bool = False) -> str:
    """A SQLite URI that opens ``path`` read-only: a proper ``file:`` URI, so a ``#``, ``?`` or
    ``%`` in a directory name stays part of the path instead of starting a fragment or query.
    ``immutable`` reads files the reader cannot write beside (no ``-shm`` of a WAL file can be
    made in a read-only folder): SQLite then takes no locks, so a file changed meanwhile by
    another process may read inconsistently."""
    return Path(path).absolute().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")


def open_db(
    path: str | Path = DEFAULT_DB,
    *,
    create: bool = True,
    readonly: bool = False,
    timeout: float = 30.0,
    another: str = "pass another --db path",
) -> sqlite_utils.Database:
    """Open (and if needed create and migrate) an apiprof database.

    Raises :class:`DatabaseError` with a next step for files that are missing, locked, not
    SQLite, not apiprof's, or written by a newer apiprof. ``timeout`` is how long to wait for
    another process's write lock; ``another`` says how the reader names a different file (the
    editor's setting is not the CLI's ``--db``).
    """
    import sqlite_utils

    from apiprof.db import charts, figures

    path = Path(path)
    db = _checked(path, readonly, create, timeout, another, sqlite_utils.Database)
    if readonly:
        return db
    try:
        db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        _switch_to_wal(db, timeout)
        db.execute("PRAGMA synchronous = NORMAL")
        migrate(db)
        figures.refresh_if_stale(db)
        charts.refresh_if_stale(db)  # drawn from the figures
    except sqlite3.OperationalError as exc:
        raise _locked(exc, path, another) or DatabaseError(f"{path}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(
            f"{path}: the database cannot be used ({exc}); pass another --db path or restore a copy"
        ) from exc
    return db


def _locked(exc: sqlite3.Error, path: Path, another: str) -> DatabaseError | None:
    """The error for a database another process holds locked (None for other failures)."""
    if "locked" in str(exc) or "busy" in str(exc):
        return DatabaseError(
            f"{path}: the database is locked by another process; wait for it or {another}"
        )
    return None


def open_reader(
    path: str | Path, *, timeout: float = 30.0, another: str = "pass another --db path"
) -> Reader:
    """``open_db(path, readonly=True)`` (same checks, same errors) as a :class:`Reader`, for
    readers that only run queries: importing sqlite-utils costs more than a docs build's reads."""
    return _checked(Path(path), True, False, timeout, another, Reader)


def _checked(
    path: Path,
    readonly: bool,
    create: bool,
    timeout: float,
    another: str,
    wrap: Callable[[sqlite3.Connection], D],
) -> D:
    """The connection ``wrap``ped, once it is known to be an apiprof database this apiprof can
    read (read-only: without migrating) or migrate."""
    if not path.exists() and (readonly or not create):
        raise DatabaseError(
            f"{path}: no such database; run `apiprof-scan PACKAGE --db {path}` to create it"
        )
    try:
        if readonly:
            conn = _connect_readonly(path, timeout)
        else:
            conn = sqlite3.connect(str(path), timeout=timeout, check_same_thread=False)
        db = wrap(conn)
        tables = db.table_names()
    except sqlite3.DatabaseError as exc:
        unusable = DatabaseError(f"{path}: not a usable SQLite database ({exc}); {another}")
        raise _locked(exc, path, another) or unusable from exc
    if tables and "meta" not in tables:
        raise DatabaseError(f"{path}: this SQLite file was not written by apiprof; {another}")
    if "meta" in tables:
        app = db.execute("SELECT value FROM meta WHERE key = 'app'").fetchone()
        if not app or app[0] != APP_ID:
            raise DatabaseError(f"{path}: this SQLite file was not written by apiprof; {another}")
    if readonly and not tables:
        raise DatabaseError(
            f"{path}: the database is empty (no scan has written to it); run "
            f"`apiprof-scan PACKAGE --db {path}` to fill it"
        )
    version = schema_version(db)
    if version > SCHEMA_VERSION:
        raise DatabaseError(
            f"{path}: written by a newer apiprof (schema {version} > {SCHEMA_VERSION}); upgrade apiprof"
        )
    if readonly and version < READABLE_SINCE:
        raise DatabaseError(
            f"{path}: schema {version} is older than {READABLE_SINCE}; open it once read-write to migrate "
            f"(any `apiprof-scan PACKAGE --db {path}` does)"
        )
    return db


def _switch_to_wal(db: sqlite_utils.Database, timeout: float) -> None:
    """``PRAGMA journal_mode = WAL``, retried: SQLite answers "locked" at once, without its
    busy handler, while another connection creating the same new file holds its lock."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def _connect_readonly(path: Path, timeout: float) -> sqlite3.Connection:
    return sqlite3.connect(
        usable_readonly_uri(path), uri=True, timeout=timeout, check_same_thread=False
    )


def usable_readonly_uri(path: str | Path) -> str:
    """The read-only URI that opens ``path``: plain, or immutable when the reader cannot make
    the files a WAL database needs beside it (a read-only file or folder)."""
    plain = readonly_uri(path)
    try:
        probe = sqlite3.connect(plain, uri=True)
    except sqlite3.OperationalError:
        return readonly_uri(path, immutable=True)
    try:
        probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return plain
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "unable to open" in text or "readonly" in text or "read-only" in text:
            return readonly_uri(path, immutable=True)
        return plain  # another problem: the caller meets it and reports it
    finally:
        probe.close()
