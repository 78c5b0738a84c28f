"""What ``apiprof-scan`` shows while and after it scans: the progress display (the entry points
running now, the time left), the warning when isolation is below strict, and the end-of-scan
summary (coverage, the most expensive entry points, the reasons for what was not profiled,
grouped)."""

from __future__ import annotations


def warn_isolation(event) -> None:
    """Say loudly, before anything runs, when workers are confined less than strictly."""
    if event.stage == "isolation" and event.status != "strict":
        import sys

        print(
            f"apiprof-scan: WARNING: isolation below strict — {event.detail}",
            file=sys.stderr,
            flush=True,
        )


class ScanProgressBar:
    """A rich progress display on stderr, fed by ``engine.scan.ScanProgress`` events: the entry
    point(s) running now and an estimate of the time left."""

    def __init__(self, package: str) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[eta]}"),
            TextColumn("{task.fields[current]}", style="dim"),
            console=Console(stderr=True),
            transient=True,
        )
        self.package = package
        self.task = self.progress.add_task(
            f"{package}: starting workers", total=None, current="", eta=""
        )

    def __enter__(self) -> ScanProgressBar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def update(self, event) -> None:
        if event.stage == "isolation" and event.status != "strict":
            from rich.markup import escape

            self.progress.console.print(
                f"[bold red]WARNING[/bold red] isolation below strict — {escape(event.detail)}"
            )
        labels = {
            "calibrate": "calibrating probes",
            "discover": "discovering entry points",
            "capture": "capturing arguments from docstring examples",
            "tests": "running the test suite under the profiler (--tests)",
            "profile": "profiling",
            "drive": "running the package's working scenarios for what nothing else could call",
        }
        if event.stage in labels:
            self.progress.update(
                self.task,
                description=f"{self.package}: {labels[event.stage]}",
                total=event.total or None,
                completed=event.done,
                current=f"now: {', '.join(event.running)}" if event.running else "",
                eta=f"~{format_seconds(event.eta_seconds)} left"
                if event.eta_seconds is not None
                else "",
            )


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``1 h 2 min``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


GROUP_NAMES = 8
"""Entry points named per reason in the summary (the rest are counted)."""


def print_scan_summary(summary) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from apiprof.format import format_bytes, format_ns

    console = Console()
    console.print(
        f"[bold]{summary.package}[/bold]{' ' + summary.version if summary.version else ''}: {summary.profiled} of {summary.discovered} entry points "
        f"profiled ({summary.profiled_fraction:.0%}) in {summary.elapsed_seconds:.1f} s → {summary.db_path} "
        f"(scan {summary.scan_id}, {summary.status})"
    )
    if summary.runnable < summary.discovered:
        console.print(
            f"{summary.discovered - summary.runnable} need an optional dependency that is not "
            f"installed; of the {summary.runnable} that can run here, {summary.profiled} profiled "
            f"({summary.runnable_profiled_fraction:.0%})"
        )
    if summary.resumed_skipped:
        console.print(f"resumed: {summary.resumed_skipped} entry points were already done")
    if summary.self_drive is not None:
        drive = summary.self_drive
        console.print(
            f"self-driven capture: {drive.drivers_run} runs of the package's working scenarios "
            f"reached {drive.reached} of the {drive.watched} entry points nothing else could call; "
            f"{len(drive.profiled)} profiled that way ({drive.seconds:.1f} s)"
        )
    if summary.most_expensive:
        table = Table(title="Most expensive entry points (median time per call)")
        for column in ("entry point", "time median", "time p90", "allocated", "growth", "samples"):
            table.add_column(
                column,
                justify="left" if column in ("entry point", "growth") else "right",
                no_wrap=column == "entry point",  # names stay whole
            )
        for line in summary.most_expensive:
            table.add_row(
                line.qualname,
                format_ns(line.time_median_ns),
                format_ns(line.time_p90_ns),
                format_bytes(line.alloc_median_bytes),
                line.growth or "—",
                str(line.samples),
            )
        console.print(table)
    counts = Table(title="Coverage")
    counts.add_column("status")
    counts.add_column("entry points", justify="right")
    for status, n in sorted(summary.coverage_counts.items(), key=lambda item: -item[1]):
        counts.add_row(status, str(n))
    console.print(counts)
    if summary.not_profiled:
        print_reason_groups(console, summary)
    for module, error in summary.import_failures.items():
        console.print(f"[yellow]import failed[/yellow] {escape(module)}: {escape(error)}")
    for module, reasons in summary.blocked_at_import.items():
        console.print(
            f"[red]blocked at import[/red] {escape(module)}: {escape('; '.join(reasons))}"
        )
    for warning in summary.warnings:
        console.print(f"[yellow]warning[/yellow] {escape(warning)}")
    if summary.tests is not None:
        print_suite_line(console, summary.tests)


def print_reason_groups(console, summary) -> None:
    """Entry points not profiled, one block per reason: the reason once, then the names
    (whole, separated by commas, so lines break between names and never inside one)."""
    from rich.markup import escape

    console.print(f"\n[bold]Not profiled ({len(summary.not_profiled)}), by reason[/bold]")
    for group in summary.groups():
        names = list(group.qualnames)
        shown = ", ".join(names[:GROUP_NAMES])
        more = f" and {len(names) - GROUP_NAMES} more" if len(names) > GROUP_NAMES else ""
        console.print(f"[bold]{len(names):>5}[/bold]  {group.status}: {escape(group.reason)}")
        console.print(
            f"       {escape(shown)}{more}", style="dim", overflow="ignore", soft_wrap=False
        )
    console.print(
        "details (scenario, phase, where it raised): apiprof show NAME --traceback, or --summary-json"
    )


def print_suite_line(console, suite) -> None:
    """One line on the --tests scenario, then its warnings."""
    from rich.markup import escape

    counts = ", ".join(
        f"{suite.outcomes.get(k, 0)} {k}" for k in ("passed", "failed", "errors", "skipped")
    )
    console.print(
        f"tests: {suite.scenario_id} reached {len(suite.reached)} entry points "
        f"({len(suite.only_by_tests)} only through the tests) in {suite.runs} profiled runs; tests {counts}",
        markup=False,
    )
    for warning in suite.warnings:
        console.print(f"[yellow]warning[/yellow] {escape(warning)}")
