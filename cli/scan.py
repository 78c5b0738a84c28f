"""``apiprof-scan PACKAGE`` / ``apiprof scan``: profile packages into a database, with progress."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from apiprof.cli.cluster import add_cluster_arguments, run_cluster_scan, wants_cluster
from apiprof.cli.options import non_negative_float, positive_float, positive_int, size_list
from apiprof.cli.scan_display import ScanProgressBar, print_scan_summary, warn_isolation
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
        "examples",
        "do not pass the literal arguments the package's own code, docstrings and comments "
        "pass to the same callable",
    ),
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
    (
        "nodes",
        "do not build syntax-tree nodes from what their classes list as children and plain "
        "values, nor give a visit_X method an X",
    ),
    (
        "patterns",
        "do not give a match parameter (m.group(...)) a match of the receiver's or module's own "
        "regular expression, nor a parameter the body matches text that pattern accepts",
    ),
    (
        "package-data",
        "do not offer the package's own data files to path, file and bytes parameters",
    ),
    ("heuristics", "do not guess arguments from parameter names, their use and sibling defaults"),
    (
        "prepare",
        "do not call first the sibling method that sets the attributes a method reads and its "
        "receiver lacks (a report's init_file before its error)",
    ),
    ("capture", "do not replay arguments recorded from docstring examples and the --tests suite"),
    (
        "self-drive",
        "do not run the package's working scenarios to capture the arguments it passes "
        "mid-stream to entry points nothing else could call (parser, scanner, emitter methods)",
    ),
    (
        "repair",
        "do not mend rejected synthesised arguments from what the call's exception asks for "
        "(a missing key or attribute, a mapping, an existing file, parameter names, sys.argv)",
    ),
    (
        "results",
        "do not give entry points nothing else could call the objects the package's own "
        "related working calls return or hold (parse's result for unparse, a processor "
        "registered in a configured converter)",
    ),
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
        examples=not args.no_examples,
        subclasses=not args.no_subclasses,
        observed=not args.no_observed,
        nodes=not args.no_nodes,
        patterns=not args.no_patterns,
        package_data=not args.no_package_data,
        heuristics=not args.no_heuristics,
        prepare=not args.no_prepare,
        capture=not args.no_capture,
        self_drive=not args.no_self_drive,
        repair=not args.no_repair,
        results=not args.no_results,
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
