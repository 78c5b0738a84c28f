"""How close are apiprof's per-call times to the truth, next to cProfile and yappi?

For groundtruth_pkg.leaf (~100 ns) and groundtruth_pkg.mid (calls leaf 1000 times) this
measures, in interleaved rounds on one interpreter:

* ground truth — time.perf_counter_ns around N plain calls (no profiler), minus the same loop
  calling an empty function (the loop and the call dispatch are not the function's body);
* apiprof — median per-call WALL of each target from a timing pass (plus profile()'s histogram
  mean, exact from its sums, and its bucket-estimated p50);
* cProfile — cumtime / ncalls;
* yappi (wall clock) — ttot / ncall;

and prints medians over rounds and each profiler's error ratio (reported / truth).
Run: python bench/accuracy.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fixtures"))
import groundtruth_pkg as gt  # noqa: E402

from apiprof.engine.calibrate import calibrate  # noqa: E402
from apiprof.engine.profiler import Target, profile  # noqa: E402
from apiprof.engine.probes import PySite  # noqa: E402
from apiprof.engine.records import Metric  # noqa: E402
from apiprof.engine.timing import measure_calls, run_timing_pass  # noqa: E402

try:
    import yappi
except ImportError:  # optional comparison
    yappi = None

MID_CALLS = 20


def _empty(x=3, n=1000):
    return None


def _chunk(fn, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return time.perf_counter_ns() - t0


def truth_ns(fn, chunk, chunks) -> float:
    """Median over many short interleaved chunks of (fn chunk − empty-function chunk) / chunk:
    both sides include loop and call dispatch, which apiprof's PY_START..PY_RETURN interval
    excludes; medians of short chunks shrug off the interruptions of a busy machine."""
    return statistics.median((_chunk(fn, chunk) - _chunk(_empty, chunk)) / chunk for _ in range(chunks))


def scenario():
    for _ in range(MID_CALLS):
        gt.mid()


def apiprof_ns(cal) -> dict[str, float]:
    """profile() for the histograms (mean is exact from their sums, p50 is bucket-estimated) and
    the same timing pass's raw per-call values for an exact median."""
    report = profile(scenario, [Target("mid", gt.mid), Target("leaf", gt.leaf)], scenario_id="bench", repeat=1)
    walls = {m.qualname: m.histogram for m in report.measurements if m.metric is Metric.WALL}
    raw = {}
    for name, fn in (("mid", gt.mid), ("leaf", gt.leaf)):
        (costs,) = measure_calls(run_timing_pass(scenario, [PySite(fn)], repeat=1), cal.overhead_ns, cal.cpu_overhead_ns)
        raw[name] = statistics.median(costs.wall_ns)
    return raw | {f"{n} (hist-mean)": h.mean for n, h in walls.items()} | {
        f"{n} (hist-p50)": h.percentile(50) for n, h in walls.items()}


def cprofile_ns() -> dict[str, float]:
    prof = cProfile.Profile()
    prof.enable()
    scenario()
    prof.disable()
    stats = pstats.Stats(prof).stats
    out = {}
    for (_, _, name), (cc, nc, tt, ct, _) in stats.items():
        if name in ("mid", "leaf"):
            out[name] = ct / nc * 1e9
    return out


def yappi_ns() -> dict[str, float]:
    yappi.clear_stats()
    yappi.set_clock_type("wall")
    yappi.start()
    scenario()
    yappi.stop()
    out = {}
    for stat in yappi.get_func_stats():
        if stat.name in ("mid", "leaf") and stat.module.endswith("groundtruth_pkg/__init__.py"):
            out[stat.name] = stat.ttot / stat.ncall * 1e9
    yappi.clear_stats()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cal = calibrate()
    rows: dict[str, dict[str, list[float]]] = {"mid": {}, "leaf": {}}

    def add(method, values):
        for name, value in values.items():
            name, _, variant = name.partition(" ")
            rows[name].setdefault(method + variant, []).append(value)

    for _ in range(args.rounds):
        add("truth", {"mid": truth_ns(gt.mid, 1, MID_CALLS), "leaf": truth_ns(gt.leaf, 50, 400)})
        add("apiprof", apiprof_ns(cal))
        add("cProfile", cprofile_ns())
        if yappi is not None:
            add("yappi", yappi_ns())
    print(f"python {sys.version.split()[0]}  probes: {cal.mechanism}  overhead_ns: "
          + ", ".join(f"{k}={v:.0f}" for k, v in cal.overhead_ns.items()))
    print(f"{'function':10} {'method':18} {'median ns/call':>15} {'ratio to truth':>15}")
    for name, methods in rows.items():
        truth = statistics.median(methods["truth"])
        for method, values in methods.items():
            value = statistics.median(values)
            print(f"{name:10} {method:18} {value:15.1f} {value / truth:15.3f}")


if __name__ == "__main__":
    main()
