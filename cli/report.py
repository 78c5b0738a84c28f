"""``apiprof report``: cost by module and namespace, in the terminal or as an HTML page."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from apiprof.cli.options import (
    add_db_argument,
    add_output_arguments,
    add_selection_arguments,
    positive_int,
)

REPORT_DESCRIPTION = """\
Where the cost of a package lives: per module (or namespace, with --depth) the APIs profiled,
samples, time measured, the typical and p90 call, allocation, growth classes and the most
expensive APIs. Times are inclusive, so module totals overlap.
"""

REPORT_EPILOG = """\
--json prints one object: database {path, packages, environments, scans, machine_speed_ns};
  options; total and modules [{module, apis, profiled, time_samples, time_median, time_p90,
  time_total_ns, alloc_samples, alloc_median, alloc_p90, api_medians_ns, growth_classes
  {CLASS: n}, top [{qualname, coverage, time_metric, time_samples, time_median, time_p90,
  alloc_samples, alloc_median, alloc_p90, growth_class}]}]. Times in ns, sizes in bytes.
"""


def run_report(args: argparse.Namespace) -> int:
    from apiprof.analysis.report import ReportOptions, SortBy, module_report
    from apiprof.db.slices import Source

    options = ReportOptions(
        source=Source(args.source),
        package=args.package,
        depth=args.depth,
        top=args.top,
        sort=SortBy(args.sort),
    )
    report = module_report(args.db, options)
    if args.html:
        from apiprof.analysis.html import report_page

        Path(args.html).write_text(report_page(report), encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print_report(report)
    return 0


def print_report(report) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from apiprof.analysis import display
    from apiprof.analysis.html import CAVEAT
    from apiprof.format import format_ns
    from apiprof.model.records import Metric

    console = Console()
    packages = ", ".join(f"{n} {v}".strip() for n, v in report.database.packages.items())
    console.print(
        f"[bold]{escape(report.database.path)}[/bold]: {escape(packages or 'no package recorded')}; "
        f"{report.options.source} measurements"
    )
    table = Table(title="Cost by module", title_justify="left")
    for column in (
        "module",
        "APIs",
        "samples",
        "total",
        "median",
        "p90",
        "calls by cost",
        "alloc",
        "growth",
    ):
        left = column in ("module", "calls by cost", "growth")
        table.add_column(
            column, justify="left" if left else "right", overflow="fold", no_wrap=not left
        )
    for module in (*report.modules, report.everything):
        time = module.time
        table.add_row(
            escape(module.name),
            f"{len(module.profiled)}/{len(module.apis)}",
            str(time.count),
            format_ns(module.total_ns),
            display.hist_stat(Metric.WALL, time, 50),
            display.hist_stat(Metric.WALL, time, 90),
            display.module_spark(module),
            display.hist_stat(Metric.ALLOC_INCL, module.alloc, 50),
            escape(display.growth_summary(module)),
            end_section=module is report.modules[-1],
        )
    console.print(table)
    if report.options.top:
        top = Table(
            title=f"Most expensive APIs per module (top {report.options.top})", title_justify="left"
        )
        for column in ("module", "API", "median", "p90", "allocated", "growth", "samples"):
            top.add_column(
                column,
                justify="left" if column in ("module", "API", "growth") else "right",
                overflow="fold",
            )
        for module in report.modules:
            apis = module.top(report.options.top)
            for position, api in enumerate(apis):
                top.add_row(
                    escape(module.name) if position == 0 else "",
                    escape(api.qualname),
                    display.api_median(api),
                    display.hist_stat(api.time_metric or Metric.WALL, api.time, 90),
                    display.hist_stat(Metric.ALLOC_INCL, api.alloc, 50),
                    api.growth or "—",
                    str(api.time.count if api.time else 0),
                    end_section=position == len(apis) - 1,
                )
        console.print(top)
    console.print(CAVEAT, style="dim")


def register(commands: argparse._SubParsersAction) -> None:
    from apiprof.analysis.report import SortBy

    parser = commands.add_parser(
        "report",
        help="cost by module and namespace",
        description=REPORT_DESCRIPTION,
        epilog=REPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_db_argument(parser)
    add_output_arguments(parser)
    add_selection_arguments(parser)
    parser.add_argument(
        "--depth",
        type=positive_int,
        metavar="N",
        help="group modules into namespaces of their first N name components (e.g. 1: per package)",
    )
    parser.add_argument(
        "--top",
        type=int,
        default=3,
        metavar="N",
        help="most expensive APIs listed per module (default: 3)",
    )
    parser.add_argument(
        "--sort",
        choices=[str(s) for s in SortBy],
        default=str(SortBy.TOTAL),
        help="module order: total time measured, median call, number of APIs, or name (default: total)",
    )
    parser.set_defaults(handler=run_report)
