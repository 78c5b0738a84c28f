"""Command line: ``apiprof-scan`` and ``apiprof COMMAND``.

One module per command (``scan``, ``show``, ``merge``, ``scenarios``, ``compare``, ``report``), each with a
``register(commands)`` that adds its parser. Each command parses its options, calls one library
function and prints the result. Errors from the ``ApiprofError`` family become one line on
stderr and the error's exit code (2 usage, 3 database, 1 other); Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from apiprof import __version__
from apiprof.cli import compare, merge, report, scan, scenarios, show, trace
from apiprof.errors import ApiprofError

COMMANDS = (scan, show, merge, scenarios, compare, report, trace)
"""The command modules, in the order ``apiprof --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="apiprof", description="What does calling this API typically cost?"
    )
    parser.add_argument("--version", action="version", version=f"apiprof {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    return parser


def build_scan_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="apiprof-scan",
        description=scan.SCAN_DESCRIPTION,
        epilog=scan.SCAN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan.configure(parser)
    return parser


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def dispatch(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args = parser.parse_args(argv)
    # `kill` saves like Ctrl-C does
    previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        return args.handler(args)
    except ApiprofError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return error.exit_code
    # e.g. `apiprof show X --json | head`: the reader left, nothing to report
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(
            f"{parser.prog}: interrupted; everything measured so far is saved (continue with --resume)",
            file=sys.stderr,
        )
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """``apiprof COMMAND ...``"""
    return dispatch(build_parser(), argv)


def scan_main(argv: Sequence[str] | None = None) -> int:
    """``apiprof-scan PACKAGE [options]``"""
    return dispatch(build_scan_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
