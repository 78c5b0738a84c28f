"""What the allocation pass costs: one scenario run under it, next to the plain run and cProfile.

The allocation pass hooks every Python and C call (it has to: bytes, call graph and co-stack
relation are needed for every function), so it is the slow phase of a scan; timing passes probe
only their group. Workloads, measured side by side in one process (best of several rounds):

* calls     — groundtruth ``mid``: 1000 calls of a ~100 ns leaf (the worst case per activation);
* generators — ``json.dumps(..., indent=2)`` of 2000 records: the pure-Python encoder's nested
               generators (a yield passes up four frames) on 3.11/3.12; C code on 3.13+.

Columns: ms per run plain, under cProfile and under the allocation pass (with the I/O counter
on one target, then with none), the slowdown ×plain, and µs per activation (a call or a
generator resumption) for the allocation pass.
Run: python bench/alloc_pass.py
"""

from __future__ import annotations

import cProfile
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fixtures"))

import groundtruth_pkg as gt

from apiprof.engine.measure import alloc, alloccounters

ROUNDS = 5
RECORDS = [{"id": i, "ok": True, "tags": ["a", "b"]} for i in range(2000)]


def best_of(run: Callable[[], object]) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def under_cprofile(run: Callable[[], object]) -> Callable[[], None]:
    def profiled() -> None:
        profiler = cProfile.Profile()
        profiler.enable()
        run()
        profiler.disable()

    return profiled


def measure(name: str, run: Callable[[], object], target: object) -> None:
    plain = best_of(run)
    profiled = best_of(under_cprofile(run))
    result = alloc.run_allocation_pass(run, [target], repeat=1)
    activations = sum(result.calls.values())
    with_io = best_of(lambda: alloc.run_allocation_pass(run, [target], repeat=1, max_seconds=0))
    without_io = best_of(lambda: alloc.run_allocation_pass(run, [], repeat=1, max_seconds=0))
    print(
        f"{name:11} plain {plain * 1e3:7.2f} ms | cProfile {profiled * 1e3:7.1f} ms ×{profiled / plain:5.1f} | "
        f"alloc pass {with_io * 1e3:7.1f} ms ×{with_io / plain:5.1f} (no I/O counter {without_io * 1e3:7.1f} ms) | "
        f"{activations:7} activations, {without_io / max(activations, 1) * 1e6:5.2f} µs each"
    )


def main() -> None:
    print(f"python {sys.version.split()[0]}, counter: {alloccounters.counter_name()}")
    measure("calls", gt.mid, gt.leaf.__code__)
    measure("generators", lambda: json.dumps(RECORDS, indent=2), json.dumps.__code__)


if __name__ == "__main__":
    main()
