"""The scan pipeline: discover → plan → run → bucket → store, one package into one database.

    summary = scan("textwrap", db_path="apiprof.db")

Every step that runs the package's code (importing it, collecting and running scenarios, even
calibrating the probes) happens in sandboxed worker processes (:mod:`apiprof.engine.isolation.pool`); this
process only plans, collates and writes. Results are stored per entry point in their own
transaction as they arrive, so an interrupted scan keeps everything measured so far, and
``resume=True`` continues the package's last unfinished scan, skipping entry points that already
have a coverage row from it.

With ``tests=PATH`` the package's own pytest suite is one more scenario (:mod:`~apiprof.engine.testsuite`).

With ``jobs > 1`` scenarios run in parallel workers: the sampled CPU time stays trustworthy, wall
time only while there are idle cores for every worker (workers compete for cores and caches).
"""

from __future__ import annotations

import contextlib
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
from apiprof.db.owner import ScanOwner, still_running
from apiprof.db.query import failures as failure_rows
from apiprof.db.query import summaries
from apiprof.db.schema import DEFAULT_DB, open_db
from apiprof.db.store import (
    begin_scan,
    finish_scan,
    store_batch,
    store_entry_points,
    take_over_scan,
)
from apiprof.engine.discovery.discover import Discovery, import_name_of
from apiprof.engine.isolation.pool import Task, TaskResult, WorkerOptions, WorkerPool
from apiprof.engine.isolation.protocol import (
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
from apiprof.model.records import (
    Calibration,
    Coverage,
    CoverageRecord,
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
    heuristics: bool = True  # parameter names, how the body uses them, sibling defaults
    capture: bool = True  # arguments recorded from docstring examples and the --tests suite
    sizes: tuple[int, ...] = DEFAULT_SIZES  # input sizes for synthesised sized scenarios
    repeat: int = 20  # runs per scenario and size (a scenario file may say otherwise)
    max_seconds: float = 2.0  # measuring budget per scenario and size
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
        "heuristics",
        "capture",
        "sizes",
        "repeat",
        "max_seconds",
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

    def worker_options(self) -> WorkerOptions:
        return WorkerOptions(
            memory_mb=self.memory_mb,
            call_timeout=self.call_timeout,
            scenario_timeout=self.scenario_timeout,
            guard=self.guard,
            env={"PYTHONPATH": os.pathsep.join(self.import_paths())},
        )

    def import_paths(self) -> list[str]:
        """Where workers import from, as ``python -m`` and pytest would from here: the current
        directory first (a package in the project being scanned), then ``python_path`` and
        the inherited ``PYTHONPATH`` — every entry made absolute, since workers run in a
        sandbox directory of their own."""
        inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        paths = [os.getcwd(), *map(str, self.python_path), *inherited]
        return list(dict.fromkeys(os.path.abspath(path) for path in paths))

    def validate(self) -> None:
        problems = []
        if self.jobs < 1:
            problems.append("--jobs must be at least 1")
        if not self.sizes or any(s < 1 for s in self.sizes):
            problems.append("--sizes must be positive integers, e.g. 10,100,1000")
        if self.repeat < 1:
            problems.append("--repeat must be at least 1")
        if (
            min(
                self.call_timeout, self.scenario_timeout, self.discovery_timeout, self.tests_timeout
            )
            <= 0
        ):
            problems.append("timeouts must be positive numbers of seconds")
        if self.memory_mb < 64:
            problems.append("--memory-mb must be at least 64 (the interpreter alone needs some)")
        if problems:
            raise errors.UsageError("; ".join(problems))


@dataclass(frozen=True)
class ScanProgress:
    """Reported to the ``progress`` callback after every step."""

    stage: str  # "calibrate", "discover", "capture", "tests" (with --tests), "profile", "done"
    done: int = 0
    total: int = 0
    qualname: str = ""  # the entry point just finished (profile stage)
    status: str = ""  # its coverage status
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
    created = not Path(db_path).exists()
    db = open_db(db_path, timeout=options.db_timeout)
    scan_id = None
    try:
        claim_write_access(db, db_path)
        resumed = find_resumable_scan(db, package) if resume else None
        if resume and resumed is None:
            raise errors.UsageError(
                f"{db_path}: no unfinished scan of {package!r} to resume; run without --resume to start one"
            )
        if resumed is not None and resumed["owner"] is not None and still_running(resumed["owner"]):
            owner = resumed["owner"]
            raise errors.UsageError(
                f"{db_path}: scan #{resumed['id']} of {package!r} is still running (process {owner.pid} on this "
                f"host); let it finish, or stop it (kill {owner.pid}) and then --resume"
            )
        if resumed is not None:  # same scenarios and calibration as the scan being continued
            stored = ScanOptions.from_json(resumed["options"])
            options = with_absolute_suite_path(
                replace(
                    options, **{name: getattr(stored, name) for name in ScanOptions.RESUMED_FIELDS}
                )
            )
        environment = Environment.current()
        with WorkerPool(options.jobs, options.worker_options()) as pool:
            report(ScanProgress("calibrate"))
            calibration = (
                Calibration.from_json(resumed["calibration"])
                if resumed
                else calibrate_in_worker(pool)
            )
            report(ScanProgress("discover"))
            found = discover_package(pool, package, options)
            package = found.discovery.package
            if resumed is not None:
                scan_id = int(resumed["id"])
                take_over_scan(db, scan_id)
            else:
                scan_id = begin_scan(
                    db,
                    package,
                    found.discovery.version,
                    environment,
                    calibration,
                    options.to_json(),
                )
            store_entry_points(db, found.discovery.entry_points)
            done = completed_entry_points(db, scan_id) if resumed else set()
            captured: list[CapturedCall] = []
            if options.capture and len(done) < len(found.discovery.entry_points):
                report(ScanProgress("capture"))
                captured = capture_in_worker(pool, found, options)
            suite = None
            if options.tests and len(done) < len(found.discovery.entry_points):
                report(ScanProgress("tests"))
                suite = run_test_suite(
                    found.discovery.package,
                    [ep.qualname for ep in found.discovery.entry_points],
                    options.tests,
                    options.worker_options(),
                    timeout=options.tests_timeout,
                    max_seconds=options.max_seconds,
                    calibration=calibration,
                    entries=found.discovery.entry_points,
                    capture=options.capture,
                )
                captured += suite.captured
            plan = plan_scan(found, options, done=done, captured=captured)
            batches = bucket_results(run_plan(pool, plan, options, calibration), suite)
            status = store_results(
                db, batches, plan, scan_id, environment.id, package, report, options.jobs
            )
            workers = pool.started + (suite is not None)
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
        report(ScanProgress("done", result.discovered, result.discovered))
        return result
    except KeyboardInterrupt:
        if scan_id is None:
            raise
        elapsed = time.monotonic() - started
        summary = summarize_scan(db, found, scan_id, str(db_path), "interrupted", 0, elapsed, 0)
        raise ScanInterrupted(summary) from None
    finally:
        db.conn.close()
        if created and scan_id is None:  # nothing was scanned: leave no empty database behind
            remove_database(db_path)


def remove_database(db_path: str | Path) -> None:
    """Delete a database file this scan created and its SQLite side files."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            Path(f"{db_path}{suffix}").unlink()


def capture_in_worker(
    pool: WorkerPool, found: Discovered, options: ScanOptions
) -> list[CapturedCall]:
    """Arguments the entry points receive in the package's docstring examples (run in a
    sandboxed worker); nothing when that worker fails or runs out of time."""
    discovery = found.discovery
    request = CaptureExamples(discovery.package, discovery.entry_points, CAPTURE_BUDGET)
    result = pool.request(request, timeout=CAPTURE_BUDGET + 60)
    return list(result.reply.calls) if isinstance(result.reply, Captured) else []


CAPTURE_BUDGET = 90.0
"""Seconds all docstring examples may run while their arguments are captured."""


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
        finish_scan(db, scan_id, status)
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


def check_scenario_files(paths: Sequence[str]) -> None:
    """Parse every scenario file here (parsing runs no code) so a typo fails fast with file:line."""
    if not paths:
        return
    from apiprof.engine.scenarios.files import load_scenario_file

    for path in paths:
        if not Path(path).is_file():
            raise errors.ScenarioFileError(str(path), None, "no such scenario file; check the path")
        load_scenario_file(path)


def calibrate_in_worker(pool: WorkerPool) -> Calibration:
    """Probe costs, measured in a worker (the interpreter and settings that will be measured)."""
    reply = expect(pool.request(Calibrate(), timeout=120), Calibrated, "calibrating the profiler")
    return reply.calibration


def discover_package(pool: WorkerPool, package: str, options: ScanOptions) -> Discovered:
    """Import the package in a worker, list its entry points and read the scenario files."""
    files = [str(Path(p).resolve()) for p in options.scenario_files_for(package)]
    result = pool.request(Discover(package, files), timeout=options.discovery_timeout)
    return expect(result, Discovered, f"discovering {package!r}")


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
        calibration, options.repeat, options.max_seconds, options.call_timeout
    )
    return pool.run(
        Task(request.entry.qualname, replace(request, settings=settings))
        for request in plan.requests
    )


def bucket_results(
    results: Iterable[TaskResult], suite: SuiteRun | None = None
) -> Generator[tuple[str, ScanBatch], None, None]:
    """One batch per entry point: the measurements of its scenarios (the test suite's among
    them, when ``suite`` reached it), its coverage verdict and every failure behind it."""
    for result in results:
        batch = ScanBatch()
        outcomes: list[tuple[Coverage, str]] = []
        failures: list[Failure] = []
        finished = result.reply if isinstance(result.reply, EntryFinished) else None
        if finished is not None:
            failures += finished.failures
        for partial in result.partials:
            spec = partial.scenario
            batch.scenarios.append(spec.to_scenario())
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
        if suite is not None:
            outcomes += suite.add_to_batch(batch, result.task.id, outcomes)
        record = combine_outcomes(result.task.id, outcomes)
        if record.status != Coverage.PROFILED:
            record = replace(record, failures=tuple(failures))
        batch.coverage.append(record)
        yield result.task.id, batch


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
    owner = ScanOwner(row[4], int(row[5]), row[6] or "") if row[4] and row[5] else None
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
        for s in summaries(db, profiled).values()
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
    with WorkerPool(1, options.worker_options()) as pool:
        return discover_package(pool, import_name_of(package), options).discovery


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
    stored = stored_coverage(db_path, import_name_of(package)) if db_path else {}
    with WorkerPool(options.jobs, options.worker_options()) as pool:
        found = discover_package(pool, import_name_of(package), options)
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
