"""What does a cluster scan gain over a local one, and what does each task cost on top?

Scans a fixed list of packages twice in one run, through the command line a user types, into
fresh databases: once locally (``apiprof-scan PKG... --jobs 1``) and once on a local Dask
cluster (``--cluster local:N``). Prints entry points per second for both and the ratio, and per
task the overhead a cluster adds: the task's time on its worker minus the time its scan itself
reports (interpreter start-up, calibration and discovery in the task's child process, moving
the database back).

Run: python bench/cluster_scan.py [--workers 2] [--packages json textwrap ...]
Needs the cluster extra: pip install 'apiprof[cluster]'
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGES = ["json", "textwrap", "colorsys", "statistics", "string", "shlex", "fnmatch", "calendar"]
COMMON = ["--repeat", "5", "--quiet"]


def run(arguments: list[str], summary: Path) -> tuple[float, dict]:
    command = [
        sys.executable,
        "-c",
        "import sys; from apiprof.cli import scan_main; sys.exit(scan_main())",
    ]
    started = time.monotonic()
    subprocess.run([*command, *arguments, "--summary-json", str(summary)], check=True)
    return time.monotonic() - started, json.loads(summary.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=PACKAGES)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="apiprof-bench-") as home:
        scratch = Path(home)
        local_seconds, local = run(
            [*args.packages, "--db", str(scratch / "local.db"), *COMMON], scratch / "local.json"
        )
        cluster_seconds, cluster = run(
            [
                *args.packages,
                "--cluster",
                f"local:{args.workers}",
                "--db",
                str(scratch / "c.db"),
                *COMMON,
            ],
            scratch / "cluster.json",
        )
    entry_points = sum(p["discovered"] for p in local["packages"])
    scanned = {p["package"]: p["elapsed_seconds"] for p in cluster["packages"]}
    tasks = cluster["cluster"]["tasks"]
    overheads = [
        t["elapsed_seconds"] - scanned[t["package"]] for t in tasks if t["package"] in scanned
    ]
    local_rate, cluster_rate = entry_points / local_seconds, entry_points / cluster_seconds
    print(f"{len(args.packages)} packages, {entry_points} entry points")
    print(f"{'':24}{'seconds':>10}{'entry points/s':>16}")
    print(f"{'local (--jobs 1)':24}{local_seconds:>10.1f}{local_rate:>16.2f}")
    print(f"{f'cluster local:{args.workers}':24}{cluster_seconds:>10.1f}{cluster_rate:>16.2f}")
    print(f"speed-up: {cluster_rate / local_rate:.2f}x with {args.workers} workers")
    print(
        f"per-task overhead (task time − its scan's own time): median {statistics.median(overheads):.2f} s, "
        f"max {max(overheads):.2f} s over {len(overheads)} tasks"
    )
    print(
        "Tasks share nothing but the client's database, so N machines with C cores each run about "
        "N×C tasks at once; the client adds each result in milliseconds."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
