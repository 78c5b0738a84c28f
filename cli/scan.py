"""``apiprof-scan PACKAGE`` / ``apiprof scan``: profile packages into a database, with progress."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from apiprof.cli.cluster import add_cluster_arguments, run_cluster_scan, wants_cluster
from apiprof.cli.options import non_negative_float, positive_float, positive_int, size_list
from apiprof.db.schema import DEFAULT_DB
from apiprof.errors import UsageError

SCAN_DESCRIPTION = """\
Profile every public entry point of each PACKAGE and add the results to a SQLite database.

Everything that runs the package's code happens in confined worker processes, a fresh one
per entry point. At the strict isolation level (the default where Linux allows it) each runs
under bubblewrap in its own user, mount, PID, network and IPC namespaces: a read-only file system
but its sandbox directory, loopback-only network, an unprivileged uid, and a system-call filter
the scanner supervises. What a package tries that the sandbox forbids is refused and reported
with the reason; a worker that crashes, hangs, runs out of memory or sends anything suspect is
replaced and its entry point reported. Below strict the scan says so at the start and in the
database. Kernel exploits are out of scope: scan code you distrust entirely inside a VM (see the
threat model in docs/cli.md).

Results are stored per entry point as they arrive: interrupting a scan loses nothing measured,
and --resume continues it. Scanning again adds samples (counts add up, nothing is overwritten).
"""

SCAN_EPILOG = """\
timing and parallelism:
  Typical time is the median active wall time per call (probe overhead removed); thread CPU
  time is read on a sample of calls. With --jobs N, wall time stays trustworthy only while every
  worker has an idle core (workers compete for cores, caches and memory bandwidth); the sampled
  CPU time stays accurate. Use --jobs 1 (the default) on an idle machine for reference numbers.

exit codes: 0 done, 1 scan failed, 2 usage error (unknown package, bad scenario file),
3 database error (locked, not an apiprof file), 130 interrupted (resume with --resume).
"""


SOURCE_FLAGS = [
    (
        "stubs",
        "do not type arguments from .pyi stubs (the package's own, types-* packages, typeshed)",
    ),
    ("docstring-types", "do not type arguments from docstrings (:param int x:, numpydoc, Google)"),
    (
        "subclasses",
        "do not build instances from concrete subclasses and the package's factories, nor feed "
        "receivers through their input method",
    ),
    (
        "observed",
        "do not offer values the package's own entry points return where an instance of its "
        "class or an iterator is wanted",
    ),
    ("heuristics", "do not guess arguments from parameter names, their use and sibling defaults"),
    ("capture", "do not replay arguments recorded from docstring examples and the --tests suite"),
]
"""``--no-X`` switches for the argument sources, each mapping to ScanOptions.X."""


def add_scan_arguments(parser: argparse.ArgumentParser) -> None:
    from apiprof.engine.scan import ScanOptions

    default = ScanOptions()
    parser.add_argument(
        "packages",
        metavar="PACKAGE",
        nargs="*",
        help="importable name(s) of the package(s) to scan, e.g. textwrap",
    )
    parser.add_argument(
        "--db",
        default=DEFAULT_DB,
        metavar="PATH",
        help=f"profile database to add to (default: ./{DEFAULT_DB})",
    )
    parser.add_argument(
        "--scenarios",
        nargs="+",
        default=[],
        metavar="FILE",
        action="extend",
        help="scenario files (TOML, see docs/scenario-format.md) with calls, setup and size axes; repeatable",
    )
    parser.add_argument(
        "--no-bundled-scenarios",
        action="store_true",
        help="do not add the scenario file apiprof ships for the package (today: json)",
    )
    parser.add_argument(
        "--no-docstrings",
        action="store_true",
        help="do not run the API's >>> docstring examples as scenarios",
    )
    parser.add_argument(
        "--no-synth",
        action="store_true",
        help="do not synthesise arguments from annotations and defaults",
    )
    for flag, what in SOURCE_FLAGS:
        parser.add_argument(f"--no-{flag}", action="store_true", help=what)
    parser.add_argument(
        "--sizes",
        type=size_list,
        default=default.sizes,
        metavar="N,N,...",
        help="input sizes for synthesised sized scenarios, used to fit growth "
        f"(default: {','.join(map(str, default.sizes))})",
    )
    parser.add_argument(
        "--min-runs",
        "--repeat",
        dest="repeat",
        type=positive_int,
        default=default.repeat,
        metavar="N",
        help=f"at least N measured runs per scenario size and pass, however long they take "
        f"(up to {default.max_seconds:g} s per pass; default: {default.repeat})",
    )
    parser.add_argument(
        "--time-budget",
        type=non_negative_float,
        default=default.time_budget,
        metavar="S",
        help="seconds each timing pass keeps running the scenario after the minimum, so cheap calls get "
        f"thousands of samples (default: {default.time_budget:g})",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=positive_int,
        default=1,
        metavar="N",
        help="parallel workers (default: 1); wall time needs an idle core per worker (see below)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=default.call_timeout,
        metavar="S",
        help=f"seconds one call may take; one stuck in C code ends its worker 2 CPU-seconds later "
        f"(default: {default.call_timeout:g})",
    )
    parser.add_argument(
        "--scenario-timeout",
        type=positive_float,
        default=default.scenario_timeout,
        metavar="S",
        help="seconds all scenarios of one entry point may take together; the worker is killed after it "
        f"(default: {default.scenario_timeout:g})",
    )
    parser.add_argument(
        "--memory-mb",
        type=positive_int,
        default=default.memory_mb,
        metavar="M",
        help=f"memory cap per worker in MiB (default: {default.memory_mb})",
    )
    parser.add_argument(
        "--tests",
        metavar="PATH",
        default="",
        help="also run the package's own pytest suite (file or directory) under the profiler as one scenario; "
        "every entry point it calls gets measurements, and ones only the tests reach become profiled",
    )
    parser.add_argument(
        "--tests-timeout",
        type=positive_float,
        default=default.tests_timeout,
        metavar="S",
        help="seconds all runs of the --tests suite may take together (it runs 2 + timing groups times); "
        f"past it the suite is dropped with a warning (default: {default.tests_timeout:g})",
    )
    parser.add_argument(
        "--no-sandbox-guard",
        action="store_true",
        help="skip the in-process reporter (the OS sandbox and the system-call filter stay); for measuring its cost",
    )
    parser.add_argument(
        "--isolation",
        choices=["auto", "strict", "process"],
        default=default.isolation,
        help="strict: namespaces, read-only file system, own network (refuse to scan where "
        "unavailable); process: plain worker processes with the filter and reporter; auto "
        "(default): strict where available, else process with a warning",
    )
    parser.add_argument(
        "--worker-start",
        choices=["zygote", "fresh"],
        default=default.worker_start,
        help="zygote (default): fork each entry point's worker from a confined process that "
        "started once; fresh: a new interpreter and sandbox per entry point (slower)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the last unfinished scan of PACKAGE in --db (with several packages, finished ones are skipped)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=[],
        metavar="NAME",
        action="extend",
        help="profile only these entry points (qualified names, e.g. json.dumps); the rest are not scanned",
    )
    parser.add_argument(
        "--summary-json",
        metavar="PATH",
        help="also write the summary as JSON: discovered, profiled, each entry point not profiled with its reason",
    )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="no progress bar and no summary table"
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="only list the public entry points of PACKAGE (discovery in a sandboxed worker), profile nothing",
    )


def scan_options(args: argparse.Namespace):
    from apiprof.engine.scan import ScanOptions

    return ScanOptions(
        scenario_files=tuple(args.scenarios),
        bundled_scenarios=not args.no_bundled_scenarios,
        docstrings=not args.no_docstrings,
        synthesize=not args.no_synth,
        stubs=not args.no_stubs,
        docstring_types=not args.no_docstring_types,
        subclasses=not args.no_subclasses,
        observed=not args.no_observed,
        heuristics=not args.no_heuristics,
        capture=not args.no_capture,
        sizes=tuple(args.sizes),
        repeat=args.repeat,
        time_budget=args.time_budget,
        jobs=args.jobs,
        call_timeout=args.timeout,
        scenario_timeout=args.scenario_timeout,
        memory_mb=args.memory_mb,
        guard=not args.no_sandbox_guard,
        isolation=args.isolation,
        worker_start=args.worker_start,
        tests=args.tests,
        tests_timeout=args.tests_timeout,
        only=tuple(args.only),
    )


def run_scan(args: argparse.Namespace) -> int:
    from apiprof.engine.scan import ScanInterrupted, busy_warnings, last_scan_status, scan

    if args.list:
        return list_entry_points(args)
    options = scan_options(args)
    if wants_cluster(args):
        return run_cluster_scan(args, options)
    if not args.packages:
        raise UsageError("name at least one PACKAGE to scan (or --requirements FILE, --installed)")
    summaries = []
    for package in args.packages:
        resume = args.resume
        if resume and len(args.packages) > 1:  # resuming a list: finished ones stay, new ones start
            status = last_scan_status(args.db, package)
            if status == "finished":
                if not args.quiet:
                    print(f"{package}: already finished in {args.db}; skipped (--resume)")
                continue
            resume = status is not None
        try:
            if args.quiet:
                summary = scan(
                    package,
                    db_path=args.db,
                    options=options,
                    resume=resume,
                    progress=warn_isolation,
                )
            else:
                with ScanProgressBar(package) as bar:
                    summary = scan(
                        package,
                        db_path=args.db,
                        options=options,
                        resume=resume,
                        progress=bar.update,
                    )
        except ScanInterrupted as stopped:  # keep what was measured, then exit as interrupted
            summaries.append(stopped.summary)
            write_summary_json(args.summary_json, summaries)
            if not args.quiet:
                print_scan_summary(stopped.summary)
            raise
        if args.quiet:
            for warning in busy_warnings(summary.disturbance):  # isolation's came as progress
                print(f"{package}: warning: {warning}", file=sys.stderr)
        else:
            print_scan_summary(summary)
        summaries.append(summary)
        # rewritten after each package: an interrupted run keeps the finished ones
        write_summary_json(args.summary_json, summaries)
    return 0


def write_summary_json(path: str | None, summaries: list) -> None:
    if path:
        document = {"packages": [s.to_json() for s in summaries]}
        Path(path).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def list_entry_points(args: argparse.Namespace) -> int:
    """``--list``: the public entry points of each package (discovery only, in a worker)."""
    from apiprof.engine.scan import list_package

    for package in args.packages:
        discovery = list_package(package, options=scan_options(args))
        for entry in discovery.entry_points:
            print(f"{entry.qualname}{entry.signature}  [{entry.kind}]")
        for module, error in discovery.import_failures.items():
            print(f"# not importable: {module}: {error}")
    return 0


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


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "scan",
        help="profile a package (same as apiprof-scan)",
        description=SCAN_DESCRIPTION,
        epilog=SCAN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    configure(parser)


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments and handler of the scan command (``apiprof scan`` and ``apiprof-scan``)."""
    add_scan_arguments(parser)
    add_cluster_arguments(parser)
    parser.set_defaults(handler=run_scan)
