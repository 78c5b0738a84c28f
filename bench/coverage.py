"""How much of a real, untyped package does `apiprof-scan` profile with no scenario files?

Installs a fixed list of widely used PyPI packages at pinned versions into a venv of its own
(beside apiprof, installed editable from this checkout), scans each with the default command —
no scenario files, as a new user would — through the real CLI, and prints one table: entry
points found and profiled, the profiled fraction and the scan time per package. With
``--compare OLD.json`` the table puts an earlier run's figures beside today's.

A package's scan has ``--package-timeout`` seconds; past it the scan is interrupted (as Ctrl-C
would) and the summary it wrote so far is read, marked "interrupted".

Run:  python bench/coverage.py [--quick] [--jobs 2] [--json out.json] [--compare before.json]
      python bench/coverage.py --packages six idna --verbose   # reasons of what was missed
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Pinned:
    distribution: str  # what `pip install` takes
    version: str
    module: str  # what apiprof-scan takes
    quick: bool = False  # part of the --quick subset


PACKAGES = [
    Pinned("six", "1.17.0", "six", quick=True),
    Pinned("idna", "3.20", "idna", quick=True),
    Pinned("wcwidth", "0.9.1", "wcwidth", quick=True),
    Pinned("markupsafe", "3.0.3", "markupsafe", quick=True),
    Pinned("msgpack", "1.1.2", "msgpack", quick=True),
    Pinned("python-dateutil", "2.9.0.post0", "dateutil", quick=True),
    Pinned("packaging", "26.3", "packaging"),
    Pinned("pyparsing", "3.3.3", "pyparsing"),
    Pinned("jinja2", "3.1.6", "jinja2"),
    Pinned("more-itertools", "11.1.0", "more_itertools"),
    Pinned("chardet", "7.6.0", "chardet"),
    Pinned("tabulate", "0.10.0", "tabulate"),
    Pinned("decorator", "5.3.1", "decorator"),
    Pinned("networkx", "3.6.1", "networkx"),
]
"""Untyped or lightly typed, widely used; pure Python and C extensions (msgpack, markupsafe)."""


def default_venv() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return cache / "apiprof-bench" / f"coverage-py{version}"


def prepare_venv(venv: Path, packages: list[Pinned], source: Path) -> Path:
    """The venv's interpreter, with apiprof (editable, from ``source``) and the pinned packages."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    wanted = [f"{p.distribution}=={p.version}" for p in packages] + [f"apiprof from {source}"]
    marker = venv / "apiprof-bench.txt"
    if not marker.exists() or marker.read_text() != "\n".join(wanted):
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-e", str(source), *wanted[:-1]], check=True
        )
        marker.write_text("\n".join(wanted))
    return python


def scan_package(
    python: Path, package: Pinned, args: argparse.Namespace, workdir: Path
) -> dict[str, object]:
    """Scan one package through the CLI; the row for the table."""
    summary_path = workdir / f"{package.module}.json"
    command = [
        str(python),
        "-m",
        "apiprof.cli",
        "scan",
        package.module,
        "--db",
        str(workdir / f"{package.module}.db"),
        "--summary-json",
        str(summary_path),
        "--quiet",
        "--jobs",
        str(args.jobs),
        "--repeat",
        str(args.repeat),
        *args.extra,
    ]
    started = time.monotonic()
    process = subprocess.Popen(
        command, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    timed_out = False
    try:
        _, stderr = process.communicate(timeout=args.package_timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        # SIGTERM, not SIGINT: a process started in the background ignores SIGINT; apiprof-scan
        # treats SIGTERM as Ctrl-C: it stores what it has and writes its summary
        process.send_signal(signal.SIGTERM)
        try:
            _, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
    seconds = time.monotonic() - started
    row: dict[str, object] = {
        "package": package.distribution,
        "version": package.version,
        "seconds": round(seconds, 1),
        "exit_code": process.returncode,
    }
    try:
        summary = json.loads(summary_path.read_text())["packages"][0]
    except (OSError, ValueError, KeyError, IndexError):
        row.update(discovered=0, profiled=0, fraction=0.0, status="no summary")
        row["error"] = (stderr or "").strip().splitlines()[-1:] or ["(no output)"]
        return row
    row.update(
        discovered=summary["discovered"],
        profiled=summary["profiled"],
        fraction=summary["profiled_fraction"],
        status="interrupted" if timed_out else summary["status"],
        coverage=summary["coverage"],
        not_profiled=summary["not_profiled"],
    )
    return row


def print_table(rows: list[dict], before: dict[str, dict]) -> None:
    compare = bool(before)
    header = f"{'package':<16} {'version':<12} {'found':>5} {'profiled':>8} {'fraction':>8} {'seconds':>8}"
    if compare:
        header += f" {'before':>8} {'before s':>8}"
    print(header)
    print("-" * len(header))
    for row in rows:
        line = (
            f"{row['package']:<16} {row['version']:<12} {row['discovered']:>5} {row['profiled']:>8} "
            f"{row['fraction']:>8.1%} {row['seconds']:>8.1f}"
        )
        if compare:
            old = before.get(str(row["package"]))
            line += (
                f" {old['fraction']:>8.1%} {old['seconds']:>8.1f}" if old else f" {'—':>8} {'—':>8}"
            )
        if row["status"] != "finished":
            line += f"  ({row['status']})"
        print(line)
    found = sum(int(r["discovered"]) for r in rows)
    profiled = sum(int(r["profiled"]) for r in rows)
    seconds = sum(float(r["seconds"]) for r in rows)
    print("-" * len(header))
    total = f"{'all':<16} {'':<12} {found:>5} {profiled:>8} {profiled / max(found, 1):>8.1%} {seconds:>8.1f}"
    if compare:
        old_rows = [before[str(r["package"])] for r in rows if str(r["package"]) in before]
        old_found = sum(int(r["discovered"]) for r in old_rows)
        old_profiled = sum(int(r["profiled"]) for r in old_rows)
        total += f" {old_profiled / max(old_found, 1):>8.1%} {sum(float(r['seconds']) for r in old_rows):>8.1f}"
    print(total)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--packages", nargs="+", metavar="DIST", help="a subset, by distribution name"
    )
    parser.add_argument("--quick", action="store_true", help="the small, fast subset")
    parser.add_argument("--jobs", type=int, default=2, help="parallel workers per scan (default 2)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per scenario and size (default 3)"
    )
    parser.add_argument(
        "--package-timeout",
        type=float,
        default=900.0,
        help="seconds one package's scan may take; then it is interrupted (default 900)",
    )
    parser.add_argument("--venv", type=Path, default=None, help="where to build the venv")
    parser.add_argument(
        "--apiprof-source",
        type=Path,
        default=ROOT,
        help="the apiprof checkout to measure (default: this one), e.g. an export of an older commit",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument("--compare", metavar="PATH", help="an earlier --json to show beside")
    parser.add_argument(
        "--verbose", action="store_true", help="list what was not profiled, and why"
    )
    parser.add_argument(
        "extra", nargs="*", help="more apiprof-scan options after `--`, e.g. -- --no-heuristics"
    )
    args = parser.parse_args(argv)

    chosen = [p for p in PACKAGES if (not args.quick or p.quick)]
    if args.packages:
        chosen = [
            p for p in PACKAGES if p.distribution in args.packages or p.module in args.packages
        ]
    python = prepare_venv(args.venv or default_venv(), PACKAGES, args.apiprof_source.resolve())
    before = {}
    if args.compare:
        before = {row["package"]: row for row in json.loads(Path(args.compare).read_text())}
    rows = []
    with tempfile.TemporaryDirectory(prefix="apiprof-coverage-") as workdir:
        for package in chosen:
            row = scan_package(python, package, args, Path(workdir))
            rows.append(row)
            print(
                f"  {row['package']}: {row['profiled']}/{row['discovered']} in {row['seconds']} s",
                file=sys.stderr,
                flush=True,
            )
            if args.verbose:
                for miss in row.get("not_profiled", []):
                    print(f"    {miss['qualname']}: {miss['status']}: {miss['reason'][:300]}")
    print_table(rows, before)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
