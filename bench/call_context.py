"""Why the leaf reads higher through the scan than in-process: the code run between its calls.

A diagnostic beside ``bench/accuracy.py`` (which measures the user's path): the ~100 ns leaf of
the ground-truth package profiled in this process, with the calibration of this process, and
timeit truth taken before each round — its scenario function called

* ``direct`` — straight from the timing pass's loop (what an in-process measurement did);
* ``worker`` — through what a scan worker wraps around every run: the growth timer
  (``time.perf_counter`` around the run) and the per-call hang guard (``_callguard.Limited``);
* ``loopN`` — the same wrappers, with the scenario function calling the leaf N times in a
  plain loop (as the truth's timeit loop does).

Measured on 3.12 (2 cores, load 6–9): direct 1.055, worker 1.094–1.114, loop4–64 0.96–0.98 of
the truth; 3.11 reads the same in all three; 3.13 reads ~1.0 direct and worker and ~0.91 in
the loops. The short call's own cost depends on the code that runs between its calls (branch
predictors, caches), not on anything the probes subtract: the empty reference function's
interval does not change between the variants.

Run: python bench/call_context.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy  # the truth and the fixture package

from apiprof.engine import timeouts
from apiprof.engine.measure import profiler
from apiprof.engine.measure.calibrate import calibrate
from apiprof.model.records import Metric

LOOPS = (4, 16, 64)


def worker_chain(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` wrapped as a scan worker wraps a scenario run (engine/isolation/worker.py)."""
    limited = timeouts.limit_each_call(fn, 10.0)
    slowest = [0.0]  # the worker keeps the slowest run (it decides whether to grow the input)

    def timed_run() -> object:
        started = time.perf_counter()
        result = limited()
        slowest[0] = max(slowest[0], time.perf_counter() - started)
        return result

    return timed_run


def scenario(calls: int) -> Callable[[], object]:
    namespace = {"gt": accuracy.gt}
    body = "gt.leaf(3)" if calls == 1 else f"for _ in range({calls}):\n        gt.leaf(3)"
    exec(f"def run():\n    {body}\n", namespace)
    return namespace["run"]  # type: ignore[return-value]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    timeouts.install_alarm_handler()
    calibration = calibrate()
    variants = {"direct": scenario(1), "worker": worker_chain(scenario(1))}
    variants |= {f"loop{n}": worker_chain(scenario(n)) for n in LOOPS}
    ratios: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        truth = accuracy.truth_ns(accuracy.CALLS["leaf"], chunks=100)
        for name, run in variants.items():
            with timeouts.stretch():
                report = profiler.profile(
                    run,
                    [profiler.Target("leaf", accuracy.gt.leaf)],
                    scenario_id=name,
                    calibration=calibration,
                )
            (wall,) = (m for m in report.measurements if m.metric == Metric.WALL)
            ratios[name].append(wall.histogram.median / truth)
    print(f"python {sys.version.split()[0]}: leaf figure / truth, median [range] of {args.rounds}")
    for name, values in ratios.items():
        print(f"  {name:7} {statistics.median(values):.3f} [{min(values):.3f}–{max(values):.3f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
