"""The scan pipeline: discover → plan → run → bucket → store, one package into one database.

    summary = scan("textwrap", db_path="apiprof.db")

Every step that runs the package's code (importing it, collecting and running scenarios, even
calibrating the probes) happens in confined worker processes (:mod:`apiprof.engine.isolation.pool`),
a fresh one per entry point; this process only plans, checks, collates and writes. It trusts
nothing a worker sends (the pool checks every reply against its task), and reports honestly:
an entry point whose code, or a thread it started, tried something the sandbox forbids is
``blocked`` with the reason and keeps no measurements; what a module's top-level code tried is
blamed on that module's import. The isolation the workers got is stored with the scan.

Results are stored per entry point in their own transaction as they arrive, so an interrupted
scan keeps everything measured so far, and ``resume=True`` continues the package's last
unfinished scan (one resuming process at a time), skipping entry points that already have a
coverage row from it. A database that fails mid-scan ends it with a
:class:`~apiprof.errors.DatabaseError` (exit code 3), the scan marked interrupted where the file
still allows it.

With ``tests=PATH`` the package's own pytest suite is one more scenario (:mod:`~apiprof.engine.testsuite`).

With ``jobs > 1`` scenarios run in parallel workers: the sampled CPU time stays trustworthy, wall
time only while there are idle cores for every worker (workers compete for cores and caches).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence, Set
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

import sqlite_utils

from apiprof import errors
from apiprof.db.query import summaries
from apiprof.db.schema import DEFAULT_DB, immediate, open_db
from apiprof.db.store import (
    begin_scan,
    finish_scan,
    record_scan_conditions,
    store_batch,
    store_entry_points,
    take_over_scan,
)
from apiprof.engine.discovery.discover import Discovery
from apiprof.engine.isolation.confine import (
    Isolation,
    Level,
    clean_up_after_killed_scans,
    package_location,
)
from apiprof.engine.isolation.pool import Task, TaskResult, WorkerOptions, WorkerPool
from apiprof.engine.isolation.protocol import (
    Attempt,
    Blame,
    Calibrate,
    Calibrated,
    Discover,
    Discovered,
    EntryFinished,
    MeasureSettings,
    ProfileEntry,
    Refused,
)
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, ScenarioSpec
from apiprof.engine.testsuite import SuiteRun, resolve_suite_path, run_test_suite
from apiprof.model.checks import qualname_problem, within
from apiprof.model.owner import owner_of_row
from apiprof.model.records import (
    Calibration,
    Coverage,
    CoverageRecord,
    Disturbance,
    EntryKind,
    EntryPoint,
    Environment,
    ScanBatch,
)

T = TypeVar("T")

NOT_PROFILED_ORDER = [
    Coverage.BLOCKED,
    Coverage.MEMORY,
    Coverage.TIMED_OUT,
    Coverage.CRASHED,
    Coverage.IMPORT_FAILED,
    Coverage.NO_ARGUMENTS,
    Coverage.SKIPPED,
]
"""When several scenarios of one entry point fail differently, the first reason here is shown."""


BUNDLED_SCENARIOS = Path(__file__).parent / "scenarios" / "packs"
"""Scenario files apiprof ships for packages no automatic source covers well (``<package>.toml``)."""


@dataclass(frozen=True)
class ScanOptions:
    """Everything that shapes a scan. Stored with the scan (JSON) so ``resume`` repeats it."""

    scenario_files: tuple[str, ...] = ()
    bundled_scenarios: bool = True  # add the scenario file apiprof ships for the package, if any
    docstrings: bool = True  # run ``>>>`` examples as scenarios
    synthesize: bool = True  # synthesise arguments from annotations and defaults
    sizes: tuple[int, ...] = DEFAULT_SIZES  # input sizes for synthesised sized scenarios
    # minimum measured runs per scenario size and pass (a scenario file may say otherwise)
    repeat: int = 20
    max_seconds: float = 2.0  # cap per pass, scenario and size (an expensive call keeps 1 run)
    time_budget: float = 0.01  # seconds of runs per timing pass, scenario and size
    jobs: int = 1
    call_timeout: float = 10.0  # seconds for one call of a scenario
    # seconds for all scenarios of one entry point; the worker is then killed
    scenario_timeout: float = 120.0
    # seconds for importing the package and listing its entry points
    discovery_timeout: float = 300.0
    memory_mb: int = 2048  # address-space cap per worker
    # the audit-hook sandbox guard (resource limits and temp cwd apply regardless)
    guard: bool = True
    python_path: tuple[str, ...] = ()  # extra import paths for workers (e.g. a source checkout)
    # seconds to wait while another process holds the database's write lock
    db_timeout: float = 30.0
    # the package's pytest suite (file or directory), profiled as one scenario; "" = off
    tests: str = ""
    # seconds for every run of the test suite together; the worker is then killed
    tests_timeout: float = 900.0
    # "auto" (strict where possible, else process, said loudly), "strict" (or refuse), "process"
    isolation: str = Isolation.AUTO.value
    # entry points per worker: 1 = a fresh worker for each (more only to measure what that costs)
    tasks_per_worker: int = 1
    # profile only these entry points (qualified names); empty = every one discovered
    only: tuple[str, ...] = ()

    # Options a resumed scan takes from the original (they decide which scenarios exist).
    RESUMED_FIELDS = (
        "scenario_files",
        "bundled_scenarios",
        "docstrings",
        "synthesize",
        "sizes",
        "repeat",
        "max_seconds",
        "time_budget",
        "tests",
        "only",
    )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScanOptions:
        known = {f.name for f in fields(cls)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
        return cls(**values)  # type: ignore[arg-type]  # stored by to_json, so the types match

    def scenario_files_for(self, package: str) -> tuple[str, ...]:
        """The user's scenario files plus, unless turned off, the one shipped for ``package``."""
        bundled = BUNDLED_SCENARIOS / f"{package.split('.')[0]}.toml"
        if self.bundled_scenarios and bundled.is_file():
            return (*self.scenario_files, str(bundled))
        return self.scenario_files

    def worker_options(self, package: str = "") -> WorkerOptions:
        """How workers run; ``package`` (and the files the scan reads) must be readable in them."""
        env = {}
        if self.python_path:
            inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
            env["PYTHONPATH"] = os.pathsep.join([*map(str, self.python_path), *inherited])
        location = package_location(package) if package else ""
        readable = [*map(str, self.python_path), *self.scenario_files, self.tests, location]
        return WorkerOptions(
            memory_mb=self.memory_mb,
            call_timeout=self.call_timeout,
            scenario_timeout=self.scenario_timeout,
            guard=self.guard,
            env=env,
            isolation=Isolation(self.isolation),
            max_tasks=self.tasks_per_worker,
            readable=tuple(os.path.abspath(p) for p in readable if p),
        )

    def validate(self) -> None:
        problems = []
        if self.jobs < 1:
            problems.append("--jobs must be at least 1")
        if not self.sizes or any(s < 1 for s in self.sizes):
            problems.append("--sizes must be positive integers, e.g. 10,100,1000")
        if self.repeat < 1:
            problems.append("--min-runs must be at least 1")
        if not 0 <= self.time_budget <= self.max_seconds:
            problems.append(
                f"--time-budget must be between 0 and the per-pass cap ({self.max_seconds:g} s)"
            )
        if (
            min(
                self.call_timeout, self.scenario_timeout, self.discovery_timeout, self.tests_timeout
            )
            <= 0
        ):
            problems.append("timeouts must be positive numbers of seconds")
        if self.memory_mb < 64:
            problems.append("--memory-mb must be at least 64 (the interpreter alone needs some)")
        if self.isolation not in set(Isolation):
            problems.append(f"--isolation must be one of {', '.join(Isolation)}")
        if self.tasks_per_worker < 1:
            problems.append("tasks_per_worker must be at least 1")
        if problems:
            raise errors.UsageError("; ".join(problems))


@dataclass(frozen=True)
class ScanProgress:
    """Reported to the ``progress`` callback after every step."""

    # "isolation", "calibrate", "discover", "tests" (only with --tests), "profile", "done"
    stage: str
    done: int = 0
    total: int = 0
    qualname: str = ""  # the entry point just finished (profile stage)
    status: str = ""  # its coverage status; the level reached (isolation stage)
    detail: str = ""  # what that level consists of, and why it is not strict (isolation stage)


@dataclass(frozen=True)
class CostLine:
    """One row of the "most expensive entry points" table."""

    qualname: str
    time_median_ns: float | None
    time_p90_ns: float | None
    alloc_median_bytes: float | None
    samples: int
    growth: str


@dataclass(frozen=True)
class ScanSummary:
    """What a scan did, for the end-of-scan table and ``--summary-json``."""

    package: str
    version: str
    scan_id: int
    db_path: str
    status: str  # "finished" or "interrupted"
    discovered: int  # public entry points found
    profiled: int
    # entry points without a profile
    not_profiled: list[CoverageRecord] = field(default_factory=list)
    import_failures: dict[str, str] = field(default_factory=dict)  # module -> error
    resumed_skipped: int = 0  # entry points already done by the resumed scan
    elapsed_seconds: float = 0.0
    workers_started: int = 0
    most_expensive: list[CostLine] = field(default_factory=list)
    tests: SuiteRun | None = None  # the --tests scenario, when asked for
    machine_speed_ns: float = 0.0  # the machine-speed index stored with the scan (lower = faster)
    disturbance: Disturbance = field(default_factory=Disturbance)  # other load seen while measuring
    isolation: str = ""  # the isolation the workers got (also stored with the scan)
    # module -> what its top-level code (or a thread it started) tried that the sandbox forbids
    blocked_at_import: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # isolation below strict, names ignored...

    @property
    def coverage_counts(self) -> dict[str, int]:
        counts = {str(Coverage.PROFILED): self.profiled}
        for record in self.not_profiled:
            counts[str(record.status)] = counts.get(str(record.status), 0) + 1
        return counts

    @property
    def profiled_fraction(self) -> float:
        return self.profiled / self.discovered if self.discovered else 0.0

    def to_json(self) -> dict[str, Any]:
        """The documented ``--summary-json`` form (see docs/cli.md)."""
        return {
            "package": self.package,
            "version": self.version,
            "scan_id": self.scan_id,
            "database": self.db_path,
            "status": self.status,
            "discovered": self.discovered,
            "profiled": self.profiled,
            "profiled_fraction": round(self.profiled_fraction, 4),
            "coverage": self.coverage_counts,
            "not_profiled": [
                {"qualname": r.qualname, "status": str(r.status), "reason": r.reason}
                for r in self.not_profiled
            ],
            "import_failures": dict(self.import_failures),
            "resumed_skipped": self.resumed_skipped,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "most_expensive": [asdict(line) for line in self.most_expensive],
            "tests": self.tests.to_json() if self.tests else None,
            "machine_speed_ns": self.machine_speed_ns or None,
            "disturbance": self.disturbance.to_json(),
            "isolation": self.isolation,
            "blocked_at_import": {m: list(r) for m, r in self.blocked_at_import.items()},
            "warnings": list(self.warnings),
        }


# -- the pipeline ----------------------------------------------------------------------------


@dataclass
class Plan:
    """The plan stage's output: one task per entry point, and verdicts known without running."""

    requests: list[ProfileEntry]  # one per entry point
    known: list[CoverageRecord]  # import failures
    skipped: int = 0  # entry points a resumed scan had finished already


def scan(
    package: str,
    *,
    db_path: str | Path = DEFAULT_DB,
    options: ScanOptions | None = None,
    resume: bool = False,
    progress: Callable[[ScanProgress], None] | None = None,
) -> ScanSummary:
    """Profile every public entry point of ``package`` into the database at ``db_path``."""
    options = options or ScanOptions()
    options.validate()
    report = progress or (lambda event: None)
    check_scenario_files(options.scenario_files)
    options = with_absolute_suite_path(options)
    started = time.monotonic()
    warnings = [note] if (note := clean_up_after_killed_scans().describe()) else []
    db = open_db(db_path, timeout=options.db_timeout)
    try:
        return _scan(db, package, db_path, options, resume, report, started, warnings)
    except sqlite3.Error as exc:
        raise errors.DatabaseError(
            f"{db_path}: the database failed during the scan ({exc}); the scan is marked "
            "interrupted where the file still allows it. Check the file (sqlite3 "
            f"{db_path} 'PRAGMA integrity_check'), restore a copy or use another --db"
        ) from exc
    finally:
        db.conn.close()


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
            plan = plan_scan(
                found, options, done=completed_entry_points(db, scan_id) if resumed else set()
            )
            plan.known += blocked_at_import.records()
            suite = None
            if options.tests and plan.requests:
                report(ScanProgress("tests"))
                suite = run_test_suite(
                    found.discovery.package,
                    [ep.qualname for ep in found.discovery.entry_points],
                    options.tests,
                    options.worker_options(package),
                    timeout=options.tests_timeout,
                    max_seconds=options.max_seconds,
                    calibration=calibration,
                )
            batches = bucket_results(
                run_plan(pool, plan, options, calibration), suite, blocked_at_import
            )

            def noted() -> Generator[tuple[str, ScanBatch], None, None]:
                nonlocal seen
                try:
                    for qualname, batch in batches:
                        seen += batch.disturbance
                        yield qualname, batch
                finally:
                    batches.close()  # stops the run at once, as store_results expects

            try:
                status = store_results(db, noted(), plan, scan_id, environment.id, package, report)
            finally:
                record_scan_conditions(db, scan_id, calibration.machine_speed_ns, seen)
            warnings += busy_warnings(seen)
            workers = pool.started + (suite is not None)
    finally:
        if scan_id and status != "finished":  # stopped before store_results could say so
            with contextlib.suppress(sqlite3.Error):
                finish_scan(db, scan_id, "interrupted")
    elapsed = time.monotonic() - started
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
    )
    report(ScanProgress("done", result.discovered, result.discovered))
    return result


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


class ImportAttempts:
    """What modules' top-level code (or threads it started) tried, gathered over the scan:
    from discovery, which imports everything, and from each entry point's worker, which imports
    its module again (the same attempts, reported once) or imports more on first use."""

    def __init__(self) -> None:
        self.by_module: dict[str, dict[str, None]] = {}  # module -> ordered reasons
        self.changed: set[str] = set()

    def add(self, attempts: Iterable[Attempt]) -> None:
        for attempt in attempts:
            if attempt.by_entry:
                continue
            reason = describe_attempt(attempt)
            reasons = self.by_module.setdefault(attempt.module, {})
            if reason not in reasons:
                reasons[reason] = None
                self.changed.add(attempt.module)

    def records(self) -> list[CoverageRecord]:
        """Coverage rows for the modules with new attempts since the last call."""
        rows = [
            CoverageRecord(
                module,
                Coverage.BLOCKED,
                f"while importing {module}: {join_reasons(self.by_module[module])}",
            )
            for module in sorted(self.changed)
            if is_module_name(module)
        ]
        self.changed.clear()
        return rows

    def reasons(self, package: str, db: sqlite_utils.Database) -> dict[str, list[str]]:
        """Every module of ``package`` whose import tried something (this run's and, for a
        resumed scan, earlier runs' as stored)."""
        found = {m: list(r) for m, r in self.by_module.items() if within(m, package)}
        names = {
            r[0]
            for r in db.execute("SELECT qualname FROM entry_points WHERE package = ?", [package])
        }
        for qualname, reason in db.execute(
            "SELECT qualname, reason FROM coverage WHERE package = ? AND status = ?",
            [package, str(Coverage.BLOCKED)],
        ):
            if qualname not in names and qualname not in found:
                found[qualname] = [reason]
        return dict(sorted(found.items()))


def is_module_name(name: str) -> bool:
    return not qualname_problem(name)


def store_results(
    db: sqlite_utils.Database,
    batches: Generator[tuple[str, ScanBatch], None, None],
    plan: Plan,
    scan_id: int,
    environment_id: str,
    package: str,
    report: Callable[[ScanProgress], None],
) -> str:
    """Store each entry point's batch in its own transaction as it arrives; returns the scan's
    final status ("finished", or "interrupted" when anything — Ctrl-C included — stops it)."""
    status = "interrupted"
    try:
        store_batch(
            db,
            ScanBatch(coverage=plan.known),
            environment_id=environment_id,
            package=package,
            scan_id=scan_id,
        )
        report(ScanProgress("profile", 0, len(plan.requests)))
        for done, (qualname, batch) in enumerate(batches, start=1):
            store_batch(db, batch, environment_id=environment_id, package=package, scan_id=scan_id)
            report(
                ScanProgress(
                    "profile", done, len(plan.requests), qualname, str(batch.coverage[0].status)
                )
            )
        status = "finished"
    finally:
        batches.close()  # stops the run: busy workers are killed at once
        try:
            finish_scan(db, scan_id, status)
        except sqlite3.Error:
            if status == "finished":
                raise  # otherwise an error is on its way already; it is the one to report
    return status


def claim_write_access(db: sqlite_utils.Database, db_path: str | Path) -> None:
    """Fail now, not after discovery, if another process holds the write lock."""
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        raise errors.DatabaseError(
            f"{db_path}: the database is locked by another process ({exc}); wait for it to finish or use another --db"
        ) from exc


def with_absolute_suite_path(options: ScanOptions) -> ScanOptions:
    """``options`` with ``tests`` made absolute (workers run elsewhere; resume runs from anywhere)."""
    return replace(options, tests=resolve_suite_path(options.tests)) if options.tests else options


def check_scenario_files(paths: Sequence[str]) -> list[ScenarioSpec]:
    """Parse every scenario file here (parsing runs no code) so a typo fails fast with
    file:line; the specs read here are the ones the scan trusts."""
    from apiprof.engine.scenarios.files import load_scenario_file

    specs = []
    for path in paths:
        if not Path(path).is_file():
            raise errors.ScenarioFileError(str(path), None, "no such scenario file; check the path")
        specs += load_scenario_file(path)
    return specs


def calibrate_in_worker(pool: WorkerPool) -> Calibration:
    """Probe costs, measured in a worker (the interpreter and settings that will be measured)."""
    reply = expect(pool.request(Calibrate(), timeout=120), Calibrated, "calibrating the profiler")
    return reply.calibration


def discover_package(
    pool: WorkerPool, package: str, options: ScanOptions, warnings: list[str] | None = None
) -> tuple[Discovered, TaskResult]:
    """Import the package in a worker and list its entry points; read the scenario files here.
    What the worker listed is checked: names that are not Python names inside the package are
    dropped (and said in ``warnings``)."""
    specs = check_scenario_files(
        [str(Path(p).resolve()) for p in options.scenario_files_for(package)]
    )
    result = pool.request(Discover(package, []), timeout=options.discovery_timeout)
    found = expect(result, Discovered, f"discovering {package!r}")
    discovery, dropped = checked_discovery(found.discovery, package)
    if dropped and warnings is not None:
        shown = ", ".join(repr(name[:80]) for name in dropped[:5])
        warnings.append(
            f"discovery listed {len(dropped)} name(s) that are not Python names inside "
            f"{package}; they were ignored: {shown}"
        )
    return Discovered(discovery, specs), result


def checked_discovery(discovery: Discovery, package: str) -> tuple[Discovery, list[str]]:
    """``discovery`` without names that are not dotted Python names inside ``package`` (an
    ``__all__`` entry like ``"../x"`` would otherwise become a key, a file name, a page)."""
    dropped: list[str] = []

    def fine(name: str) -> bool:
        ok = not qualname_problem(name) and within(name, package)
        if not ok:
            dropped.append(name)
        return ok

    entries = [
        replace(entry, aliases=tuple(a for a in entry.aliases if fine(a)))
        for entry in discovery.entry_points
        if fine(entry.qualname) and fine(entry.module)
    ]
    failures = {m: e for m, e in discovery.import_failures.items() if fine(m)}
    version = discovery.version if discovery.version.isprintable() else ""
    checked = replace(
        discovery, version=version[:100], entry_points=entries, import_failures=failures
    )
    return checked, dropped


def expect(result: TaskResult, kind: type[T], doing: str) -> T:
    """The reply of a non-scenario request, or the error it deserves."""
    if isinstance(result.reply, kind):
        return result.reply
    if isinstance(result.reply, Refused):
        raise errors.error_class(result.reply.code)(result.reply.message)
    why = result.failure.reason if result.failure else f"unexpected {type(result.reply).__name__}"
    raise errors.MeasurementError(f"{doing} failed in the sandboxed worker: {why}")


def plan_scan(
    found: Discovered, options: ScanOptions, done: Set[str] = frozenset(), *, profile: bool = True
) -> Plan:
    """One task per entry point: collect its docstring/synthesised scenarios, add its file
    scenarios, profile them all. Scenario files may also target names discovery did not list."""
    discovery = found.discovery
    known = [
        CoverageRecord(module, Coverage.IMPORT_FAILED, f"importing {module} failed: {error}")
        for module, error in sorted(discovery.import_failures.items())
        if module not in done
    ]
    file_specs: dict[str, list[ScenarioSpec]] = defaultdict(list)
    for spec in found.specs:
        file_specs[spec.qualname].append(spec)
    entries = {entry.qualname: entry for entry in discovery.entry_points}
    if options.only:
        entries = {name: entry for name, entry in entries.items() if name in options.only}
        file_specs = defaultdict(list, {k: v for k, v in file_specs.items() if k in options.only})
    for qualname in sorted(set(file_specs) - set(entries)):
        module = qualname.rsplit(".", 1)[0]
        entries[qualname] = EntryPoint(qualname, discovery.package, module, EntryKind.FUNCTION)
    requests, skipped = [], 0
    for qualname, entry in entries.items():
        if qualname in done:
            skipped += 1
            continue
        request = ProfileEntry(
            package=discovery.package,
            entry=entry,
            specs=file_specs.get(qualname, []),
            docstrings=options.docstrings,
            synthesize=options.synthesize,
            sizes=list(options.sizes),
            profile=profile,
        )
        requests.append(request)
    return Plan(requests, known, skipped)


def run_plan(
    pool: WorkerPool, plan: Plan, options: ScanOptions, calibration: Calibration | None
) -> Iterator[TaskResult]:
    """Run every task on the pool; results arrive in completion order."""
    settings = MeasureSettings(
        calibration, options.repeat, options.max_seconds, options.call_timeout, options.time_budget
    )
    return pool.run(
        Task(request.entry.qualname, replace(request, settings=settings))
        for request in plan.requests
    )


def busy_warnings(seen: Disturbance) -> list[str]:
    """What a person should know when the machine stayed busy while measuring."""
    if not seen.busy:
        return []
    return [
        f"the machine stayed busy while measuring: {seen.slow_references} of {seen.references} "
        "reference timings ran more than 1.5x slower than calibrated and "
        f"{seen.disturbed_runs} of {seen.runs} runs were preempted (preempted time is subtracted, "
        "a shared CPU is not); figures may read high — scan again on a quieter machine for "
        "reference numbers"
    ]


def bucket_results(
    results: Iterable[TaskResult],
    suite: SuiteRun | None = None,
    blocked_at_import: ImportAttempts | None = None,
) -> Generator[tuple[str, ScanBatch], None, None]:
    """One batch per entry point: the measurements of its scenarios (the test suite's among
    them, when ``suite`` reached it) and its coverage verdict. An entry point whose code, or a
    thread it started, tried something forbidden is blocked and keeps no measurements: they
    describe runs whose forbidden operations were refused (and a worker that may have lied).
    What an import tried goes to the module's row (``blocked_at_import``)."""
    blocked_at_import = blocked_at_import or ImportAttempts()
    for result in results:
        qualname = result.task.id
        blocked_at_import.add(result.attempts)
        batch = ScanBatch()
        own = [
            describe_attempt(a) for a in result.attempts if a.blame is Blame.ENTRY or not a.module
        ]
        outcomes: list[tuple[Coverage, str]] = []
        for partial in result.partials:
            spec = partial.scenario
            batch.scenarios.append(spec.to_scenario())
            batch.disturbance += partial.disturbance
            if partial.failure is None:
                batch.measurements += partial.measurements
                batch.edges += partial.edges
                outcomes.append((Coverage.PROFILED, ""))
            else:
                reason = f"{partial.failure.reason} [scenario {spec.id}]"
                outcomes.append((partial.failure.kind, reason))
        # the task as a whole failed: collection, or the worker died
        if (failure := result.failure) is not None:
            outcomes.append((failure.kind, failure.reason))
        if own:
            batch.measurements, batch.edges = [], []
            broke = (
                [failure.reason] if failure is not None and failure.kind is Coverage.BLOCKED else []
            )
            record = CoverageRecord(qualname, Coverage.BLOCKED, join_reasons([*broke, *own]))
        else:
            if suite is not None:
                outcomes += suite.add_to_batch(batch, qualname, outcomes)
            record = combine_outcomes(qualname, outcomes)
        batch.coverage = [record, *blocked_at_import.records()]
        yield qualname, batch


MAX_REASONS = 3
"""Attempts named in one coverage row (the first ones; all of them were refused)."""


def describe_attempt(attempt: Attempt) -> str:
    """An entry point's attempt, said for its coverage row."""
    reason = attempt.reason if len(attempt.reason) <= 300 else attempt.reason[:299] + "…"
    if attempt.blame is Blame.THREAD:
        return f"a background thread it started {reason}"
    return reason


def join_reasons(reasons: Iterable[str]) -> str:
    """Distinct reasons, the first :data:`MAX_REASONS` of them, and how many more there were."""
    distinct = list(dict.fromkeys(reasons))
    shown = "; ".join(distinct[:MAX_REASONS])
    more = len(distinct) - MAX_REASONS
    return shown + (f" (and {more} more)" if more > 0 else "")


def combine_outcomes(qualname: str, outcomes: Sequence[tuple[Coverage, str]]) -> CoverageRecord:
    """Profiled if any scenario profiled it; otherwise the most telling failure."""
    if any(status == Coverage.PROFILED for status, _ in outcomes):
        return CoverageRecord(qualname, Coverage.PROFILED)
    if not outcomes:
        return CoverageRecord(qualname, Coverage.NO_ARGUMENTS, "no scenario source could call it")
    rank = {status: i for i, status in enumerate(NOT_PROFILED_ORDER)}
    status, reason = min(outcomes, key=lambda o: rank.get(o[0], len(rank)))
    return CoverageRecord(qualname, status, reason)


# -- resume and summary ----------------------------------------------------------------------


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


def last_scan_status(db_path: str | Path, package: str) -> str | None:
    """Status of the package's newest scan in the database ("running", "interrupted",
    "finished"), or None when the file or the package's scans do not exist."""
    if not Path(db_path).exists():
        return None
    db = open_db(db_path, readonly=True)
    try:
        row = db.execute(
            "SELECT status FROM scans WHERE package = ? ORDER BY id DESC LIMIT 1", [package]
        ).fetchone()
    finally:
        db.conn.close()
    return row[0] if row else None


def completed_entry_points(db: sqlite_utils.Database, scan_id: int) -> set[str]:
    return {r[0] for r in db.execute("SELECT qualname FROM coverage WHERE scan_id = ?", [scan_id])}


def summarize_scan(
    db: sqlite_utils.Database,
    found: Discovered,
    scan_id: int,
    db_path: str,
    status: str,
    skipped: int,
    elapsed: float,
    workers: int,
    top: int = 10,
    *,
    tests: SuiteRun | None = None,
    only: Set[str] = frozenset(),
) -> ScanSummary:
    """The summary of one scan (of the entry points in ``only``, when given)."""
    discovery = found.discovery
    names = [ep.qualname for ep in discovery.entry_points if not only or ep.qualname in only]
    coverage = {
        q: (s, r)
        for q, s, r in db.execute(
            "SELECT qualname, status, reason FROM coverage WHERE package = ?", [discovery.package]
        ).fetchall()
    }
    profiled = [q for q in names if coverage.get(q, ("",))[0] == Coverage.PROFILED]
    not_profiled = [
        CoverageRecord(
            q,
            Coverage(coverage[q][0]) if q in coverage else Coverage.SKIPPED,
            coverage.get(q, ("", "not reached"))[1],
        )
        for q in names
        if coverage.get(q, ("",))[0] != Coverage.PROFILED
    ]
    costs = [
        CostLine(
            s.qualname,
            s.time_median_ns,
            s.time_p90_ns,
            s.alloc_median_bytes,
            s.samples,
            s.growth.growth_class if s.growth else "",
        )
        for s in (found.at_reference() for found in summaries(db, profiled).values())
        if s.time_median_ns is not None
    ]
    costs.sort(key=lambda line: -(line.time_median_ns or 0))
    return ScanSummary(
        package=discovery.package,
        version=discovery.version,
        scan_id=scan_id,
        db_path=db_path,
        status=status,
        discovered=len(names),
        profiled=len(profiled),
        not_profiled=not_profiled,
        import_failures=dict(discovery.import_failures),
        resumed_skipped=skipped,
        elapsed_seconds=elapsed,
        workers_started=workers,
        most_expensive=costs[:top],
        tests=tests,
    )


def write_scenario_scaffold(
    package: str, path: str | Path, *, options: ScanOptions | None = None, overwrite: bool = False
) -> tuple[int, int]:
    """Write a scaffold scenario file for the entry points no scenario source covers.

    Discovery and scenario collection run in sandboxed workers (one task per entry point, as
    in a scan, without profiling); returns ``(entries written, entry points discovered)``.
    """
    from apiprof.engine.scenarios.scaffold import write_scaffold

    options = options or ScanOptions()
    check_scenario_files(options.scenario_files)
    with WorkerPool(options.jobs, options.worker_options(package)) as pool:
        found, _ = discover_package(pool, package, options)
        plan = plan_scan(found, options, profile=False)
        covered = {
            r.task.id
            for r in run_plan(pool, plan, options, None)
            if isinstance(r.reply, EntryFinished) and r.reply.specs
        }
    written = write_scaffold(found.discovery, covered, Path(path), overwrite=overwrite)
    return written, len(found.discovery.entry_points)
