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

WORKLOAD = Path(__file__).with_name("workload.py")
APIPROF = [sys.executable, "-m", "apiprof.cli"]


def run_once(command: list[str]) -> tuple[float, float, float]:
    """(wall s and CPU s of the work, as the program reports them; wall s of the command)."""
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    wall, cpu = done.stdout.split()[-2:]
    return float(wall), float(cpu), time.perf_counter() - started


def look_cost(threads: int = 4, depth: int = 30, looks: int = 2000) -> float:
    """CPU microseconds one ``Sampler.sample`` takes with ``threads`` threads ``depth`` deep."""
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
    started = time.thread_time()
    for _ in range(looks):
        sampler.sample()
    cost = (time.thread_time() - started) / looks * 1e6  # CPU time: steady on a busy machine
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
    results: dict[str, list[tuple[float, float, float]]] = {"off": []}
    samples: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            results["off"].append(run_once(plain))
            for interval in intervals:
                out = Path(tmp) / f"{interval}.trace"
                command = [*APIPROF, "trace", "-o", str(out), "--interval", interval, "--", *plain]
                results.setdefault(interval, []).append(run_once(command))
                samples[interval] = RecordingSummary.of(out).samples
    median = statistics.median

    def figures(name: str) -> tuple[float, float, float]:
        runs = results[name]
        return median(r[0] for r in runs), median(r[1] for r in runs), median(r[2] for r in runs)

    base = figures("off")
    print(f"Python {sys.version.split()[0]}, {args.rounds} interleaved rounds, medians")
    print(
        f"  {'sampling':>8}  {'work wall':>9}  {'+':>7}  {'work CPU':>9}  {'+':>7}"
        f"  {'command':>8}  {'+':>7}  samples"
    )
    for name in ["off", *intervals]:
        values = figures(name)
        extra = [
            "" if name == "off" else f"{v / b - 1:+.1%}" for v, b in zip(values, base, strict=True)
        ]
        seen = "" if name == "off" else f"{samples[name]:,}"
        print(
            f"  {name:>8}  {values[0]:>8.3f}s  {extra[0]:>7}  {values[1]:>8.3f}s  {extra[1]:>7}"
            f"  {values[2]:>7.3f}s  {extra[2]:>7}  {seen}"
        )
    print(f"one look at 4 threads 30 frames deep: {look_cost():.1f} µs of CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
