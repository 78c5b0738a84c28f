"""``apiprof show QUALNAME``: one API's profile in the terminal, or as JSON for scripts."""

from __future__ import annotations

import argparse
import json
from typing import Any

from apiprof.cli.options import add_db_argument
from apiprof.model.records import Metric

SHOW_EPILOG = """\
--json prints one object with these stable fields:
  qualname, module, kind, signature, summary
  coverage: {status, reason}
  metrics: {METRIC: {label, unit, count, mean, median, p90, stdev,
            buckets: [{bucket, low, high, count, sum, sum_sq}]}}
     METRIC is one of wall_ns, cpu_ns, alloc_incl_bytes, alloc_excl_bytes, calls_per_run,
     io_read_bytes, io_write_bytes (I/O: Linux only, present even when zero);
     bucket i holds values in [low, high) = [2**i, 2**(i+1)); bucket -1 holds values below 1
  growth_class: e.g. "O(n)" or null;  growth: [{metric, scenario_id, growth_class, rel_error, r2,
            points, size_axis}]
  scenario_count, scenarios: [{id, source, description, sizes, setup, call, inputs}]
  failures: [{scenario_id, phase, kind, reason, location, traceback}]  (why scenarios failed;
     phase is collect, setup, call or consume)
Statistics are null when a metric has no samples. Times are in ns, sizes in bytes.
"""


def print_inputs(scenario: dict[str, Any]) -> None:
    """What a scenario ran, so it can be reproduced by hand: its inputs, else its code."""
    if scenario.get("inputs"):
        print(f"      inputs: {scenario['inputs']}")
    elif scenario.get("source") in ("docstring", "file") and scenario.get("call"):
        for line in scenario["call"].strip().splitlines()[:6]:
            print(f"      >>> {line}")


def print_failure(failure: dict[str, Any], *, args_traceback: bool = False) -> None:
    where = f" [{failure['scenario_id']}" + (f", {failure['phase']}" if failure["phase"] else "")
    where = (
        f"{where}]"
        if failure["scenario_id"]
        else (f" [{failure['phase']}]" if failure["phase"] else "")
    )
    print(f"  {failure['kind']}{where}: {failure['reason']}")
    if failure["location"]:
        print(f"      at {failure['location']}")
    if args_traceback and failure["traceback"]:
        for line in failure["traceback"].splitlines():
            print(f"      | {line}")


def print_profile(data: dict[str, Any], *, traceback: bool = False) -> None:
    from apiprof.format import format_value, text_histogram, worth_showing
    from apiprof.model.histogram import Histogram

    print(f"{data['qualname']}{data['signature']}")
    if data["summary"]:
        print(f"  {data['summary']}")
    status = data["coverage"]["status"]
    if status and status != "profiled":
        print(f"  not profiled ({status}): {data['coverage']['reason']}")
    for name, m in data["metrics"].items():
        metric = Metric(name)
        hist = Histogram.from_buckets(
            (b["bucket"], b["count"], b["sum"], b["sum_sq"]) for b in m["buckets"]
        )
        if not worth_showing(metric, hist):
            continue
        print(
            f"\n{metric.label}: median {format_value(metric, m['median'])}, p90 {format_value(metric, m['p90'])}, "
            f"mean {format_value(metric, m['mean'])}, {m['count']} samples"
        )
        for line in text_histogram(hist, metric):
            print(f"  {line}")
    if data["scenarios"]:
        print(f"\nscenarios ({data['scenario_count']}):")
        for s in data["scenarios"]:
            sizes = f" sizes {', '.join(map(str, s['sizes']))}" if s["sizes"] else ""
            print(f"  {s['id']} [{s['source'] or '?'}]{sizes} {s['description']}".rstrip())
            print_inputs(s)
    if data.get("failures"):
        print(f"\nfailed attempts ({len(data['failures'])}):")
        for f in data["failures"]:
            print_failure(f, args_traceback=traceback)
    if data["growth"]:
        print("\ngrowth:")
        for g in data["growth"]:
            print(
                f"  {Metric(g['metric']).label}: {g['growth_class']} in {g['size_axis']} "
                f"(±{g['rel_error']:.0%}, {g['points']} sizes, scenario {g['scenario_id']})"
            )


def run_show(args: argparse.Namespace) -> int:
    from apiprof.db.document import profile_document
    from apiprof.db.schema import open_db

    db = open_db(args.db, readonly=True)
    try:
        data = profile_document(db, args.qualname)
    finally:
        db.conn.close()
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print_profile(data, traceback=args.traceback)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    show = commands.add_parser(
        "show",
        help="print the profile of one entry point",
        epilog=SHOW_EPILOG,
        description="Print the cost profile of one API: summary, a histogram per metric, scenarios, growth.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    show.add_argument(
        "qualname",
        metavar="QUALNAME",
        help="qualified name, e.g. textwrap.wrap (re-exported aliases work)",
    )
    add_db_argument(show)
    show.add_argument(
        "--json", action="store_true", help="print JSON with the stable fields listed below"
    )
    show.add_argument(
        "--traceback",
        action="store_true",
        help="with each failed attempt, print the last frames of the worker's traceback",
    )
    show.set_defaults(handler=run_show)
