"""``apiprof trace``, ``apiprof window`` and ``apiprof export``: sampled traces on the command line.

Record a program (``trace``), report on any time window of the recording (``window``) and
hand it to a viewer (``export``). Each command is a few lines over :mod:`apiprof.tracing`.
"""

from __future__ import annotations

import argparse
import json
import sys

from apiprof.cli.options import positive_int

TRACE_EPILOG = """\
examples:
  apiprof trace -o run.trace -- python script.py --its-own args
  apiprof trace -o run.trace --interval 5ms -- python -m mypackage.cli
The program's exit code is apiprof's exit code. Ctrl-C stops the program; the trace is kept.
"""

WINDOW_EPILOG = """\
times are seconds from the start of the trace (1.5) or numbers with a unit (250ms, 2s, 40us).
--json prints one object with these stable fields:
  trace, window: {from_ns, to_ns, from_s, to_s}, recording_ns, interval_ns,
  tree: {leaf_size, fanout, keep_percent}, samples, exact, unattributed, accuracy,
  nodes: {merged, enumerated, descended, skipped},
  threads: [names the report is limited to], by_thread: [{thread, samples}],
  stacks: [{samples, thread, frames: [{function, file, line}]}]   (outermost call first)
  functions_by_inclusive, functions_by_exclusive: [{function, file, line, inclusive, exclusive}]
  trigger: null, or for a delay trace {event, at_ns, threshold_ns, elapsed_ns, event_start_ns, thread}
  markers: [{event, thread, start_ns, end_ns, duration_ns, threshold_ns, slow}]
"""


def _time(text: str) -> int:
    from apiprof.errors import UsageError
    from apiprof.tracing.window import parse_time

    try:
        return parse_time(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _percent(text: str) -> float:
    value = float(text)
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"must be a percentage in (0, 100], got {text}")
    return value


def add_tree_arguments(parser: argparse.ArgumentParser) -> None:
    from apiprof.tracing.timetree import DEFAULT_SHAPE as default

    group = parser.add_argument_group("time tree (how window reports are indexed)")
    group.add_argument(
        "--leaf-size",
        type=positive_int,
        default=default.leaf_size,
        metavar="M",
        help=f"nodes with fewer samples keep them raw (default {default.leaf_size})",
    )
    group.add_argument(
        "--fanout",
        type=positive_int,
        default=default.fanout,
        metavar="N",
        help=f"children per inner node (default {default.fanout})",
    )
    group.add_argument(
        "--keep-percent",
        type=_percent,
        default=default.keep_percent,
        metavar="P",
        help="inner nodes keep the top stacks covering P%% of their samples; 100 is exact"
        f" (default {default.keep_percent:g})",
    )


def _shape(args: argparse.Namespace):
    from apiprof.tracing.timetree import TreeShape

    return TreeShape(args.leaf_size, args.fanout, args.keep_percent)


def run_trace(args: argparse.Namespace) -> int:
    from apiprof.tracing.record import trace_command

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    code, summary = trace_command(
        command, args.output, interval=args.interval / 1e9, tree=_shape(args)
    )
    if summary is None:
        print(
            f"apiprof trace: the program ended before a trace was written ({args.output})",
            file=sys.stderr,
        )
    else:
        print(f"apiprof trace: {summary.describe()}", file=sys.stderr)
    return code if code >= 0 else 128 - code  # killed by signal N: the shell's 128 + N


def run_window(args: argparse.Namespace) -> int:
    from apiprof.tracing.window import window_report

    report = window_report(
        args.trace, args.start, args.end, shape=_shape(args), top=args.top, threads=args.thread
    )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.render(), end="")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from apiprof.tracing.export import export

    path = export(args.trace, args.format, args.output, start=args.start, end=args.end)
    viewer = (
        "https://www.speedscope.app" if args.format == "speedscope" else "https://ui.perfetto.dev"
    )
    print(f"wrote {path} (open it in {viewer})", file=sys.stderr)
    return 0


def _add_window_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--from",
        dest="start",
        type=_time,
        default=None,
        metavar="T0",
        help=f"start of the {what} (default: the start of the trace)",
    )
    parser.add_argument(
        "--to",
        dest="end",
        type=_time,
        default=None,
        metavar="T1",
        help=f"end of the {what}, exclusive (default: the end of the trace)",
    )


def register(commands: argparse._SubParsersAction) -> None:
    from apiprof.tracing.export import FORMATS
    from apiprof.tracing.record import DEFAULT_INTERVAL  # both light: no tracker, no uploader

    trace = commands.add_parser(
        "trace",
        help="record a sampled trace of a Python program",
        description="Run a Python program and sample the call stacks of all its threads into a"
        " trace file (SQLite), with a time tree for fast window reports.",
        epilog=TRACE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    trace.add_argument("-o", "--output", required=True, metavar="TRACE", help="trace file to write")
    trace.add_argument(
        "--interval",
        type=_time,
        default=round(DEFAULT_INTERVAL * 1e9),
        metavar="TIME",
        help=f"time between samples, e.g. 1ms, 500us (default {DEFAULT_INTERVAL * 1000:g}ms)",
    )
    add_tree_arguments(trace)
    trace.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- python script.py ARGS",
        help="the program: python script.py, python -m module or python -c code, with its arguments",
    )
    trace.set_defaults(handler=run_trace)

    window = commands.add_parser(
        "window",
        help="top stacks and functions of a time window of a trace",
        description="Report where the time went between two moments of a trace: top stacks,"
        " top functions (inclusive and exclusive) and how exact the counts are.",
        epilog=WINDOW_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    window.add_argument(
        "trace", metavar="TRACE", help="trace file (from apiprof trace or the delay tracker)"
    )
    _add_window_arguments(window, "window")
    window.add_argument(
        "--top", type=positive_int, default=10, metavar="K", help="rows per table (default 10)"
    )
    window.add_argument(
        "--thread",
        action="append",
        default=[],
        metavar="NAME",
        help="only this thread (its name, or its number in the trace); repeatable",
    )
    window.add_argument(
        "--json", action="store_true", help="print JSON with the stable fields listed below"
    )
    add_tree_arguments(window)
    window.set_defaults(handler=run_window)

    export = commands.add_parser(
        "export",
        help="write a trace for speedscope or Perfetto",
        description="Convert a trace to speedscope's JSON format or the Chrome trace-event format"
        " (opened by Perfetto and chrome://tracing).",
    )
    export.add_argument("trace", metavar="TRACE", help="trace file")
    export.add_argument("--format", required=True, choices=FORMATS, help="output format")
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="file to write")
    _add_window_arguments(export, "export")
    export.set_defaults(handler=run_export)
