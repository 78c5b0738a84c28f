"""Does forking workers from a zygote make scans faster without changing what they measure?

For each package (default: pyparsing, packaging, json) this scans into fresh temporary
databases with ``--worker-start fresh`` (a new interpreter and sandbox per entry point, the
earlier behaviour) and ``--worker-start zygote`` (the default), at the strict isolation level
where the machine allows it. Rounds are interleaved — fresh then zygote, then zygote then fresh —
so both meet the same load; each round is a whole scan of each package.

Printed per package: entry points discovered and profiled (each way), scan seconds (median of
the rounds and their range), the speed-up, and whether the figures agree: allocation figures
(deterministic, compared exactly per entry point, scenario and size) and the median CPU time
per call (the ratio zygote/fresh over every measured slice: its median and 10th–90th
percentiles — timing noise on a busy machine, centred on 1.0 when nothing is biased). With two
rounds or more, two fresh scans are compared the same way: the noise floor the zygote's figures
should match. The load average is printed before and after.

Run: python bench/worker_start.py [--packages pyparsing json] [--rounds 2] [--jobs 1]
Install the third-party packages first: pip install pyparsing packaging
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from apiprof.db.schema import open_db
from apiprof.engine.scan import ScanOptions, scan
from apiprof.model.histogram import Histogram

DEFAULT_PACKAGES = ["pyparsing", "packaging", "json"]
WAYS = ("fresh", "zygote")
EXACT = ("alloc_incl_bytes", "alloc_excl_bytes", "calls_per_run")


def figures(db_path: Path) -> dict[tuple[str, str, str, int], float]:
    """The median of every stored slice (entry point, metric, scenario, size)."""
    db = open_db(db_path, readonly=True)
    try:
        rows: dict[tuple[str, str, str, int], list[tuple[int, int, float, float]]] = {}
        for qualname, metric, scenario, size, bucket, count, total, total_sq in db.execute(
            "SELECT qualname, metric, scenario_id, size, bucket, count, sum, sum_sq FROM buckets"
        ):
            rows.setdefault((qualname, metric, scenario, size), []).append(
                (bucket, count, total, total_sq)
            )
        return {key: Histogram.from_buckets(data).median for key, data in rows.items()}
    finally:
        db.conn.close()


def scan_once(package: str, options: ScanOptions) -> dict:
    with tempfile.TemporaryDirectory(prefix="apiprof-bench-") as home:
        db_path = Path(home) / "bench.db"
        summary = scan(package, db_path=db_path, options=options)
        return {
            "seconds": summary.elapsed_seconds,
            "discovered": summary.discovered,
            "profiled": summary.profiled,
            "isolation": summary.isolation.split(":")[0],
            "figures": figures(db_path),
        }


def compare(fresh: dict, zygote: dict) -> dict:
    """How the figures of one fresh scan and one zygote scan agree."""
    same = [k for k in fresh if k in zygote]
    exact = [k for k in same if k[1] in EXACT]
    equal = sum(1 for k in exact if fresh[k] == zygote[k])
    ratios = sorted(
        zygote[k] / fresh[k] for k in same if k[1] == "cpu_ns" and fresh[k] > 0 and zygote[k] > 0
    )
    deciles = statistics.quantiles(ratios, n=10) if len(ratios) >= 2 else [1.0] * 9
    return {
        "exact_slices": len(exact),
        "exact_equal": equal,
        "cpu_slices": len(ratios),
        "cpu_ratio_median": statistics.median(ratios) if ratios else 1.0,
        "cpu_ratio_p10": deciles[0],
        "cpu_ratio_p90": deciles[-1],
    }


def spread(seconds: list[float]) -> str:
    """Median seconds and the range over the rounds."""
    return f"{statistics.median(seconds):.1f} ({min(seconds):.1f}-{max(seconds):.1f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=DEFAULT_PACKAGES)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5, help="runs per scenario and size")
    parser.add_argument("--max-seconds", type=float, default=1.0, help="budget per pass")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    base = ScanOptions(repeat=args.repeat, max_seconds=args.max_seconds, jobs=args.jobs)
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    header = (
        f"{'package':<10} {'found':>5} {'profiled f/z':>12} {'fresh s':>16} {'zygote s':>16} "
        f"{'speed-up':>8} {'alloc equal':>12} {'cpu z/f median [p10-p90]':>26}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for package in args.packages:
        runs: dict[str, list[dict]] = {way: [] for way in WAYS}
        for index in range(args.rounds):
            for way in WAYS if index % 2 == 0 else reversed(WAYS):
                runs[way].append(scan_once(package, replace(base, worker_start=way)))
        fresh, zygote = runs["fresh"], runs["zygote"]
        agreement = compare(fresh[-1]["figures"], zygote[-1]["figures"])
        # the noise floor: two fresh scans of the same package compared the same way
        floor = compare(fresh[0]["figures"], fresh[1]["figures"]) if len(fresh) > 1 else None
        seconds = {way: [run["seconds"] for run in runs[way]] for way in WAYS}
        median = {way: statistics.median(seconds[way]) for way in WAYS}
        row = {
            "package": package,
            "isolation": zygote[-1]["isolation"],
            "discovered": zygote[-1]["discovered"],
            "profiled": {way: [run["profiled"] for run in runs[way]] for way in WAYS},
            "seconds": seconds,
            "speed_up": median["fresh"] / median["zygote"],
            **agreement,
            "fresh_vs_fresh": floor,
        }
        rows.append(row)

        profiled = f"{fresh[-1]['profiled']}/{zygote[-1]['profiled']}"
        alloc = f"{agreement['exact_equal']}/{agreement['exact_slices']}"
        cpu = (
            f"{agreement['cpu_ratio_median']:.2f} "
            f"[{agreement['cpu_ratio_p10']:.2f}-{agreement['cpu_ratio_p90']:.2f}]"
        )
        print(
            f"{package:<10} {row['discovered']:>5} {profiled:>12} {spread(seconds['fresh']):>16} "
            f"{spread(seconds['zygote']):>16} {row['speed_up']:>7.2f}x {alloc:>12} {cpu:>26}"
        )
        if floor is not None:
            print(
                f"{'  fresh/fresh':<41} {'(noise floor)':>34} "
                f"{floor['exact_equal']:>5}/{floor['exact_slices']:<6} "
                f"{floor['cpu_ratio_median']:.2f} "
                f"[{floor['cpu_ratio_p10']:.2f}-{floor['cpu_ratio_p90']:.2f}]"
            )
        sys.stdout.flush()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if rows:
        print(f"isolation level: {rows[0]['isolation']}; {args.rounds} interleaved rounds")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
