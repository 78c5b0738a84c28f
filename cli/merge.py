"""``apiprof merge OUT IN...``: add profile databases together."""

from __future__ import annotations

import argparse


def run_merge(args: argparse.Namespace) -> int:
    from apiprof.db.merge import merge_files

    totals = merge_files(args.output, args.inputs, allow_repeats=args.allow_repeats)
    print(
        f"merged {len(args.inputs)} database(s) into {args.output}: {totals.get('buckets', 0)} bucket rows added"
    )
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    merge = commands.add_parser(
        "merge",
        help="add databases together",
        description="Add the profiles of IN databases into OUT (created if missing). Counts add; "
        "nothing is overwritten. Every input is checked first (names, numbers in physical "
        "sense); one bad row refuses that input with the reason, and an input already merged "
        "into OUT (the same scans) is refused so nothing counts twice.",
    )
    merge.add_argument("output", metavar="OUT", help="database to create or extend")
    merge.add_argument("inputs", metavar="IN", nargs="+", help="databases to add (read only)")
    merge.add_argument(
        "--allow-repeats",
        action="store_true",
        help="add an input even if its scans are already in OUT (its samples then count twice)",
    )
    merge.set_defaults(handler=run_merge)
