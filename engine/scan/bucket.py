"""Bucket: turn each entry point's worker result into one batch to store: its measurements, a
coverage verdict (the most telling failure when nothing profiled it) and every failure behind
it; what imports tried in the sandbox is blamed on the importing module."""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from dataclasses import replace

import sqlite_utils

from apiprof.engine.isolation.pool import TaskResult
from apiprof.engine.isolation.protocol import (
    Attempt,
    Blame,
    EntryFinished,
)
from apiprof.engine.isolation.rerun import stop_failures
from apiprof.engine.testsuite import SuiteRun
from apiprof.model.checks import qualname_problem, within
from apiprof.model.records import (
    Coverage,
    CoverageRecord,
    Failure,
    ScanBatch,
)

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
        for stopped in stop_failures(result):  # sizes whose worker died: the rest ran again
            outcomes.append((stopped.kind, f"{stopped.reason} [scenario {stopped.scenario}]"))
            failures.append(stopped)
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
            record = CoverageRecord(qualname, Coverage.BLOCKED, blocked_reason([*broke, *own]))
        else:
            if suite is not None:
                outcomes += suite.add_to_batch(batch, qualname, outcomes)
            record = combine_outcomes(qualname, outcomes)
        if record.status != Coverage.PROFILED:
            record = replace(record, failures=tuple(failures))
        batch.coverage = [record, *blocked_at_import.records()]
        yield qualname, batch


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


MAX_REASONS = 3
"""Attempts named in one coverage row (the first ones; all of them were refused)."""


def describe_attempt(attempt: Attempt) -> str:
    """An entry point's attempt, said for its coverage row."""
    reason = attempt.reason if len(attempt.reason) <= 300 else attempt.reason[:299] + "…"
    if attempt.blame is Blame.THREAD:
        return f"a background thread it started {reason}"
    return reason


NETWORK_BLOCKED = "(network access is blocked)"
"""How the sandbox words a blocked connection or name lookup."""


def blocked_reason(reasons: Sequence[str]) -> str:
    """What the sandbox stopped; led by what it means when the entry point went online."""
    joined = join_reasons(reasons)
    if any(NETWORK_BLOCKED in reason for reason in reasons):
        return (
            "needs network access, which the sandbox blocks (a scenario file can serve what it "
            f"fetches on loopback, which is allowed): {joined}"
        )
    return joined


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
