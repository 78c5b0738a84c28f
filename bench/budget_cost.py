"""What does the time budget per pass cost in scan time, against the fixed 20 runs it replaced?

For each package (default: the stdlib's json, textwrap and statistics) this runs ``apiprof-scan``
into a fresh database with the default ``--time-budget`` and with ``--time-budget 0`` (exactly
``--repeat`` runs per pass, the old behaviour), alternating which goes first per round, and
prints the ratio of their wall times: median and spread over rounds, with the load average
before and after each package. The goal: budget / fixed ≤ 1.5× in wall time.

Why no CPU column: the scan's workers run in a sandbox's own PID namespace, forked from a
zygote that is never waited into the scan's resource usage, so ``RUSAGE_CHILDREN`` saw only
the scanner's own CPU (an earlier version printed that as the scan's CPU).

Run: python bench/budget_cost.py [--packages json textwrap statistics] [--rounds 3] [-- scan args]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGES = ["json", "textwrap", "statistics"]
GOAL = 1.5


def scan_seconds(package: str, extra: list[str]) -> float:
    """Wall seconds of one scan of ``package`` into a fresh database."""
    scan_cmd = Path(sys.executable).with_name("apiprof-scan")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="apiprof-budget-") as home:
        subprocess.run(
            [str(scan_cmd), package, "--db", str(Path(home) / "b.db"), "-q", *extra],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=PACKAGES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("scan_args", nargs="*", help="extra apiprof-scan options (after --)")
    args = parser.parse_args()
    variants = {"budget": [], "fixed": ["--time-budget", "0"]}
    print(f"python {sys.version.split()[0]}, {args.rounds} interleaved rounds")
    print(f"{'package':12} {'wall budget/fixed':>24} {'budget s':>9} {'fixed s':>8}  load")
    ok = True
    for package in args.packages:
        ratios: list[float] = []
        seconds: dict[str, list[float]] = {name: [] for name in variants}
        load = os.getloadavg()[0]
        for round_ in range(args.rounds):
            order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
            took = {name: scan_seconds(package, variants[name] + args.scan_args) for name in order}
            ratios.append(took["budget"] / took["fixed"])
            for name, value in took.items():
                seconds[name].append(value)
        cell = f"{statistics.median(ratios):5.2f}× ({min(ratios):.2f}–{max(ratios):.2f})"
        ok &= statistics.median(ratios) <= GOAL
        budget, fixed = (statistics.median(seconds[name]) for name in variants)
        loads = f"{load:.1f}–{os.getloadavg()[0]:.1f}"
        print(f"{package:12} {cell:>24} {budget:9.2f} {fixed:8.2f}  {loads}")
        print(f"{'':12} rounds: {' '.join(f'{r:.2f}' for r in ratios)}")
    print(f"goal: wall budget/fixed ≤ {GOAL}× — {'PASS' if ok else 'MISS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
