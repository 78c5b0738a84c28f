"""How fast does apiprof-scan go, how much does it cover, and what does isolation cost?

For each package (default: the stdlib's json, textwrap, statistics, colorsys and PyPI's
humanize) this scans into a fresh temporary database twice in the same run, alternating the order
per package:

* **today's design** — plain worker processes (the process isolation level), each reused for
  up to 200 entry points, the in-process reporter refusing;
* **fresh** — plain worker processes, but a fresh one per entry point (what separates the
  fresh worker's cost from the namespaces' cost);
* **strict** — the default: every entry point in a fresh worker under bubblewrap (namespaces,
  read-only file system, seccomp filter supervised by the scanner), worker start-up included.

It prints per package: entry points discovered and profiled, seconds per entry point for each,
and the isolation's cost per entry point (strict minus today's) and as a ratio. A second line
times one worker's start-up alone (start, answer a ping, stop) at each level.

Run: python bench/scan.py [--packages json textwrap] [--jobs 1] [--repeat 5] [--json out.json]
Install the third-party package first: pip install humanize
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from apiprof.engine.isolation.confine import Isolation
from apiprof.engine.isolation.pool import Start, WorkerOptions, WorkerPool
from apiprof.engine.isolation.protocol import Ping
from apiprof.engine.scan import ScanOptions, ScanSummary, scan

DEFAULT_PACKAGES = ["json", "textwrap", "statistics", "colorsys", "humanize"]
VARIANTS = {  # fresh interpreters throughout; bench/worker_start.py compares the zygote's start
    "today": {"isolation": "process", "tasks_per_worker": 200, "worker_start": "fresh"},
    "fresh": {"isolation": "process", "tasks_per_worker": 1, "worker_start": "fresh"},
    "strict": {"isolation": "strict", "tasks_per_worker": 1, "worker_start": "fresh"},
}


def scan_once(package: str, options: ScanOptions) -> ScanSummary:
    with tempfile.TemporaryDirectory(prefix="apiprof-bench-") as home:
        return scan(package, db_path=Path(home) / "bench.db", options=options)


def measure(package: str, options: ScanOptions, index: int) -> dict:
    names = list(VARIANTS) if index % 2 == 0 else list(reversed(VARIANTS))
    row: dict = {"package": package}
    for name in names:
        summary = scan_once(package, replace(options, **VARIANTS[name]))
        row[name] = {
            "isolation": summary.isolation,
            "discovered": summary.discovered,
            "profiled": summary.profiled,
            "seconds": round(summary.elapsed_seconds, 2),
            "seconds_per_entry_point": round(summary.elapsed_seconds / summary.discovered, 3),
            "workers_started": summary.workers_started,
            "not_profiled": {r.qualname: f"{r.status}: {r.reason}" for r in summary.not_profiled},
        }
    today, strict = row["today"], row["strict"]
    row["cost_per_entry_point_seconds"] = round(
        strict["seconds_per_entry_point"] - today["seconds_per_entry_point"], 3
    )
    row["cost_ratio"] = round(strict["seconds"] / today["seconds"], 3)
    return row


def worker_start_up(isolation: str, times: int) -> float:
    """Median seconds to start one worker, have it answer, and stop it."""
    samples = []
    options = WorkerOptions(isolation=Isolation(isolation), start=Start.FRESH)
    with WorkerPool(1, options) as pool:
        pool.settle()  # the level is settled (and its first worker started) outside the timing
        for _ in range(times):
            started = time.perf_counter()
            pool.request(Ping())
            samples.append(time.perf_counter() - started)
    return statistics.median(samples)


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
        "--start-ups", type=int, default=10, help="worker start-ups timed per level"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument(
        "--verbose", action="store_true", help="list every entry point that was not profiled"
    )
    args = parser.parse_args(argv)

    options = ScanOptions(repeat=args.repeat, max_seconds=args.max_seconds, jobs=args.jobs)
    rows = []
    header = (
        f"{'package':<12} {'found':>5} {'profiled':>8} {'today s/EP':>10} {'fresh s/EP':>10} "
        f"{'strict s/EP':>11} {'cost/EP':>8} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for index, package in enumerate(args.packages):
        row = measure(package, options, index)
        rows.append(row)
        today, fresh, strict = row["today"], row["fresh"], row["strict"]
        print(
            f"{package:<12} {strict['discovered']:>5} {strict['profiled']:>8} "
            f"{today['seconds_per_entry_point']:>10.2f} {fresh['seconds_per_entry_point']:>10.2f} "
            f"{strict['seconds_per_entry_point']:>11.2f} "
            f"{row['cost_per_entry_point_seconds']:>+7.2f}s {row['cost_ratio']:>5.2f}x"
        )
        if args.verbose:
            for qualname, reason in strict["not_profiled"].items():
                print(f"    {qualname}: {reason}")
        sys.stdout.flush()
    start_ups = {level: worker_start_up(level, args.start_ups) for level in ("process", "strict")}
    print(
        f"\nworker start-up (start, answer a ping, stop; median of {args.start_ups}): "
        + ", ".join(f"{level} {seconds * 1000:.0f} ms" for level, seconds in start_ups.items())
    )
    if rows:
        print(f"isolation level reached: {rows[0]['strict']['isolation']}")
    if args.json:
        document = {"packages": rows, "worker_start_up_seconds": start_ups}
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
