"""``apiprof-lsp``: start the language server on stdio (default) or a loopback TCP port."""

from __future__ import annotations

import argparse
import logging
import sys

from apiprof.errors import UsageError


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--tcp expects HOST:PORT (e.g. 127.0.0.1:2087), got {text!r}")
    return host or "127.0.0.1", int(port)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="apiprof-lsp",
        description="Language server showing typical API costs from apiprof databases in completions and hovers.",
    )
    parser.add_argument(
        "--tcp", metavar="HOST:PORT", help="listen on a TCP address instead of stdio"
    )
    parser.add_argument("--log-file", metavar="PATH", help="write the server's own log to PATH")
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    parser.add_argument(
        "--jedi-only",
        action="store_true",
        help="answer with jedi alone, without cost lookups (the baseline of bench/lsp_latency.py)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        address = parse_address(args.tcp) if args.tcp else None
    except UsageError as exc:
        print(f"apiprof-lsp: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.log_file:
        logging.basicConfig(
            filename=args.log_file,
            level=args.log_level,
            format="%(asctime)s %(name)s %(levelname)s %(message)s",
        )
    else:
        # stdout carries the protocol; only warnings go to stderr, which editors show as the server log.
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if args.log_level != "DEBUG":
        # at INFO pygls logs every message body
        logging.getLogger("pygls").setLevel(logging.WARNING)

    from apiprof.lsp_server.server import create_server

    server = create_server(jedi_only=args.jedi_only)
    # 0 after shutdown + exit; 1 when the client exits without shutdown or goes away
    return server.start_tcp(*address) if address else server.start_io()


if __name__ == "__main__":
    sys.exit(main())
