"""Arguments shared by the commands: positive numbers, size lists, the database path, outputs."""

from __future__ import annotations

import argparse

from apiprof.db.schema import DEFAULT_DB


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def size_list(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers like 10,100,1000, got {text!r}"
        ) from None
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be positive integers, got {text!r}")
    return sizes


def add_db_argument(parser: argparse.ArgumentParser, help: str = "profile database") -> None:
    parser.add_argument(
        "--db", default=DEFAULT_DB, metavar="PATH", help=f"{help} (default: ./{DEFAULT_DB})"
    )


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``--html FILE``: the outputs besides the terminal table."""
    parser.add_argument(
        "--json", action="store_true", help="print JSON with the fields listed below"
    )
    parser.add_argument("--html", metavar="FILE", help="also write a page with charts to FILE")


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """``--source`` and ``--package``: which measurements, of which package."""
    from apiprof.db.slices import Source

    parser.add_argument(
        "--source",
        choices=[str(s) for s in Source],
        default=str(Source.ALL),
        help="which measurements: lab scans, collected from real programs, or all (default: all)",
    )
    parser.add_argument("--package", metavar="NAME", help="only APIs of this package")
