"""``apiprof scenarios init``: a scaffold scenario file for the entry points still missing a
profile, with each one's reason and the best partial arguments found."""

from __future__ import annotations

from pathlib import Path

from apiprof.engine.discovery.discover import import_name_of
from apiprof.engine.isolation.pool import WorkerPool
from apiprof.engine.isolation.protocol import (
    EntryFinished,
)
from apiprof.engine.scan.discover import discover_package
from apiprof.engine.scan.options import ScanOptions, check_scenario_files
from apiprof.engine.scan.plan import plan_scan
from apiprof.engine.scan.resume import stored_coverage
from apiprof.engine.scan.run import run_plan
from apiprof.model.records import (
    Coverage,
)


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
