"""What does the time budget per pass cost in scan time, against the fixed 20 runs it replaced?

For each package (default: the stdlib's json, textwrap and statistics) this runs ``apiprof-scan``
into a fresh database with the default ``--time-budget`` and with ``--time-budget 0`` (exactly
``--repeat`` runs per pass, the old behaviour), alternating which goes first per round, and
prints the wall and CPU seconds (the scan and its workers) of each and their ratios: median and
spread over rounds, with the load average. The goal: budget / fixed ≤ 1.5×.

Run: python bench/budget_cost.py [--packages json textwrap statistics] [--rounds 3] [-- scan args]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGES = ["json", "textwrap", "statistics"]
GOAL = 1.5


def scan_seconds(package: str, extra: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one scan of ``package`` into a fresh database."""
    scan_cmd = Path(sys.executable).with_name("apiprof-scan")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="apiprof-budget-") as home:
        subprocess.run(
            [str(scan_cmd), package, "--db", str(Path(home) / "b.db"), "-q", *extra],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=PACKAGES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("scan_args", nargs="*", help="extra apiprof-scan options (after --)")
    args = parser.parse_args()
    variants = {"budget": [], "fixed": ["--time-budget", "0"]}
    print(f"python {sys.version.split()[0]}, {args.rounds} interleaved rounds")
    print(f"{'package':12} {'wall budget/fixed':>24} {'CPU budget/fixed':>24}  load")
    ok = True
    for package in args.packages:
        ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
        for round_ in range(args.rounds):
            order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
            seconds = {
                name: scan_seconds(package, variants[name] + args.scan_args) for name in order
            }
            ratios["wall"].append(seconds["budget"][0] / seconds["fixed"][0])
            ratios["cpu"].append(seconds["budget"][1] / seconds["fixed"][1])
        cells = [
            f"{statistics.median(v):5.2f}× ({min(v):.2f}–{max(v):.2f})" for v in ratios.values()
        ]
        ok &= statistics.median(ratios["cpu"]) <= GOAL
        print(f"{package:12} {cells[0]:>24} {cells[1]:>24}  {os.getloadavg()[0]:.1f}")
    print(f"goal: CPU budget/fixed ≤ {GOAL}× — {'PASS' if ok else 'MISS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
