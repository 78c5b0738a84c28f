"""The scan spine: discover → plan → run → bucket → store, one package into one database."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Generator
from dataclasses import replace
from pathlib import Path

import sqlite_utils

from apiprof import errors
from apiprof.db.claim import claim, remove_if_unclaimed
from apiprof.db.schema import DEFAULT_DB, open_db
from apiprof.db.store import (
    begin_scan,
    finish_scan,
    record_scan_conditions,
    store_entry_points,
)
from apiprof.engine.discovery.discover import import_name_of
from apiprof.engine.isolation.confine import (
    Level,
    clean_up_after_killed_scans,
)
from apiprof.engine.isolation.pool import WorkerPool
from apiprof.engine.isolation.protocol import (
    Discovered,
)
from apiprof.engine.scan.bucket import ImportAttempts, bucket_results
from apiprof.engine.scan.discover import capture_in_worker, discover_package
from apiprof.engine.scan.drive import DriveReport, drive_held
from apiprof.engine.scan.options import ScanOptions, check_scenario_files, with_absolute_suite_path
from apiprof.engine.scan.plan import plan_scan
from apiprof.engine.scan.progress import ScanProgress
from apiprof.engine.scan.resume import (
    claim_resumed_scan,
    completed_entry_points,
    find_resumable_scan,
    record_isolation,
)
from apiprof.engine.scan.run import calibrate_in_worker, measure_settings, run_plan
from apiprof.engine.scan.store import claim_write_access, scans_stored, store_results
from apiprof.engine.scan.summary import ScanSummary, busy_warnings, summarize_scan
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.testsuite import run_test_suite
from apiprof.model.records import (
    Calibration,
    Disturbance,
    Environment,
    ScanBatch,
)


class ScanInterrupted(KeyboardInterrupt):
    """Ctrl-C (or ``kill``) stopped a scan; ``summary`` is what it had stored by then."""

    def __init__(self, summary: ScanSummary) -> None:
        super().__init__()
        self.summary = summary


def scan(
    package: str,
    *,
    db_path: str | Path = DEFAULT_DB,
    options: ScanOptions | None = None,
    resume: bool = False,
    progress: Callable[[ScanProgress], None] | None = None,
) -> ScanSummary:
    """Profile every public entry point of ``package`` into the database at ``db_path``.

    ``package`` may be a distribution name (``python-dateutil``); it is scanned under its
    import name. Interrupted, it raises :class:`ScanInterrupted` carrying the summary so far.
    """
    options = options or ScanOptions()
    options.validate()
    package = import_name_of(package)
    report = progress or (lambda event: None)
    check_scenario_files(options.scenario_files)
    options = with_absolute_suite_path(options)
    started = time.monotonic()
    warnings = [note] if (note := clean_up_after_killed_scans().describe()) else []
    with claim(db_path) as held:
        try:
            db = open_db(db_path, timeout=options.db_timeout)
        except errors.DatabaseError:
            if held.created:
                remove_if_unclaimed(held)
            raise
        try:
            return _scan(db, package, db_path, options, resume, report, started, warnings)
        except sqlite3.Error as exc:
            raise errors.DatabaseError(
                f"{db_path}: the database failed during the scan ({exc}); the scan is marked "
                "interrupted where the file still allows it. Check the file (sqlite3 "
                f"{db_path} 'PRAGMA integrity_check'), restore a copy or use another --db"
            ) from exc
        finally:
            empty = held.created and not scans_stored(db)
            db.conn.close()
            if empty:  # nothing was scanned: leave no empty database behind
                remove_if_unclaimed(held)


def _scan(
    db: sqlite_utils.Database,
    package: str,
    db_path: str | Path,
    options: ScanOptions,
    resume: bool,
    report: Callable[[ScanProgress], None],
    started: float,
    warnings: list[str],
) -> ScanSummary:
    claim_write_access(db, db_path)
    resumed = find_resumable_scan(db, package) if resume else None
    if resume and resumed is None:
        raise errors.UsageError(
            f"{db_path}: no unfinished scan of {package!r} to resume; run without --resume to start one"
        )
    if resumed is not None:  # same scenarios and calibration as the scan being continued
        claim_resumed_scan(db, db_path, package, int(resumed["id"]))
        stored = ScanOptions.from_json(resumed["options"])
        options = with_absolute_suite_path(
            replace(options, **{name: getattr(stored, name) for name in ScanOptions.RESUMED_FIELDS})
        )
    environment = Environment.current()
    scan_id = int(resumed["id"]) if resumed is not None else 0
    status = "interrupted"
    seen = Disturbance()  # other load seen while measuring
    interrupted = False
    found: Discovered | None = None
    driving = DriveReport()
    try:
        with WorkerPool(options.jobs, options.worker_options(package)) as pool:
            confinement = pool.settle()
            isolation = confinement.describe()
            report(ScanProgress("isolation", status=confinement.level, detail=isolation))
            if confinement.level is not Level.STRICT:
                warnings.append(f"isolation below strict — {isolation}")
            report(ScanProgress("calibrate"))
            calibration = (
                Calibration.from_json(resumed["calibration"])
                if resumed
                else calibrate_in_worker(pool)
            )
            report(ScanProgress("discover"))
            found, discovery_result = discover_package(pool, package, options, warnings)
            package = found.discovery.package
            blocked_at_import = ImportAttempts()
            blocked_at_import.add(discovery_result.attempts)
            if resumed is not None:
                record_isolation(db, scan_id, isolation)
            else:
                scan_id = begin_scan(
                    db,
                    package,
                    found.discovery.version,
                    environment,
                    calibration,
                    options.to_json(),
                    isolation,
                )
            store_entry_points(db, found.discovery.entry_points)
            done = completed_entry_points(db, scan_id) if resumed else set()
            captured: list[CapturedCall] = []
            if options.capture and len(done) < len(found.discovery.entry_points):
                report(ScanProgress("capture"))
                captured = capture_in_worker(pool, found, blocked_at_import)
            suite = None
            if options.tests and len(done) < len(found.discovery.entry_points):
                report(ScanProgress("tests"))
                suite = run_test_suite(
                    found.discovery.package,
                    [ep.qualname for ep in found.discovery.entry_points],
                    options.tests,
                    options.worker_options(package),
                    timeout=options.tests_timeout,
                    max_seconds=options.max_seconds,
                    calibration=calibration,
                    entries=found.discovery.entry_points,
                    capture=options.capture,
                )
                captured += suite.captured
            plan = plan_scan(found, options, done=done, captured=captured)
            plan.known += blocked_at_import.records()
            results = run_plan(pool, plan, options, calibration)
            if options.self_drive:  # entry points nothing could call, driven by the package
                settings = measure_settings(options, calibration)
                results = drive_held(pool, package, results, settings, driving, report)
            batches = bucket_results(results, suite, blocked_at_import)

            def noted() -> Generator[tuple[str, ScanBatch], None, None]:
                nonlocal seen
                try:
                    for qualname, batch in batches:
                        seen += batch.disturbance
                        yield qualname, batch
                finally:
                    batches.close()  # stops the run at once, as store_results expects

            try:
                status = store_results(
                    db, noted(), plan, scan_id, environment.id, package, report, options.jobs
                )
            finally:
                record_scan_conditions(db, scan_id, calibration.machine_speed_ns, seen)
            warnings += busy_warnings(seen)
            workers = pool.started + (suite is not None)
    except KeyboardInterrupt:
        if not scan_id or found is None:  # nothing of this run is stored yet
            raise
        interrupted = True
    finally:
        if scan_id and status != "finished":  # stopped before store_results could say so
            with contextlib.suppress(sqlite3.Error):
                finish_scan(db, scan_id, "interrupted")
    assert found is not None  # set before anything could be stored
    elapsed = time.monotonic() - started
    if interrupted:  # what was stored by then, for the summary an interrupted scan still writes
        result = summarize_scan(db, found, scan_id, str(db_path), status, 0, elapsed, 0)
    else:
        result = summarize_scan(
            db,
            found,
            scan_id,
            str(db_path),
            status,
            plan.skipped,
            elapsed,
            workers,
            tests=suite,
            only=set(options.only),
        )
    result = replace(
        result,
        machine_speed_ns=calibration.machine_speed_ns,
        disturbance=seen,
        isolation=isolation,
        blocked_at_import=blocked_at_import.reasons(found.discovery.package, db),
        warnings=warnings,
        self_drive=driving if driving.watched else None,
    )
    if interrupted:
        raise ScanInterrupted(result)
    report(ScanProgress("done", result.discovered, result.discovered))
    return result
