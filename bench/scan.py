"""How fast does apiprof-scan go, how much does it cover, and what does the sandbox guard cost?

For each package (default: the stdlib's json, textwrap, statistics, colorsys and PyPI's
humanize) this scans into a fresh temporary database twice in the same run — with the audit-hook
guard and without it (workers, temp cwd and resource limits stay in both) — alternating the
order per package, and prints per package: entry points discovered and profiled (coverage),
total seconds, entry points per second, and the guard's cost as a time ratio.

Run: python bench/scan.py [--packages json textwrap] [--jobs 1] [--repeat 5] [--json out.json]
Install the third-party package first: pip install humanize
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from apiprof.engine.scan import ScanOptions, ScanSummary, scan

DEFAULT_PACKAGES = ["json", "textwrap", "statistics", "colorsys", "humanize"]


def scan_once(package: str, options: ScanOptions) -> ScanSummary:
    with tempfile.TemporaryDirectory(prefix="apiprof-bench-") as home:
        return scan(package, db_path=Path(home) / "bench.db", options=options)


def measure(package: str, options: ScanOptions, compare_guard: bool, index: int) -> dict:
    variants = [("guard", options)]
    if compare_guard:
        unguarded = ("no_guard", ScanOptions(**{**options.to_json(), "guard": False}))
        variants = [variants[0], unguarded] if index % 2 == 0 else [unguarded, variants[0]]
    row: dict = {"package": package}
    for name, variant in variants:
        summary = scan_once(package, variant)
        row[name] = {
            "discovered": summary.discovered,
            "profiled": summary.profiled,
            "seconds": round(summary.elapsed_seconds, 2),
            "entry_points_per_second": round(summary.discovered / summary.elapsed_seconds, 2),
            "not_profiled": {r.qualname: f"{r.status}: {r.reason}" for r in summary.not_profiled},
        }
    if compare_guard:
        row["guard_cost_ratio"] = round(row["guard"]["seconds"] / row["no_guard"]["seconds"], 3)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=DEFAULT_PACKAGES)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per scenario and size (default 5)"
    )
    parser.add_argument(
        "--max-seconds", type=float, default=1.0, help="measuring budget per scenario and size"
    )
    parser.add_argument(
        "--no-guard-comparison", action="store_true", help="scan once per package, with the guard"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument(
        "--verbose", action="store_true", help="list every entry point that was not profiled"
    )
    args = parser.parse_args(argv)

    options = ScanOptions(repeat=args.repeat, max_seconds=args.max_seconds, jobs=args.jobs)
    rows = []
    header = f"{'package':<12} {'found':>5} {'profiled':>8} {'cover':>6} {'seconds':>8} {'EP/s':>6} {'no-guard s':>10} {'guard cost':>10}"
    print(header)
    print("-" * len(header))
    for index, package in enumerate(args.packages):
        row = measure(package, options, not args.no_guard_comparison, index)
        rows.append(row)
        g = row["guard"]
        cover = g["profiled"] / g["discovered"] if g["discovered"] else 0.0
        extra = (
            f"{row['no_guard']['seconds']:>10.1f} {row['guard_cost_ratio']:>9.2f}x"
            if "no_guard" in row
            else ""
        )
        print(
            f"{package:<12} {g['discovered']:>5} {g['profiled']:>8} {cover:>6.0%} {g['seconds']:>8.1f} "
            f"{g['entry_points_per_second']:>6.1f} {extra}"
        )
        if args.verbose:
            for qualname, reason in g["not_profiled"].items():
                print(f"    {qualname}: {reason}")
        sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
