"""``apiprof sync``: pull the service's aggregate into a local mirror database."""

from __future__ import annotations

import argparse
from pathlib import Path

from apiprof.cli.options import positive_int


def run_sync(args: argparse.Namespace) -> int:
    from apiprof.engine.collect.paths import Layout
    from apiprof.engine.collect.sync import sync

    path = Path(args.db) if args.db else Layout.current().reference
    report = sync(
        args.server,
        path,
        whole=args.whole,
        slices=args.slices,
        per_call=args.per_call,
        token=args.token or "",
    )
    rows = sum(report.rows.values())
    what = (
        f"slice(s) {', '.join(map(str, report.slices))} of {report.of}"
        if report.slices
        else "the whole aggregate"
    )
    print(f"synced {what} from {args.server} into {path}: {rows} rows")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    sync = commands.add_parser(
        "sync",
        help="pull the service's aggregate into a local database",
        description="Mirror the aggregation service's database locally (the docs, the editor and "
        "collection read it). The first sync pulls everything; later ones pull the next few "
        "slices, rotating, or everything again with --whole.",
    )
    sync.add_argument("--server", metavar="URL", required=True, help="service URL")
    sync.add_argument(
        "--db", metavar="PATH", help="mirror database (default: reference.db in the apiprof home)"
    )
    sync.add_argument("--whole", action="store_true", help="pull the whole aggregate")
    sync.add_argument(
        "--slices",
        type=positive_int,
        default=16,
        metavar="N",
        help="slices the aggregate is cut into (default 16)",
    )
    sync.add_argument(
        "--per-call",
        type=positive_int,
        default=2,
        metavar="K",
        help="slices pulled per call (default 2)",
    )
    sync.add_argument("--token", metavar="TOKEN", help="token, if the service asks for one")
    sync.set_defaults(handler=run_sync)
