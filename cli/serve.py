"""``apiprof serve``: the aggregation service."""

from __future__ import annotations

import argparse
from pathlib import Path

from apiprof.cli.options import positive_int


def run_serve(args: argparse.Namespace) -> int:
    try:
        from apiprof.service.server import ServeOptions, read_tokens, serve
    except ImportError as exc:
        from apiprof.errors import UsageError

        raise UsageError(
            f"the service needs its extra dependencies ({exc.name} is missing): "
            "pip install 'apiprof[service]'"
        ) from None
    tokens = tuple(args.token) + (read_tokens(Path(args.token_file)) if args.token_file else ())
    serve(
        ServeOptions(
            db=args.db,
            host=args.host,
            port=args.port,
            upload_tokens=tokens,
            reader_tokens=tuple(args.reader_token),
            max_batch_bytes=args.max_batch_bytes,
            max_trace_bytes=args.max_trace_bytes,
            max_scan_bytes=args.max_scan_bytes,
            data_dir=Path(args.data_dir) if args.data_dir else None,
            imports=tuple(Path(p) for p in args.import_db),
            pool_size=args.pool_size,
        )
    )
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the aggregation service",
        description="Accept collected batches over HTTP, check them strictly, add each exactly "
        "once into an embedded SQLite database or a shared PostgreSQL, and serve the aggregate "
        "to `apiprof sync`. Needs the service extra: pip install 'apiprof[service]'.",
    )
    serve.add_argument(
        "--db",
        default="apiprof-service.db",
        metavar="PATH|URL",
        help="SQLite file (default ./apiprof-service.db) or postgresql://user:pass@host/dbname",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=int, default=8750, help="port (default 8750; 0 picks a free one)"
    )
    serve.add_argument(
        "--token", action="append", default=[], metavar="TOKEN", help="an upload token (repeatable)"
    )
    serve.add_argument("--token-file", metavar="FILE", help="upload tokens, one per line")
    serve.add_argument(
        "--reader-token",
        action="append",
        default=[],
        metavar="TOKEN",
        help="a token that may list and fetch trace files (repeatable)",
    )
    serve.add_argument(
        "--max-batch-bytes",
        type=positive_int,
        default=1 << 20,
        metavar="N",
        help="largest batch accepted (default 1 MiB)",
    )
    serve.add_argument(
        "--max-trace-bytes",
        type=positive_int,
        default=64 << 20,
        metavar="N",
        help="largest trace file accepted (default 64 MiB)",
    )
    serve.add_argument(
        "--max-scan-bytes",
        type=positive_int,
        default=64 << 20,
        metavar="N",
        help="largest scan database accepted from apiprof-scan --server (default 64 MiB)",
    )
    serve.add_argument(
        "--data-dir",
        metavar="DIR",
        help="where trace files go with SQLite (default: DB.traces beside the database)",
    )
    serve.add_argument(
        "--import",
        dest="import_db",
        action="append",
        default=[],
        metavar="PATH",
        help="add a lab database (an apiprof-scan result) before serving; each file is added once",
    )
    serve.add_argument(
        "--pool-size",
        type=positive_int,
        default=10,
        metavar="N",
        help="PostgreSQL connections (default 10)",
    )
    serve.set_defaults(handler=run_serve)
