"""``apiprof scenarios init PACKAGE``: a scenario file to fill in for what could not be called."""

from __future__ import annotations

import argparse
from pathlib import Path

from apiprof.cli.options import positive_int


def run_scenarios_init(args: argparse.Namespace) -> int:
    from apiprof.engine.scan import ScanOptions, write_scenario_scaffold

    output = Path(args.output or f"{args.package}.scenarios.toml")
    options = ScanOptions(scenario_files=tuple(args.scenarios), jobs=args.jobs)
    written, discovered = write_scenario_scaffold(
        args.package, output, options=options, overwrite=args.force, db_path=args.db
    )
    print(
        f"wrote {output}: {written} of {discovered} entry points still need a scenario; each "
        "template says why and has the values apiprof found filled in — replace the `...`"
    )
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    scenarios = commands.add_parser("scenarios", help="work with scenario files")
    scenario_commands = scenarios.add_subparsers(
        dest="scenarios_command", required=True, metavar="COMMAND"
    )
    init = scenario_commands.add_parser(
        "init",
        help="write a scaffold scenario file",
        description="Write a scaffold scenario file for the entry points of PACKAGE that are still missing: not "
        "profiled in --db, or else not callable by any scenario source. Each template carries the reason, where "
        "its scenario raised, and the best arguments apiprof found. Runs in sandboxed workers.",
    )
    init.add_argument("package", metavar="PACKAGE", help="importable name of the package")
    init.add_argument(
        "-o", "--output", metavar="FILE", help="file to write (default: PACKAGE.scenarios.toml)"
    )
    init.add_argument(
        "--scenarios",
        nargs="+",
        default=[],
        metavar="FILE",
        action="extend",
        help="existing scenario files whose entry points are covered",
    )
    init.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    init.add_argument(
        "--db",
        metavar="PATH",
        help="a database with a scan of PACKAGE: write templates only for what it did not profile",
    )
    init.add_argument(
        "--jobs", "-j", type=positive_int, default=1, metavar="N", help="parallel workers"
    )
    init.set_defaults(handler=run_scenarios_init)
