"""Discover: import the package in a sandboxed worker and list its entry points (checked here),
and capture the arguments its docstring examples pass."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from apiprof import errors
from apiprof.engine.discovery.discover import Discovery, import_name_of
from apiprof.engine.isolation.pool import TaskResult, WorkerPool
from apiprof.engine.isolation.protocol import (
    Captured,
    CaptureExamples,
    Discover,
    Discovered,
    Refused,
)
from apiprof.engine.isolation.rerun import rerun_task
from apiprof.engine.scan.bucket import ImportAttempts
from apiprof.engine.scan.options import ScanOptions, check_scenario_files
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.model.checks import qualname_problem, within

T = TypeVar("T")


def expect(result: TaskResult, kind: type[T], doing: str) -> T:
    """The reply of a non-scenario request, or the error it deserves."""
    if isinstance(result.reply, kind):
        return result.reply
    if isinstance(result.reply, Refused):
        raise errors.error_class(result.reply.code)(result.reply.message)
    why = result.failure.reason if result.failure else f"unexpected {type(result.reply).__name__}"
    raise errors.MeasurementError(f"{doing} failed in the sandboxed worker: {why}")


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


def capture_in_worker(
    pool: WorkerPool, found: Discovered, blocked_at_import: ImportAttempts
) -> list[CapturedCall]:
    """Arguments the entry points receive in the package's docstring examples (run in a
    sandboxed worker); nothing when that worker fails or runs out of time. What the imports
    it makes try is recorded like any other import's."""
    discovery = found.discovery
    request = CaptureExamples(discovery.package, discovery.entry_points, CAPTURE_BUDGET)
    result = pool.request(request, timeout=CAPTURE_BUDGET + 60, rerun=rerun_task)
    blocked_at_import.add(result.attempts)
    return list(result.reply.calls) if isinstance(result.reply, Captured) else []


CAPTURE_BUDGET = 90.0
"""Seconds all docstring examples may run while their arguments are captured."""


def list_package(package: str, *, options: ScanOptions | None = None) -> Discovery:
    """Discover a package's entry points in a sandboxed worker, without profiling anything."""
    options = options or ScanOptions()
    package = import_name_of(package)
    with WorkerPool(1, options.worker_options(package)) as pool:
        found, _ = discover_package(pool, package, options)
    return found.discovery
