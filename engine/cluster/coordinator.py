"""Plan scan tasks, run them on a Dask cluster, and add each result to the local store once.

    report = scan_on_cluster([Target("json"), Target("textwrap")], cluster="local:2",
                             db_path="apiprof.db")

One task per package is submitted at once (a requirement line first has its virtualenv built
and its import packages found). A package's first task discovers it and, when it has more than
``batch_size`` entry points, scans the first batch and hands back the full list, from which the
remaining batches are submitted. Outputs stream back in completion order and each is added to
the local database in one transaction together with its task id
(:class:`apiprof.db.merge.MergedTask`), so a task that Dask retries after losing a worker, or
that ``resume`` meets again, is added once. A task's database is checked like any input of
``apiprof merge`` (names, numbers): one the checks refuse adds nothing and is reported, never
ending the cluster scan. Each task's isolation level is kept with its scans and said loudly
as soon as a task comes back confined less than strictly.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiprof.db.merge import MergedTask, merge_into, merged_tasks
from apiprof.db.schema import open_db
from apiprof.engine.cluster.inputs import Target
from apiprof.engine.cluster.tasks import ScanTask, TaskOutput, packages_of, run_task
from apiprof.engine.collect.upload import ServiceConnection, UploadError, send_scan
from apiprof.engine.scan import ScanOptions
from apiprof.errors import ApiprofError, UsageError

DEFAULT_BATCH_SIZE = 250
"""Entry points per task for large packages (a package with fewer is one task)."""
INSTALL_HINT = "pip install 'apiprof[cluster]'"
RETRIES = 2
"""Times a task that raised on its worker is tried again elsewhere (a lost worker's tasks are
rescheduled by Dask itself)."""


@dataclass(frozen=True)
class ClusterProgress:
    """An event for a progress display: ``stage`` is "connect", "list", "scan", or
    "isolation" (a task's workers were confined less than strictly: ``detail`` says how)."""

    stage: str
    done: int = 0
    total: int = 0
    package: str = ""
    status: str = ""
    detail: str = ""


@dataclass
class ClusterReport:
    """What a cluster scan did: per-package summaries and every task's fate."""

    cluster: str
    workers: int
    db_path: str
    packages: dict[str, dict[str, Any]] = field(default_factory=dict)  # combined summaries
    tasks: list[dict[str, Any]] = field(default_factory=list)
    skipped_tasks: int = 0  # already in the database (resume)
    failures: list[str] = field(default_factory=list)  # targets that could not be listed
    elapsed_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The ``--summary-json`` form of a cluster scan (see docs/cluster.rst)."""
        return {
            "packages": list(self.packages.values()),
            "cluster": {
                "address": self.cluster,
                "workers": self.workers,
                "database": self.db_path,
                "elapsed_seconds": round(self.elapsed_seconds, 3),
                "tasks": self.tasks,
                "skipped_tasks": self.skipped_tasks,
                "failures": self.failures,
            },
        }


def scan_on_cluster(
    targets: Sequence[Target],
    *,
    cluster: str,
    db_path: str | Path,
    options: ScanOptions | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    resume: bool = False,
    task_timeout: float = 3600.0,
    progress: Callable[[ClusterProgress], None] | None = None,
    server: ServiceConnection | None = None,
) -> ClusterReport:
    """Scan every target on the Dask cluster at ``cluster`` (``tcp://host:8786``, or
    ``local:N`` for N local worker processes) into the database at ``db_path`` — and, with
    ``server``, send each task's results to the aggregation service first (added there once
    per task id; a task the service did not take is not added locally either)."""
    options = options or ScanOptions()
    options.validate()
    distributed = _import_dask()
    started = time.monotonic()
    db = open_db(db_path)
    try:
        (progress or (lambda event: None))(ClusterProgress("connect"))
        with connect(distributed, cluster) as client:
            workers = len(client.scheduler_info()["workers"])
            run = ClusterRun(
                client,
                distributed,
                db,
                ClusterReport(cluster, workers, str(db_path)),
                settings=options.to_json(),
                batch_size=batch_size,
                timeout=task_timeout,
                done_before=merged_tasks(db) if resume else {},
                report=progress or (lambda event: None),
                server=server,
            )
            run.scan(targets)
        run.result.elapsed_seconds = time.monotonic() - started
        return run.result
    finally:
        db.conn.close()


def _import_dask() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--cluster needs Dask distributed: {INSTALL_HINT}") from None
    return distributed


@contextlib.contextmanager
def connect(distributed: Any, cluster: str) -> Iterator[Any]:
    """A client of the scheduler at ``cluster``, or of a local cluster for ``local:N``."""
    if cluster.startswith("local:"):
        count = cluster.removeprefix("local:")
        if not count.isdigit() or int(count) < 1:
            raise UsageError(f"--cluster {cluster}: write local:N with N >= 1 worker processes")
        with (
            distributed.LocalCluster(
                n_workers=int(count),
                threads_per_worker=1,  # one scan task per core
                processes=True,
                dashboard_address=":0",  # a free port: a second local cluster must not clash
                silence_logs=40,
            ) as local,
            distributed.Client(local) as client,
        ):
            yield client
        return
    try:
        client = distributed.Client(cluster, timeout=30)
    except OSError as error:
        raise UsageError(
            f"--cluster {cluster}: cannot reach a Dask scheduler there ({error}); start one with "
            "`dask scheduler` and workers with `dask worker ADDRESS`, or use --cluster local:N"
        ) from None
    with client:
        yield client


@dataclass
class ClusterRun:
    """One cluster scan in progress: submits tasks as they become known (a large package's
    later batches once its first task has discovered it) and adds outputs as they arrive."""

    client: Any
    distributed: Any
    db: Any
    result: ClusterReport
    settings: dict[str, Any]
    batch_size: int
    timeout: float
    done_before: dict[str, dict[str, Any]]  # task id -> details of tasks already added
    report: Callable[[ClusterProgress], None]
    server: ServiceConnection | None = None
    submitted: int = 0
    finished: int = 0

    def scan(self, targets: Sequence[Target]) -> None:
        pending = self.distributed.as_completed()
        self.futures: dict[Any, Any] = {}
        for target in targets:
            if target.package:
                self.start_package(target.package, target.requirement, pending)
            else:  # a requirement: first find the packages its distribution installs
                future = self.client.submit(
                    packages_of, target.requirement, pure=False, retries=RETRIES
                )
                self.futures[future] = target
                pending.add(future)
        for future in pending:
            item = self.futures.pop(future)
            if isinstance(item, Target):
                self.packages_found(item, future, pending)
            else:
                self.task_done(item, future, pending)

    def start_package(self, package: str, requirement: str, pending: Any) -> None:
        first = ScanTask(
            package, self.settings, requirement, batch_size=self.batch_size, timeout=self.timeout
        )
        if first.id in self.done_before:  # resumed: its record says whether there is more
            names = self.done_before[first.id].get("all_entry_points", [])
            self.result.skipped_tasks += 1
            self.submit_batches(first, names, pending)
            return
        self.submit(first, pending)

    def packages_found(self, target: Target, future: Any, pending: Any) -> None:
        try:
            packages = future.result()
        except Exception as error:
            self.result.failures.append(f"{target.requirement}: {error}")
            return
        for package in packages:
            self.start_package(package, target.requirement, pending)

    def submit(self, task: ScanTask, pending: Any) -> None:
        key = f"apiprof-scan-{task.id}"
        future = self.client.submit(run_task, task, key=key, pure=False, retries=RETRIES)
        self.futures[future] = task
        pending.add(future)
        self.submitted += 1

    def submit_batches(self, first: ScanTask, names: Sequence[str], pending: Any) -> None:
        """The batches after a large package's first (skipping those already added)."""
        for task in later_batches(first, names):
            if task.id in self.done_before:
                self.result.skipped_tasks += 1
            else:
                self.submit(task, pending)

    def task_done(self, task: ScanTask, future: Any, pending: Any) -> None:
        try:
            output = future.result()
        except Exception as error:  # raised on every try (scan failures return instead)
            reason = f"the task failed on the cluster: {error}"
            output = TaskOutput(task.id, task.package, "failed", reason)
        if output.entry_points:
            self.submit_batches(task, output.entry_points, pending)
        add_output(self.db, task, output, self.result, self.server)
        isolation = str(output.summary.get("isolation", ""))
        if output.database and not isolation.startswith("strict"):
            level = isolation.split(":", 1)[0] or "unknown"
            self.report(
                ClusterProgress("isolation", package=task.package, status=level, detail=isolation)
            )
        self.finished += 1
        self.report(
            ClusterProgress("scan", self.finished, self.submitted, task.package, output.status)
        )


def later_batches(first: ScanTask, names: Sequence[str]) -> list[ScanTask]:
    """The tasks for the entry points a package's first task left: ``batch_size`` at a time,
    in name order after the first batch."""
    ordered, size = sorted(names), first.batch_size
    return [
        ScanTask(
            first.package,
            first.options,
            first.requirement,
            tuple(ordered[i : i + size]),
            n,
            size,
            first.timeout,
        )
        for n, i in enumerate(range(size, len(ordered), size), start=1)
    ]


def add_output(
    db: Any,
    task: ScanTask,
    output: TaskOutput,
    result: ClusterReport,
    server: ServiceConnection | None = None,
) -> None:
    """Add a finished task's database to the local one (once, by task id) — after sending it
    to ``server`` when given — and note its fate."""
    record = {
        "task_id": task.id,
        "package": task.package,
        "batch": task.batch,
        "entry_points": len(task.only) or output.summary.get("discovered", 0),
        "requirement": task.requirement,
        "status": output.status,
        "reason": output.reason,
        "worker": output.worker,
        "elapsed_seconds": round(output.elapsed_seconds, 3),
        "isolation": output.summary.get("isolation", ""),
    }
    result.tasks.append(record)
    if output.status == "failed" or not output.database:
        return
    if server is not None:
        try:
            record["service"] = send_scan(server, task.id, output.database)
        except UploadError as error:
            record.update(status="failed", reason=f"not sent to the service: {error}")
            return
    details = {
        "requirement": task.requirement,
        "batch": task.batch,
        "entry_points": list(task.only),
        "all_entry_points": list(output.entry_points),  # a first task's split, for --resume
    }
    merged = MergedTask(
        task.id, task.package, output.status, output.worker, output.elapsed_seconds, details
    )
    with tempfile.TemporaryDirectory(prefix="apiprof-cluster-") as scratch:
        path = Path(scratch, "task.db")
        path.write_bytes(output.database)
        try:
            added = merge_into(db, path, task=merged)
        except ApiprofError as error:  # a worker's file is an input like any other
            record["status"], record["reason"] = "refused", f"its database was refused: {error}"
            return
        if added.get("skipped"):
            record["status"] = "already added"
            return
    combine_summary(result.packages, output.summary)


def combine_summary(packages: dict[str, dict[str, Any]], summary: dict[str, Any]) -> None:
    """Fold one task's scan summary into its package's (batches of one package add up)."""
    name = summary["package"]
    if name not in packages:
        packages[name] = {
            **summary,
            "tasks": 1,
            "warnings": list(summary.get("warnings", [])),
            "blocked_at_import": {
                m: list(r) for m, r in summary.get("blocked_at_import", {}).items()
            },
        }
        return
    total = packages[name]
    levels = [total.get("isolation", ""), summary.get("isolation", "")]
    total["isolation"] = " | ".join(dict.fromkeys(level for level in levels if level))
    total["warnings"] += [w for w in summary.get("warnings", []) if w not in total["warnings"]]
    for module, reasons in summary.get("blocked_at_import", {}).items():
        known = total["blocked_at_import"].setdefault(module, [])
        known += [reason for reason in reasons if reason not in known]
    for key in ("discovered", "profiled", "resumed_skipped", "runnable"):
        total[key] = total.get(key, 0) + summary.get(key, 0)
    total["elapsed_seconds"] = round(total["elapsed_seconds"] + summary["elapsed_seconds"], 3)
    for status, n in summary["coverage"].items():
        total["coverage"][status] = total["coverage"].get(status, 0) + n
    total["not_profiled"] += summary["not_profiled"]
    total["import_failures"].update(summary["import_failures"])
    costly = total["most_expensive"] + summary["most_expensive"]
    total["most_expensive"] = sorted(costly, key=lambda line: -(line["time_median_ns"] or 0))[:10]
    total["profiled_fraction"] = (
        round(total["profiled"] / total["discovered"], 4) if total["discovered"] else 0.0
    )
    total["runnable_profiled_fraction"] = (
        round(total["profiled"] / total["runnable"], 4) if total.get("runnable") else 0.0
    )
    if summary["status"] != "finished":
        total["status"] = summary["status"]
    total["tasks"] += 1


def write_summary_json(report: ClusterReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
