"""``apiprof upload``: send the collected spool to the aggregation service now."""

from __future__ import annotations

import argparse


def run_upload(args: argparse.Namespace) -> int:
    from apiprof.engine.collect.config import load_config
    from apiprof.engine.collect.paths import Layout
    from apiprof.engine.collect.upload import upload_spool
    from apiprof.errors import UsageError
    from apiprof.format import format_bytes

    layout = Layout.current()
    config = load_config(layout)
    server = args.server or config.server
    if not server:
        raise UsageError(
            "name the service: --server URL (or `apiprof collect enable --server URL`)"
        )
    report = upload_spool(
        layout, server, args.token or config.token, attempts=args.attempts, backoff=args.backoff
    )
    print(
        f"uploaded {report.sent} batch(es) ({format_bytes(report.bytes_sent)}) to {server}; "
        f"{report.duplicates} had been counted before, {len(report.rejected)} rejected, "
        f"{report.remaining} left in the spool"
    )
    for line in report.rejected:
        print(f"  rejected {line}")
    return 1 if report.rejected else 0


def register(commands: argparse._SubParsersAction) -> None:
    upload = commands.add_parser(
        "upload",
        help="send collected measurements to the service",
        description="Send every batch in the collection spool to the service, each exactly once "
        "(a batch is deleted only after the service acknowledged it). Network errors and busy "
        "answers are retried with back-off; refused batches move to the rejected folder.",
    )
    upload.add_argument("--server", metavar="URL", help="service URL (default: the configured one)")
    upload.add_argument(
        "--token", metavar="TOKEN", help="upload token (default: the configured one)"
    )
    upload.add_argument(
        "--attempts",
        type=int,
        default=5,
        metavar="N",
        help="tries per batch before giving up (default 5)",
    )
    upload.add_argument(
        "--backoff",
        type=float,
        default=0.5,
        metavar="S",
        help="first retry delay in seconds, doubling (default 0.5)",
    )
    upload.set_defaults(handler=run_upload)
