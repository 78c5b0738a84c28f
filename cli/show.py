"""``apiprof show QUALNAME``: one API's profile in the terminal, or as JSON for scripts."""

from __future__ import annotations

import argparse
import json
from typing import Any

from apiprof.cli.options import add_db_argument
from apiprof.format import printable
from apiprof.model.records import Metric

SHOW_EPILOG = """\
--json prints one object with these stable fields:
  qualname, module, kind, signature, summary
  coverage: {status, reason}
  reference: {size, size_axis, label}  what the typical figures stand for: the measured
     input size closest to 100 (e.g. label "at n=100"); size null when the API has no sizes
  metrics: {METRIC: {label, unit, count, mean, median, p90, stdev,
            buckets: [{bucket, low, high, count, sum, sum_sq}],
            sub_buckets: [{bucket, sub, low, high, count, sum, sum_sq}]}}
     typical figures (at the reference size); median and p90 come from the sub-buckets.
     METRIC is one of wall_ns, cpu_ns, alloc_incl_bytes, alloc_excl_bytes, calls_per_run,
     io_read_bytes, io_write_bytes (I/O: Linux only, present even when zero),
     consume_wall_ns, consume_alloc_bytes (APIs returning an iterator: the call plus
     consuming what it returned);
     bucket i holds values in [low, high) = [2**i, 2**(i+1)); bucket -1 holds values below 1;
     sub-bucket j of bucket i holds [2**(i + j/8), 2**(i + (j+1)/8))
  cpu_ns counts are weighted: a sampled call counts as the calls it stands for (1 in 16 -> 16)
  sizes: [{scenario_id, size, metric, count, median, p90, mean}]  per scenario and size
     (size null for unsized scenarios), for wall_ns, cpu_ns, alloc_incl_bytes and consume_*
  growth_class: e.g. "O(n)" or null;  growth: [{metric, scenario_id, growth_class, rel_error, r2,
            points, size_axis}]
  scenario_count, scenarios: [{id, source, description, sizes, setup, call, inputs}]
  failures: [{scenario_id, phase, kind, reason, location, traceback}]  (why scenarios failed;
     phase is collect, setup, call or consume)
Statistics are null when a metric has no samples. Times are in ns, sizes in bytes.
"""


def say(text: str = "") -> None:
    """Print a line that may carry text from the profiled package, made terminal-safe."""
    print(printable(text))


def print_inputs(scenario: dict[str, Any]) -> None:
    """What a scenario ran, so it can be reproduced by hand: its inputs, else its code."""
    if scenario.get("inputs"):
        say(f"      inputs: {scenario['inputs']}")
    elif scenario.get("source") in ("docstring", "file") and scenario.get("call"):
        for line in scenario["call"].strip().splitlines()[:6]:
            say(f"      >>> {line}")


def print_failure(failure: dict[str, Any], *, args_traceback: bool = False) -> None:
    where = f" [{failure['scenario_id']}" + (f", {failure['phase']}" if failure["phase"] else "")
    where = (
        f"{where}]"
        if failure["scenario_id"]
        else (f" [{failure['phase']}]" if failure["phase"] else "")
    )
    say(f"  {failure['kind']}{where}: {failure['reason']}")
    if failure["location"]:
        say(f"      at {failure['location']}")
    if args_traceback and failure["traceback"]:
        for line in failure["traceback"].splitlines():
            say(f"      | {line}")


def print_profile(data: dict[str, Any], *, traceback: bool = False) -> None:
    from apiprof.format import format_value, text_histogram, worth_showing
    from apiprof.model.histogram import Histogram

    say(f"{data['qualname']}{data['signature']}")
    if data["summary"]:
        say(f"  {data['summary']}")
    if data["reference"]["label"]:
        say(f"  typical figures {data['reference']['label']} (per-size figures below)")
    status = data["coverage"]["status"]
    if status and status != "profiled":
        say(f"  not profiled ({status}): {data['coverage']['reason']}")
    for name, m in data["metrics"].items():
        metric = Metric(name)
        hist = Histogram.from_buckets(
            ((b["bucket"], b["count"], b["sum"], b["sum_sq"]) for b in m["buckets"]),
            ((b["bucket"], b["sub"], b["count"], b["sum"], b["sum_sq"]) for b in m["sub_buckets"]),
        )
        if not worth_showing(metric, hist):
            continue
        say(
            f"\n{metric.label}: median {format_value(metric, m['median'])}, p90 {format_value(metric, m['p90'])}, "
            f"mean {format_value(metric, m['mean'])}, {m['count']} samples"
        )
        for line in text_histogram(hist, metric):
            say(f"  {line}")
    if any(f["size"] is not None for f in data["sizes"]):
        say("\nper size (median, p90, samples):")
        for f in data["sizes"]:
            metric = Metric(f["metric"])
            size = "-" if f["size"] is None else str(f["size"])
            say(
                f"  {f['scenario_id']} {size:>7} {metric.label}: {format_value(metric, f['median'])}, "
                f"{format_value(metric, f['p90'])}, {f['count']}"
            )
    if data["scenarios"]:
        say(f"\nscenarios ({data['scenario_count']}):")
        for s in data["scenarios"]:
            sizes = f" sizes {', '.join(map(str, s['sizes']))}" if s["sizes"] else ""
            say(f"  {s['id']} [{s['source'] or '?'}]{sizes} {s['description']}".rstrip())
            print_inputs(s)
    if data.get("failures"):
        say(f"\nfailed attempts ({len(data['failures'])}):")
        for f in data["failures"]:
            print_failure(f, args_traceback=traceback)
    if data["growth"]:
        say("\ngrowth:")
        for g in data["growth"]:
            say(
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
