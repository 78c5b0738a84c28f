"""What a finished (or interrupted) scan did, read back from the database: coverage, reasons
grouped for people, the most expensive entry points; the ``--summary-json`` form."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence, Set
from dataclasses import asdict, dataclass, field
from typing import Any

import sqlite_utils

from apiprof.db.details import failures as failure_rows
from apiprof.db.query import summaries
from apiprof.engine.isolation.protocol import (
    Discovered,
)
from apiprof.engine.measure.pace import SLOW_FACTOR
from apiprof.engine.scan.drive import DriveReport
from apiprof.engine.testsuite import SuiteRun
from apiprof.model.records import (
    Coverage,
    CoverageRecord,
    Disturbance,
    Failure,
)


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
    self_drive: DriveReport | None = None  # what the self-driven capture did, when it ran
    # source -> profiled entry points with a measured scenario from it ("repaired": 12)
    profiled_by_source: dict[str, int] = field(default_factory=dict)

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
            "self_drive": self.self_drive.to_json() if self.self_drive else None,
            "profiled_by_source": dict(self.profiled_by_source),
        }


def busy_warnings(seen: Disturbance) -> list[str]:
    """What a person should know when the machine stayed busy while measuring."""
    if not seen.busy:
        return []
    stalled = (
        f", and {seen.stalled_passes} of {seen.passes} timing passes still ran on a stalled "
        f"machine after {seen.remeasured_passes} passes were measured again"
        if seen.stalled_passes
        else ""
    )
    slowed = (
        f", {seen.stalled_runs} ran while the CPU ran slow in the middle of a pass"
        if seen.stalled_runs
        else ""
    )
    return [
        f"the machine stayed busy while measuring: {seen.slow_references} of {seen.references} "
        f"reference timings ran more than {SLOW_FACTOR:g}x slower than the fastest and "
        f"{seen.disturbed_runs} of {seen.runs} runs were preempted{slowed}{stalled} (preempted "
        "time is subtracted, a shared CPU is not); figures may read high — scan again on a "
        "quieter machine for reference numbers"
    ]


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
        profiled_by_source=profiled_by_source(db, profiled),
    )


def profiled_by_source(db: sqlite_utils.Database, profiled: Sequence[str]) -> dict[str, int]:
    """How many of the ``profiled`` entry points have measurements from a scenario of each
    source (one entry point may count under several)."""
    counts: dict[str, int] = defaultdict(int)
    for start in range(0, len(profiled), 500):  # SQLite's limit on bound parameters
        chunk = list(profiled[start : start + 500])
        marks = ", ".join("?" * len(chunk))
        rows = db.execute(
            "SELECT DISTINCT s.qualname, s.source FROM scenarios s WHERE s.qualname IN "
            f"({marks}) AND EXISTS (SELECT 1 FROM buckets b WHERE b.qualname = s.qualname "
            "AND b.scenario_id = s.id)",
            chunk,
        ).fetchall()
        for _, source in rows:
            counts[source] += 1
    return dict(sorted(counts.items()))
