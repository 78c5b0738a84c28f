"""``apiprof merge OUT IN...``: add profile databases together."""

from __future__ import annotations

import argparse
from pathlib import Path

from apiprof.errors import UsageError


def run_merge(args: argparse.Namespace) -> int:
    from apiprof.db.merge import merge_files

    for path in args.inputs:
        if Path(path).resolve() == Path(args.output).resolve():
            raise UsageError(f"{path} is both the output and an input; name a new output file")
    totals = merge_files(args.output, args.inputs)
    print(
        f"merged {len(args.inputs)} database(s) into {args.output}: {totals.get('buckets', 0)} bucket rows added"
    )
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    merge = commands.add_parser(
        "merge",
        help="add databases together",
        description="Add the profiles of IN databases into OUT (created if missing). Counts add; nothing is overwritten.",
    )
    merge.add_argument("output", metavar="OUT", help="database to create or extend")
    merge.add_argument("inputs", metavar="IN", nargs="+", help="databases to add (read only)")
    merge.set_defaults(handler=run_merge)
