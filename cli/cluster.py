"""``apiprof-scan ... --cluster ADDRESS``: the scan command's options for scanning on Dask."""

from __future__ import annotations

import argparse
from typing import Any

from apiprof.cli.options import positive_float, positive_int


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    from apiprof.engine.cluster.coordinator import DEFAULT_BATCH_SIZE

    group = parser.add_argument_group(
        "scanning on a Dask cluster", "needs the cluster extra: pip install 'apiprof[cluster]'"
    )
    group.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="run the scan on the Dask scheduler at ADDRESS (tcp://host:8786), or on N local "
        "worker processes with local:N; results are added to --db as they arrive",
    )
    group.add_argument(
        "--requirements",
        metavar="FILE",
        help="also scan each requirement line of FILE (pip syntax), installed into a fresh "
        "virtualenv per requirement on the worker (cached); needs --cluster (default local:JOBS)",
    )
    group.add_argument(
        "--installed",
        action="store_true",
        help="also scan every package installed in this environment (the workers must share it)",
    )
    group.add_argument(
        "--batch-size",
        type=positive_int,
        default=DEFAULT_BATCH_SIZE,
        metavar="N",
        help=f"split packages with more entry points than N into tasks of N (default: {DEFAULT_BATCH_SIZE})",
    )
    group.add_argument(
        "--task-timeout",
        type=positive_float,
        default=3600.0,
        metavar="S",
        help="seconds one cluster task may take; its scan is stopped and the task reported failed "
        "(--resume runs it again) (default: 3600)",
    )


def wants_cluster(args: argparse.Namespace) -> bool:
    return bool(args.cluster or args.requirements or args.installed)


def run_cluster_scan(args: argparse.Namespace, options: Any) -> int:
    """The scan command on a cluster: plan, run, add, and print one line per package."""
    from apiprof.engine.cluster.coordinator import scan_on_cluster, write_summary_json
    from apiprof.engine.cluster.inputs import (
        Target,
        targets_from_installed,
        targets_from_requirements,
    )
    from apiprof.errors import UsageError

    targets = [Target(package) for package in args.packages]
    if args.requirements:
        targets += targets_from_requirements(args.requirements)
    if args.installed:
        targets += targets_from_installed()
    if not targets:
        raise UsageError("nothing to scan: name packages, --requirements FILE or --installed")
    cluster = args.cluster or f"local:{args.jobs}"
    with ClusterProgressBar(args.quiet) as bar:
        report = scan_on_cluster(
            targets,
            cluster=cluster,
            db_path=args.db,
            options=options,
            batch_size=args.batch_size,
            resume=args.resume,
            task_timeout=args.task_timeout,
            progress=bar.update,
        )
    if args.summary_json:
        write_summary_json(report, args.summary_json)
    if not args.quiet:
        print_cluster_report(report)
    failed = [t for t in report.tasks if t["status"] in ("failed", "refused")]
    return 1 if (failed or report.failures) and not report.packages else 0


class ClusterProgressBar:
    """A rich progress display on stderr: listing targets, then tasks done of tasks."""

    def __init__(self, quiet: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[current]}", style="dim"),
            console=Console(stderr=True),
            transient=True,
            disable=quiet,
        )
        self.task = self.progress.add_task("connecting to the cluster", total=None, current="")
        self.warned: set[str] = set()

    def __enter__(self) -> ClusterProgressBar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def update(self, event: Any) -> None:
        if event.stage == "isolation" and event.package not in self.warned:
            from rich.markup import escape

            self.warned.add(event.package)  # said once per package, even with --quiet
            self.progress.console.print(
                f"[bold red]WARNING[/bold red] {escape(event.package)}: isolation below strict "
                f"on the cluster — {escape(event.detail)}"
            )
        labels = {"list": "listing entry points", "scan": "scanning on the cluster"}
        if event.stage in labels:
            self.progress.update(
                self.task,
                description=labels[event.stage],
                total=event.total or None,
                completed=event.done,
                current=f"{event.package} ({event.status})" if event.package else "",
            )


def print_cluster_report(report: Any) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    console.print(
        f"cluster {report.cluster} ({report.workers} workers): {len(report.packages)} package(s), "
        f"{len(report.tasks)} task(s) in {report.elapsed_seconds:.1f} s → {report.db_path}"
        + (
            f"; {report.skipped_tasks} task(s) already added (--resume)"
            if report.skipped_tasks
            else ""
        )
    )
    table = Table(title="Packages")
    for column in ("package", "version", "profiled", "tasks", "status"):
        table.add_column(column, justify="right" if column in ("profiled", "tasks") else "left")
    for name, summary in sorted(report.packages.items()):
        table.add_row(
            name,
            summary.get("version", ""),
            f"{summary['profiled']}/{summary['discovered']} ({summary['profiled_fraction']:.0%})",
            str(summary["tasks"]),
            summary["status"],
        )
    console.print(table)
    for task in report.tasks:
        if task["status"] in ("failed", "refused"):
            console.print(
                f"[yellow]task {task['status']}[/yellow] {escape(task['package'])}: "
                f"{escape(task['reason'])}",
                markup=True,
            )
    for name, summary in sorted(report.packages.items()):
        for warning in summary.get("warnings", []):
            console.print(f"[yellow]warning[/yellow] {escape(name)}: {escape(warning)}")
    for failure in report.failures:
        console.print(f"[yellow]not scanned[/yellow] {failure}")
