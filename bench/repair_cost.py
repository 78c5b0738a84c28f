"""What the error-guided repair adds to argument synthesis: entry points it makes callable and
the CPU time it costs, side by side with the same search without it (``--no-repair``). With
``--without patterns,package_data`` the same for any other argument sources.

For each package, every entry point's synthesised scenario is searched twice in this process
— with the repair and without — in interleaved rounds (the order alternates), timing each
search by CPU time (``time.process_time``, which other load on the machine barely moves).
Only run it on packages you trust: they are imported and called here, outside the sandbox
that ``apiprof-scan`` uses.

Run:  python bench/repair_cost.py html5lib toml simplejson [--rounds 3] [--without repair]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
import warnings

from apiprof.engine.discovery.discover import discover
from apiprof.engine.scenarios.building import SOURCES
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario


def search(qualnames: list[str], sources: tuple[str, ...]) -> tuple[int, float]:
    """(entry points with a working synthesised scenario, CPU seconds of the search)."""
    argv = list(sys.argv)
    found = 0
    started = time.process_time()
    for qualname in qualnames:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                spec, _ = find_synthesized_scenario(qualname, (10,), sources=sources)
            except KeyboardInterrupt:
                raise
            except BaseException:  # an entry point that breaks the search counts as not found
                spec = None
        found += spec is not None
        sys.argv[:] = argv
    return found, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--without",
        default="repair",
        help="the sources compared, comma-separated (default: repair)",
    )
    args = parser.parse_args()
    compared = set(args.without.split(","))
    without = tuple(source for source in SOURCES if source not in compared)
    warnings.simplefilter("ignore")
    print(
        f"compared: {', '.join(sorted(compared))}; load average at start: {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'package':14} {'entry points':>12} {'found without':>13} {'found with':>10} "
        f"{'CPU s without':>14} {'CPU s with':>11} {'spread':>7}"
    )
    for package in args.packages:
        qualnames = [entry.qualname for entry in discover(package).entry_points]
        times: dict[str, list[float]] = {"without": [], "with": []}
        found: dict[str, int] = {}
        for turn in range(args.rounds):
            order = [("without", without), ("with", SOURCES)]
            for label, sources in order if turn % 2 == 0 else order[::-1]:
                found[label], seconds = search(qualnames, sources)
                times[label].append(seconds)
        spread = max(times["with"]) - min(times["with"])
        print(
            f"{package:14} {len(qualnames):12} {found['without']:13} {found['with']:10} "
            f"{statistics.median(times['without']):14.2f} {statistics.median(times['with']):11.2f}"
            f" {spread:7.2f}"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
