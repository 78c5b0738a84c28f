"""``apiprof scenarios init PACKAGE``: a scenario file to fill in for what could not be called."""

from __future__ import annotations

import argparse
from pathlib import Path


def run_scenarios_init(args: argparse.Namespace) -> int:
    from apiprof.engine.scan import ScanOptions, write_scenario_scaffold

    output = Path(args.output or f"{args.package}.scenarios.toml")
    options = ScanOptions(scenario_files=tuple(args.scenarios))
    written, discovered = write_scenario_scaffold(
        args.package, output, options=options, overwrite=args.force
    )
    print(
        f"wrote {output}: {written} of {discovered} entry points need a scenario; fill in their calls"
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
        description="Write a scaffold scenario file listing the entry points of PACKAGE that no scenario source "
        "(docstring examples, argument synthesis, --scenarios files) can call yet. Runs discovery in a sandboxed worker.",
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
    init.set_defaults(handler=run_scenarios_init)
