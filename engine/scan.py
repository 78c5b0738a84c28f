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
import importlib.machinery
import itertools
import json
import os
import re
import sqlite3
import time
from collections import defaultdict
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence, Set
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

import sqlite_utils

from apiprof import errors
from apiprof.db.claim import claim, remove_if_unclaimed
from apiprof.db.query import failures as failure_rows
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
from apiprof.engine.discovery.discover import Discovery, import_name_of
from apiprof.engine.isolation.confine import (
    Isolation,
    Level,
    clean_up_after_killed_scans,
    package_location,
)
from apiprof.engine.isolation.pool import Start, Task, TaskResult, WorkerOptions, WorkerPool
from apiprof.engine.isolation.protocol import (
    Attempt,
    Blame,
    Calibrate,
    Calibrated,
    Captured,
    CaptureExamples,
    Discover,
    Discovered,
    EntryFinished,
    MeasureSettings,
    ProfileEntry,
    Refused,
)
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, ScenarioSpec
from apiprof.engine.scenarios.synth import SOURCES
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
    Failure,
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
    # where argument types come from besides annotations (each switchable: --no-stubs ...)
    stubs: bool = True  # .pyi stubs: the package's own, types-* packages, jedi's typeshed
    docstring_types: bool = True  # :param int x:, numpydoc and Google sections
    subclasses: bool = True  # concrete subclasses and factories for classes that won't build
    observed: bool = True  # values the package's entry points return, where one is wanted
    heuristics: bool = True  # parameter names, how the body uses them, sibling defaults
    capture: bool = True  # arguments recorded from docstring examples and the --tests suite
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
    # how workers start: "zygote" (forked from a confined process that started once) or "fresh"
    worker_start: str = Start.ZYGOTE.value
    # profile only these entry points (qualified names); empty = every one discovered
    only: tuple[str, ...] = ()

    # Options a resumed scan takes from the original (they decide which scenarios exist).
    RESUMED_FIELDS = (
        "scenario_files",
        "bundled_scenarios",
        "docstrings",
        "synthesize",
        "stubs",
        "docstring_types",
        "subclasses",
        "observed",
        "heuristics",
        "capture",
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

    @property
    def argument_sources(self) -> list[str]:
        """The enabled argument sources beyond annotations, as the worker names them."""
        return [name for name in SOURCES if getattr(self, name)]

    def worker_options(self, package: str = "") -> WorkerOptions:
        """How workers run; ``package`` (and the files the scan reads) must be readable in them."""
        paths = self.import_paths(package)
        env = {"PYTHONPATH": os.pathsep.join(paths)} if paths else {}
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
            start=Start(self.worker_start),
            readable=tuple(os.path.abspath(p) for p in readable if p),
        )

    def import_paths(self, package: str = "") -> list[str]:
        """Where workers import from, as ``python -m`` and pytest would from here: the current
        directory first when ``package`` is there (a package of the project being scanned;
        any other folder stays out of the workers' sandbox), then ``python_path`` and the
        inherited ``PYTHONPATH`` — every entry made absolute, since workers run in a sandbox
        directory of their own."""
        inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        here = [os.getcwd()] if package and importable_from(os.getcwd(), package) else []
        paths = [*here, *map(str, self.python_path), *inherited]
        return list(dict.fromkeys(os.path.abspath(path) for path in paths))

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
        if self.worker_start not in set(Start):
            problems.append(f"--worker-start must be one of {', '.join(Start)}")
        if self.tasks_per_worker < 1:
            problems.append("tasks_per_worker must be at least 1")
        if problems:
            raise errors.UsageError("; ".join(problems))


def importable_from(folder: str, package: str) -> bool:
    """Whether ``package``'s top-level module is in ``folder`` (found without importing it)."""
    try:
        return importlib.machinery.PathFinder.find_spec(package.split(".")[0], [folder]) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class ScanProgress:
    """Reported to the ``progress`` callback after every step."""

    # "isolation", "calibrate", "discover", "capture", "tests" (only with --tests), "profile",
    # "done"
    stage: str
    done: int = 0
    total: int = 0
    qualname: str = ""  # the entry point just finished (profile stage)
    status: str = ""  # its coverage status; the level reached (isolation stage)
    detail: str = ""  # what that level consists of, and why it is not strict (isolation stage)
    running: tuple[str, ...] = ()  # the entry points being profiled now
    eta_seconds: float | None = None  # estimated seconds until the profile stage ends


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
class ReasonGroup:
    """Entry points not profiled for the same reason (details such as names and values
    replaced by ``…``), for a summary people can read."""

    status: Coverage
    reason: str
    qualnames: tuple[str, ...]


_DETAILS = [
    (re.compile(r" \[scenario [^\]]*\]"), ""),
    (re.compile(r"'[^']*'"), "'…'"),
    (re.compile(r'"[^"]*"'), '"…"'),
    (re.compile(r"<[^<>]* at 0x[0-9a-f]+>"), "<…>"),
    (re.compile(r"\b\d+(\.\d+)?\b"), "N"),
]


def reason_pattern(reason: str) -> str:
    """A reason with its particulars (names, values, numbers) replaced, so alike ones group."""
    for pattern, replacement in _DETAILS:
        reason = pattern.sub(replacement, reason)
    return reason.split("; ")[0].strip()


def group_by_reason(records: Sequence[CoverageRecord]) -> list[ReasonGroup]:
    groups: dict[tuple[Coverage, str], list[str]] = defaultdict(list)
    for record in records:
        groups[(record.status, reason_pattern(record.reason))].append(record.qualname)
    return sorted(
        (ReasonGroup(status, reason, tuple(names)) for (status, reason), names in groups.items()),
        key=lambda group: (-len(group.qualnames), group.status, group.reason),
    )


def failure_json(failure: Failure) -> dict[str, str]:
    """A failure as ``--summary-json`` lists it."""
    return {
        "scenario": failure.scenario,
        "phase": failure.phase,
        "kind": str(failure.kind),
        "reason": failure.reason,
        "location": failure.location,
    }


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

    def groups(self) -> list[ReasonGroup]:
        """The entry points not profiled, grouped by status and reason (largest group first)."""
        return group_by_reason(self.not_profiled)

    @property
    def profiled_fraction(self) -> float:
        return self.profiled / self.discovered if self.discovered else 0.0

    @property
    def runnable(self) -> int:
        """Entry points that can run here: all but those needing an absent optional dependency."""
        return self.discovered - self.coverage_counts.get(str(Coverage.MISSING_DEPENDENCY), 0)

    @property
    def runnable_profiled_fraction(self) -> float:
        return self.profiled / self.runnable if self.runnable else 0.0

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
            "runnable": self.runnable,
            "runnable_profiled_fraction": round(self.runnable_profiled_fraction, 4),
            "coverage": self.coverage_counts,
            "not_profiled": [
                {
                    "qualname": r.qualname,
                    "status": str(r.status),
                    "reason": r.reason,
                    "failures": [failure_json(f) for f in r.failures],
                }
                for r in self.not_profiled
            ],
            "not_profiled_by_reason": [
                {
                    "status": str(group.status),
                    "reason": group.reason,
                    "count": len(group.qualnames),
                    "entry_points": list(group.qualnames),
                }
                for group in self.groups()
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
    )
    if interrupted:
        raise ScanInterrupted(result)
    report(ScanProgress("done", result.discovered, result.discovered))
    return result


def scans_stored(db: sqlite_utils.Database) -> bool:
    """Whether the database holds any scan (True when it cannot tell: keep the file then)."""
    try:
        return db.execute("SELECT 1 FROM scans LIMIT 1").fetchone() is not None
    except sqlite3.Error:
        return True


def capture_in_worker(
    pool: WorkerPool, found: Discovered, blocked_at_import: ImportAttempts
) -> list[CapturedCall]:
    """Arguments the entry points receive in the package's docstring examples (run in a
    sandboxed worker); nothing when that worker fails or runs out of time. What the imports
    it makes try is recorded like any other import's."""
    discovery = found.discovery
    request = CaptureExamples(discovery.package, discovery.entry_points, CAPTURE_BUDGET)
    result = pool.request(request, timeout=CAPTURE_BUDGET + 60)
    blocked_at_import.add(result.attempts)
    return list(result.reply.calls) if isinstance(result.reply, Captured) else []


CAPTURE_BUDGET = 90.0
"""Seconds all docstring examples may run while their arguments are captured."""


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


class ProgressTracker:
    """Which entry points are running now and when the rest should be done.

    The pool starts tasks in plan order and starts the next one as soon as one finishes, so the
    ones running are the first ``jobs`` of the plan that have not finished. The ETA is the mean
    time per finished entry point so far times those left, divided among the workers' finishes.
    """

    def __init__(self, order: list[str], jobs: int, clock: Callable[[], float] = time.monotonic):
        self.order, self.jobs, self.clock = order, max(jobs, 1), clock
        self.done: set[str] = set()
        self.started = clock()
        self.last = ("", "")

    def finished(self, qualname: str, status: str) -> None:
        self.done.add(qualname)
        self.last = (qualname, status)

    def running(self) -> tuple[str, ...]:
        pending = (name for name in self.order if name not in self.done)
        return tuple(itertools.islice(pending, self.jobs))

    def eta_seconds(self) -> float | None:
        if not self.done:
            return None
        per_entry = (self.clock() - self.started) / len(self.done)
        return per_entry * (len(self.order) - len(self.done))

    def event(self) -> ScanProgress:
        return ScanProgress(
            "profile",
            len(self.done),
            len(self.order),
            self.last[0],
            self.last[1],
            running=self.running(),
            eta_seconds=self.eta_seconds(),
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
    files = [str(Path(p).resolve()) for p in options.scenario_files_for(package)]
    specs = check_scenario_files(files)
    # the worker checks the files' targets against what it imported (a typo is refused, with
    # the names it meant); the specs kept are those parsed here
    result = pool.request(Discover(package, files), timeout=options.discovery_timeout)
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


def module_failure(module: str, error: str, dependency: str) -> CoverageRecord:
    """Why a module's entry points are missing: an optional dependency that is not installed
    (its own category, not a fault of the package), or a failed import."""
    if dependency:
        return CoverageRecord(
            module,
            Coverage.MISSING_DEPENDENCY,
            f"{module} needs {dependency}, which is not installed here (an optional dependency); "
            f"install it to profile this module",
        )
    return CoverageRecord(module, Coverage.IMPORT_FAILED, f"importing {module} failed: {error}")


def plan_scan(
    found: Discovered,
    options: ScanOptions,
    done: Set[str] = frozenset(),
    *,
    profile: bool = True,
    captured: Sequence[CapturedCall] = (),
) -> Plan:
    """One task per entry point: collect its docstring/synthesised scenarios, add its file
    scenarios, profile them all. Scenario files may also target names discovery did not list."""
    discovery = found.discovery
    known = [
        module_failure(module, error, discovery.missing_dependencies.get(module, ""))
        for module, error in sorted(discovery.import_failures.items())
        if module not in done
    ]
    file_specs: dict[str, list[ScenarioSpec]] = defaultdict(list)
    for spec in found.specs:
        file_specs[spec.qualname].append(spec)
    calls: dict[str, list[CapturedCall]] = defaultdict(list)
    for call in captured:
        calls[call.qualname].append(call)
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
            sources=options.argument_sources,
            captured=calls.get(qualname, []),
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
    them, when ``suite`` reached it), its coverage verdict and every failure behind it. An entry
    point whose code, or a thread it started, tried something forbidden is blocked and keeps no
    measurements: they describe runs whose forbidden operations were refused (and a worker that
    may have lied). What an import tried goes to the module's row (``blocked_at_import``)."""
    blocked_at_import = blocked_at_import or ImportAttempts()
    for result in results:
        qualname = result.task.id
        blocked_at_import.add(result.attempts)
        batch = ScanBatch()
        own = [
            describe_attempt(a) for a in result.attempts if a.blame is Blame.ENTRY or not a.module
        ]
        outcomes: list[tuple[Coverage, str]] = []
        failures: list[Failure] = []
        finished = result.reply if isinstance(result.reply, EntryFinished) else None
        if finished is not None:
            failures += finished.failures
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
                failures.append(replace(partial.failure, scenario=spec.id))
        # the task as a whole failed: collection, or the worker died
        if (failure := result.failure) is not None:
            outcomes.append((failure.kind, failure.reason))
            failures.append(failure)
        elif finished is not None and not result.partials and finished.unscenarioed:
            outcomes.append((finished.unscenarioed.kind, finished.unscenarioed.reason))
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
        if record.status != Coverage.PROFILED:
            record = replace(record, failures=tuple(failures))
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
    rows = _stored_rows(
        db_path, "SELECT status FROM scans WHERE package = ? ORDER BY id DESC LIMIT 1", package
    )
    return rows[0][0] if rows else None


def _stored_rows(db_path: str | Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows of one query on a database opened read-only; [] when the file does not exist."""
    if not Path(db_path).exists():
        return []
    db = open_db(db_path, readonly=True)
    try:
        return db.execute(sql, list(params)).fetchall()
    finally:
        db.conn.close()


def completed_entry_points(db: sqlite_utils.Database, scan_id: int) -> set[str]:
    return {r[0] for r in db.execute("SELECT qualname FROM coverage WHERE scan_id = ?", [scan_id])}


def stored_failures(db: sqlite_utils.Database, qualname: str) -> tuple[Failure, ...]:
    """The failures stored behind an entry point's verdict, as records."""
    return tuple(
        Failure(
            Coverage(row.kind) if row.kind in Coverage.__members__.values() else Coverage.CRASHED,
            row.reason,
            row.traceback,
            scenario=row.scenario_id,
            phase=row.phase,
            location=row.location,
        )
        for row in failure_rows(db, qualname)
    )


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
            stored_failures(db, q),
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


def list_package(package: str, *, options: ScanOptions | None = None) -> Discovery:
    """Discover a package's entry points in a sandboxed worker, without profiling anything."""
    options = options or ScanOptions()
    package = import_name_of(package)
    with WorkerPool(1, options.worker_options(package)) as pool:
        found, _ = discover_package(pool, package, options)
    return found.discovery


def write_scenario_scaffold(
    package: str,
    path: str | Path,
    *,
    options: ScanOptions | None = None,
    overwrite: bool = False,
    db_path: str | Path | None = None,
) -> tuple[int, int]:
    """Write a scaffold scenario file for the entry points still missing a profile.

    Missing means: not profiled in ``db_path`` when that database has a scan of the package
    (its stored reasons are used), else not covered by any scenario source. Collection runs in
    sandboxed workers (one task per entry point, as in a scan, without profiling) and brings
    back each missing entry point's reason and the best arguments found for it. Returns
    ``(entries written, entry points discovered)``.
    """
    from apiprof.engine.scenarios.scaffold import Missing, write_scaffold

    options = options or ScanOptions()
    check_scenario_files(options.scenario_files)
    package = import_name_of(package)
    stored = stored_coverage(db_path, package) if db_path else {}
    with WorkerPool(options.jobs, options.worker_options(package)) as pool:
        found, _discovery_result = discover_package(pool, package, options)
        done = {q for q, (status, _) in stored.items() if status == Coverage.PROFILED}
        plan = plan_scan(found, options, done=done, profile=False)
        covered, missing = set(done), {}
        for result in run_plan(pool, plan, options, None):
            reply = result.reply
            if not isinstance(reply, EntryFinished):
                why = result.failure.reason if result.failure else ""
                missing[result.task.id] = Missing(why)
                continue
            if reply.specs and result.task.id not in stored:
                covered.add(result.task.id)
                continue
            status, reason = stored.get(result.task.id, ("", ""))
            failure = reply.unscenarioed or (reply.failures[0] if reply.failures else None)
            if not reason and failure is not None:
                status, reason = str(failure.kind), failure.reason
            location = next((f.location for f in reply.failures if f.location), "")
            missing[result.task.id] = Missing(
                f"{status}: {reason}" if status else reason, location, tuple(reply.partial)
            )
    written = write_scaffold(
        found.discovery, covered, Path(path), overwrite=overwrite, missing=missing
    )
    return written, len(found.discovery.entry_points)


def stored_coverage(db_path: str | Path, package: str) -> dict[str, tuple[str, str]]:
    """qualname -> (status, reason) stored for the package, {} without a database or scan."""
    rows = _stored_rows(
        db_path, "SELECT qualname, status, reason FROM coverage WHERE package = ?", package
    )
    return {qualname: (status, reason) for qualname, status, reason in rows}
