"""The package's own pytest suite as one scenario (``apiprof-scan PACKAGE --tests PATH``).

The suite is one more scenario (``tests:<name>``) with every discovered entry point as a
target. It runs first, in a worker of its own (:mod:`~apiprof.engine.isolation.suitework`):
one unprofiled warm-up run that captures the arguments entry points receive (sent on test by
test, so a suite cut off by the timeout still has them replayed), then its tests once per
profiler pass (the allocation pass and each timing group) — for a long suite only a few quick
tests reaching entry points whose captured arguments do not replay. Each entry point it reached
gets those measurements in its batch, next to its other scenarios; one that only the tests
reach becomes profiled. Failing tests do not fail the scan; they are counted in the summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiprof import errors
from apiprof.engine.isolation.pool import TaskResult, WorkerOptions, WorkerPool
from apiprof.engine.isolation.protocol import MeasureSettings, RunSuite, SuiteFinished
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.model.records import (
    Calibration,
    CallEdge,
    Coverage,
    EntryPoint,
    Measurement,
    ScanBatch,
    Scenario,
    ScenarioSource,
)


@dataclass
class SuiteRun:
    """The package's test suite profiled as one scenario (``--tests``): its measurements per
    entry point, the test outcomes of its first run, and what went wrong, if anything."""

    path: str
    scenario_id: str  # "tests:<name of PATH>"
    # "replayed" (a long suite whose every reached entry point replays its captured arguments:
    # no profiled runs needed), or why it has no measurements: "unavailable" (no pytest),
    # "failed", "unprofiled" (the profiled runs could not fit in the timeout), "timed_out", ...
    status: str = "ran"
    # profiled executions of the whole suite (one per profiler pass; the warm-up not counted)
    runs: int = 0
    # passed / failed / errors / skipped (warm-up run)
    outcomes: dict[str, int] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)  # operations the sandbox refused while it ran
    warnings: list[str] = field(default_factory=list)
    measurements: dict[str, list[Measurement]] = field(default_factory=dict)  # by entry point
    edges: dict[str, list[CallEdge]] = field(default_factory=dict)  # by calling entry point
    # profiled through the suite alone (filled when bucketing)
    only_by_tests: set[str] = field(default_factory=set)
    captured: list[CapturedCall] = field(default_factory=list)  # arguments seen in the warm-up
    seconds: list[float] = field(default_factory=list)  # wall time of each run, warm-up first
    notes: list[str] = field(default_factory=list)  # what apiprof changed to run it (options)
    phases: dict[str, float] = field(default_factory=dict)  # seconds by step of the worker
    failures: dict[str, str] = field(default_factory=dict)  # the first failing tests, and why

    @property
    def reached(self) -> list[str]:
        return sorted(self.measurements)

    def scenario(self, qualname: str) -> Scenario:
        return Scenario(
            self.scenario_id,
            qualname,
            ScenarioSource.TESTS,
            f"the package's test suite at {self.path}",
        )

    def to_json(self) -> dict[str, Any]:
        """The ``tests`` object of ``--summary-json`` (see docs/cli.md)."""
        return {
            "scenario_id": self.scenario_id,
            "path": self.path,
            "status": self.status,
            "runs": self.runs,
            "reached": len(self.measurements),
            "only_by_tests": sorted(self.only_by_tests),
            **{k: self.outcomes.get(k, 0) for k in ("passed", "failed", "errors", "skipped")},
            "blocked": list(self.blocked),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "seconds_per_run": [round(seconds, 2) for seconds in self.seconds],
            "seconds_by_phase": {phase: round(s, 2) for phase, s in self.phases.items()},
            "failures": dict(self.failures),
            "captured_entry_points": len({c.qualname for c in self.captured if c.payload}),
        }

    def add_to_batch(
        self, batch: ScanBatch, qualname: str, outcomes: Sequence[tuple[Coverage, str]]
    ) -> list[tuple[Coverage, str]]:
        """Add what the suite measured of ``qualname`` to its batch (``outcomes`` are its other
        scenarios'); returns the suite's outcome for it, if the suite reached it."""
        measured = self.measurements.get(qualname)
        if not measured:
            return []
        if not any(status == Coverage.PROFILED for status, _ in outcomes):
            self.only_by_tests.add(qualname)
        batch.scenarios.append(self.scenario(qualname))
        batch.measurements += measured
        batch.edges += self.edges.get(qualname, [])
        return [(Coverage.PROFILED, "")]


def resolve_suite_path(path: str) -> str:
    """``path`` made absolute, or a usage error naming it when it does not exist."""
    found = Path(path).expanduser()
    if not found.exists():
        raise errors.UsageError(
            f"{path}: no such test file or directory; give --tests the path of the package's pytest suite"
        )
    return str(found.resolve())


PROJECT_MARKERS = (
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
    "setup.py",
)
"""Files that make a folder pytest's rootdir: the suite runs from there (see testrun)."""


def suite_root(path: str) -> str:
    """The project folder of the suite at ``path`` (the nearest one above it holding one of
    :data:`PROJECT_MARKERS`), which the workers must be able to read: the suite runs from it and
    opens its data files relative to it. ``path`` itself when there is none."""
    start = Path(path)
    for folder in (start if start.is_dir() else start.parent, *start.parents):
        if any((folder / name).is_file() for name in PROJECT_MARKERS):
            return str(folder)
    return path


def run_test_suite(
    package: str,
    targets: list[str],
    path: str,
    worker_options: WorkerOptions,
    *,
    timeout: float,
    max_seconds: float,
    calibration: Calibration,
    entries: Sequence[EntryPoint] = (),
    capture: bool = True,
) -> SuiteRun:
    """Profile the package's pytest suite with every entry point as a target.

    It gets a fresh worker of its own, closed afterwards: a suite leaves imports, ``sys.path``
    entries and state behind that must not leak into the other scenarios. Every run of the
    suite together has ``timeout`` seconds; past it, the worker is killed and the scan goes
    on without the suite (a warning says so).
    """
    suite = SuiteRun(path, f"{ScenarioSource.TESTS}:{Path(path).name}")
    settings = MeasureSettings(calibration=calibration, max_seconds=max_seconds)
    request = RunSuite(
        package,
        path,
        suite.scenario_id,
        targets,
        settings,
        capture=capture,
        entries=list(entries),
        budget=timeout,
    )
    with WorkerPool(1, worker_options) as pool:
        result = pool.request(request, timeout=timeout)
    reply = result.reply
    if isinstance(reply, SuiteFinished):
        suite.status = status_of(reply)
        suite.runs = reply.runs
        suite.outcomes = dict(reply.outcomes)
        # named by the in-process reporter, and by the scanner's filter supervisor
        suite.blocked = sorted({*reply.blocked, *(a.reason for a in result.attempts)})
        suite.captured = [*result.captured, *reply.captured]
        suite.seconds = list(reply.seconds)
        suite.notes = list(reply.notes)
        suite.phases = dict(reply.phases)
        suite.failures = dict(reply.failures)
        if not reply.problem:
            for measurement in reply.measurements:
                suite.measurements.setdefault(measurement.qualname, []).append(measurement)
            for edge in reply.edges:
                suite.edges.setdefault(edge.caller, []).append(edge)
    elif result.failure is not None:
        suite.status = SUITE_STATUS.get(result.failure.kind, str(result.failure.kind))
        suite.captured = list(result.captured)  # sent when the warm-up was over
    suite.warnings = describe_suite_problems(suite, result, timeout)
    return suite


def status_of(reply: SuiteFinished) -> str:
    """``ran``; ``replayed`` (no profiled run was needed: what the suite reached replays its
    captured arguments); ``unprofiled`` (tests ran, the profiled runs did not fit); ``failed``."""
    if not reply.problem:
        return "ran" if reply.runs else "replayed"
    return "unprofiled" if any(reply.outcomes.get(k) for k in ("passed", "failed")) else "failed"


SUITE_STATUS = {Coverage.SKIPPED: "unavailable"}
"""How a failure of the suite's worker reads in ``--summary-json`` (default: its kind)."""


def describe_suite_problems(suite: SuiteRun, result: TaskResult, timeout: float) -> list[str]:
    """Sentences for the summary: why the suite gave no measurements, failing tests, refusals."""
    where = f"--tests {suite.path}"
    failure = result.failure
    if failure is not None and failure.kind == Coverage.TIMED_OUT:
        return [
            f"{where}: the test suite ran past --tests-timeout ({timeout:g} s) and was stopped; "
            + (
                "no measurement of it was stored, the arguments its warm-up captured are replayed"
                if suite.captured
                else "nothing from it was stored"
            )
            + " — raise --tests-timeout or point --tests at fewer tests"
        ]
    if failure is not None:
        return [f"{where}: the test suite was not profiled ({suite.status}): {failure.reason}"]
    if isinstance(result.reply, SuiteFinished) and result.reply.problem:
        return [
            f"{where}: the test suite was not profiled ({suite.status}): {result.reply.problem}"
        ]
    warnings = []
    failed, broken = suite.outcomes.get("failed", 0), suite.outcomes.get("errors", 0)
    if failed or broken:
        node, why = next(iter(suite.failures.items()), ("", ""))
        warnings.append(
            f"{where}: {failed} test(s) failed and {broken} errored in the sandbox"
            + (f", e.g. {node}: {why}" if node else "")
            + "; what they passed to entry points before failing is replayed, and the notes "
            "say whether the profiled runs ran them"
        )
    if suite.blocked:
        warnings.append(
            f"{where}: the sandbox refused {len(suite.blocked)} kind(s) of operation, e.g. {suite.blocked[0]}"
        )
    if not suite.measurements and not suite.captured:
        warnings.append(
            f"{where}: the test suite ran but called none of the package's public entry points"
        )
    return warnings
