"""What sampling costs the traced program: ``apiprof trace`` on versus off, same run.

Runs ``bench/workload.py`` (a main thread and a 3-thread pool doing JSON, regex, sorting and
dict work) alternately as ``python workload.py`` and as ``apiprof trace -o T --interval I --
python workload.py``, rounds interleaved so machine noise hits both alike, and compares the
medians of the time the program's work took (measured by the program itself) and of the whole
command (start-up, and for the traced run writing the file and building its time tree).
Also prints what one look at all threads costs (``Sampler.sample``).

Run: python bench/trace_overhead.py [--rounds 7] [--intervals 1ms,5ms] [--units 600]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from apiprof.tracing.record import RecordingSummary
from apiprof.tracing.sampler import Sampler
from apiprof.tracing.window import parse_time

WORKLOAD = Path(__file__).with_name("workload.py")
APIPROF = [sys.executable, "-m", "apiprof.cli"]


def run_once(command: list[str]) -> tuple[float, float]:
    """(seconds of work the program reports, seconds of the whole command)."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1]), time.perf_counter() - started


def look_cost(threads: int = 4, depth: int = 30, looks: int = 2000) -> float:
    """Microseconds one ``Sampler.sample`` takes with ``threads`` threads ``depth`` deep."""
    release = threading.Event()

    def nest(level: int) -> None:
        if level:
            nest(level - 1)
        else:
            release.wait()

    workers = [threading.Thread(target=nest, args=(depth,)) for _ in range(threads - 1)]
    for worker in workers:
        worker.start()
    sampler = Sampler(lambda t, batch: None, interval=1.0)
    sampler.sample()  # interned once: later looks find every stack known
    started = time.perf_counter()
    for _ in range(looks):
        sampler.sample()
    cost = (time.perf_counter() - started) / looks * 1e6
    release.set()
    for worker in workers:
        worker.join()
    return cost


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--intervals", default="1ms,5ms")
    parser.add_argument("--units", type=int, default=600)
    args = parser.parse_args(argv)
    intervals = [part for part in args.intervals.split(",") if part]
    plain = [sys.executable, str(WORKLOAD), str(args.units)]
    results: dict[str, list[tuple[float, float]]] = {"off": []}
    samples: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            results["off"].append(run_once(plain))
            for interval in intervals:
                out = Path(tmp) / f"{interval}.trace"
                command = [*APIPROF, "trace", "-o", str(out), "--interval", interval, "--", *plain]
                results.setdefault(interval, []).append(run_once(command))
                samples[interval] = RecordingSummary.of(out).samples
    base_work = statistics.median(w for w, _ in results["off"])
    base_total = statistics.median(t for _, t in results["off"])
    print(f"Python {sys.version.split()[0]}, {args.rounds} interleaved rounds, medians")
    print(
        f"  {'sampling':>10}  {'work':>8}  {'overhead':>8}  {'command':>8}  {'overhead':>8}  samples"
    )
    print(f"  {'off':>10}  {base_work:>7.3f}s  {'':>8}  {base_total:>7.3f}s")
    for interval in intervals:
        work = statistics.median(w for w, _ in results[interval])
        total = statistics.median(t for _, t in results[interval])
        print(
            f"  {interval:>10}  {work:>7.3f}s  {work / base_work - 1:>+8.1%}  {total:>7.3f}s"
            f"  {total / base_total - 1:>+8.1%}  {samples[interval]:,}"
            f" (every {base_work / max(1, samples[interval]) * 4 * 1e3:.1f} ms per thread)"
        )
        parse_time(interval)  # the same syntax the CLI takes
    print(f"one look at 4 threads 30 frames deep: {look_cost():.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
