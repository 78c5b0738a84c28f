"""How close are apiprof's per-call times to the truth, next to cProfile and yappi?

Functions of groundtruth_pkg, measured in interleaved rounds on one interpreter:
mid (calls leaf 1000 times), leaf (~100 ns body) and tiny (~45 ns body, called 1000 times by
tiny_loop — a body smaller than one probe's own cost, the hardest case).

* truth — time.perf_counter_ns around chunks of plain calls (no profiler), minus the same loop
  calling an empty function (loop and call dispatch are not the function's body);
* apiprof — median per-call WALL from a timing pass (profile()'s histogram mean and
  bucket-estimated p50 are shown too: the mean is pulled up by interruptions);
* cProfile — cumtime / ncalls; yappi (wall clock) — ttot / ncall.

Prints the median truth and the median over rounds of each round's ratio reported / truth, the target and PASS/MISS.
Run: python bench/accuracy.py [--rounds 7] [--all-pythons]
"""

from __future__ import annotations

import argparse
import cProfile
import glob
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fixtures"))
import groundtruth_pkg as gt

from apiprof.engine.measure.calibrate import calibrate
from apiprof.engine.measure.probes import PySite
from apiprof.engine.measure.profiler import Target, profile
from apiprof.engine.measure.timing import measure_calls, run_timing_pass
from apiprof.model.records import Metric

try:
    import yappi
except ImportError:  # optional comparison
    yappi = None

OUTER_CALLS = 20
FUNCTIONS = {"mid": gt.mid, "leaf": gt.leaf, "tiny": gt.tiny}
TARGETS = {"mid": 0.05, "leaf": 0.25, "tiny": 0.25}  # allowed |ratio − 1| of apiprof's median


def _empty(x=3, n=1000):
    return None


def _chunk(fn, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return time.perf_counter_ns() - t0


def truth_ns(fn, chunk, chunks) -> float:
    """Median over many short interleaved chunks of (fn chunk − empty-function chunk) / chunk:
    both sides include loop and call dispatch, which apiprof's probed interval excludes;
    medians of short chunks shrug off the interruptions of a busy machine."""
    return statistics.median(
        (_chunk(fn, chunk) - _chunk(_empty, chunk)) / chunk for _ in range(chunks)
    )


def scenario():
    for _ in range(OUTER_CALLS):
        gt.mid()
        gt.tiny_loop()


def apiprof_ns(cal) -> dict[str, float]:
    """profile() for the histograms, and one timing pass per function for the exact median."""
    report = profile(
        scenario, [Target(n, f) for n, f in FUNCTIONS.items()], scenario_id="bench", repeat=1
    )
    walls = {m.qualname: m.histogram for m in report.measurements if m.metric is Metric.WALL}
    raw = {}
    for name, fn in FUNCTIONS.items():
        (costs,) = measure_calls(
            run_timing_pass(scenario, [PySite(fn)], repeat=1), cal.overhead_ns, cal.cpu_overhead_ns
        )
        raw[name] = statistics.median(costs.wall_ns)
    return (
        raw
        | {f"{n} (hist-mean)": h.mean for n, h in walls.items()}
        | {f"{n} (hist-p50)": h.percentile(50) for n, h in walls.items()}
    )


def cprofile_ns() -> dict[str, float]:
    prof = cProfile.Profile()
    prof.enable()
    scenario()
    prof.disable()
    return {
        name: ct / nc * 1e9
        for (_, _, name), (cc, nc, tt, ct, _) in pstats.Stats(prof).stats.items()
        if name in FUNCTIONS
    }


def yappi_ns() -> dict[str, float]:
    yappi.clear_stats()
    yappi.set_clock_type("wall")
    yappi.start()
    scenario()
    yappi.stop()
    out = {
        stat.name: stat.ttot / stat.ncall * 1e9
        for stat in yappi.get_func_stats()
        if stat.name in FUNCTIONS and stat.module.endswith("groundtruth_pkg/__init__.py")
    }
    yappi.clear_stats()
    return out


def run_here(rounds: int) -> None:
    cal = calibrate()
    rows: dict[str, dict[str, list[float]]] = {name: {} for name in FUNCTIONS}

    def add(method, values):
        for name, value in values.items():
            name, _, variant = name.partition(" ")
            rows[name].setdefault(method + variant, []).append(value)

    for _ in range(rounds):
        add(
            "truth",
            {
                "mid": truth_ns(gt.mid, 1, OUTER_CALLS),
                "leaf": truth_ns(gt.leaf, 50, 400),
                "tiny": truth_ns(gt.tiny, 50, 400),
            },
        )
        add("apiprof", apiprof_ns(cal))
        add("cProfile", cprofile_ns())
        if yappi is not None:
            add("yappi", yappi_ns())
    print(
        f"\npython {sys.version.split()[0]}  probes: {cal.mechanism}  (medians of {rounds} rounds; ratio = reported / truth)"
    )
    methods = [m for m in next(iter(rows.values())) if m != "truth"]
    print(
        f"{'function':9} {'truth ns':>10} "
        + " ".join(f"{m:>18}" for m in methods)
        + f" {'target':>9} {'result':>6}"
    )
    for name, values in rows.items():
        truth = statistics.median(values["truth"])
        # median of per-round ratios: truth and measurement of one round share the machine's load
        ratios = {
            m: statistics.median(v / t for v, t in zip(values[m], values["truth"]))
            for m in methods
            if m in values
        }
        verdict = "PASS" if abs(ratios["apiprof"] - 1) <= TARGETS[name] else "MISS"
        cells = " ".join(f"{ratios[m]:18.3f}" if m in ratios else f"{'-':>18}" for m in methods)
        print(
            f"{name:9} {truth:10.1f} {cells} {'±' + format(TARGETS[name], '.0%'):>9} {verdict:>6}"
        )


def run_all(rounds: int) -> None:
    """Every supported interpreter that can import apiprof (its venv's python, found by glob)."""
    candidates = [*glob.glob("/tmp/venv3.1[1-9]*/bin/python"), sys.executable]
    for python in sorted(set(candidates)):
        probe = subprocess.run(
            [python, "-c", "import apiprof.engine.measure.calibrate"],
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            subprocess.run([python, __file__, "--rounds", str(rounds)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--all-pythons", action="store_true")
    args = parser.parse_args()
    run_all(args.rounds) if args.all_pythons else run_here(args.rounds)


if __name__ == "__main__":
    main()
