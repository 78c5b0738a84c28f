"""Probe overhead per measured call: apiprof's probes next to cProfile's, on this interpreter.

Columns (ns per call of an empty function, medians of interleaved rounds, all in one run):
* inside  — what a probe pair leaves inside the measured interval (subtracted later);
            target ≤ 60 ns on 3.12/3.13;
* full    — everything one probed call adds to the program (entry + exit probes), for a call
            that does not read the thread-CPU clock (most calls of short functions);
            target ≤ 150 ns on 3.12/3.13;
* full+cpu — the same for a call that also reads the thread-CPU clock (every call of
            functions ≥ 20 µs, a random 1 in 16 of shorter ones);
* C full  — a C function probed at its call site (no CPU clock);
* cProfile — (loop under cProfile − plain loop) / calls; cProfile also slows every other
            function by about this much, apiprof's local events do not.
On 3.12+ the C probes (``_timing``) and the Python fallback probes are both measured.
Run: python bench/overhead.py [--all-pythons]
"""

from __future__ import annotations

import argparse
import cProfile
import glob
import statistics
import subprocess
import sys
import time

from apiprof.engine.measure.calibrate import measure_calibration
from apiprof.engine.measure.instrument import HAS_C_PROBES

CALLS = 2000
INSIDE_TARGET, FULL_TARGET = 60, 150


def _empty():
    return None


def _loop(n):
    f = _empty
    t0 = time.perf_counter_ns()
    for _ in range(n):
        f()
    return time.perf_counter_ns() - t0


def cprofile_ns(rounds: int) -> float:
    diffs = []
    for _ in range(rounds):
        prof = cProfile.Profile()
        prof.enable()
        profiled = _loop(CALLS)
        prof.disable()
        diffs.append((profiled - _loop(CALLS)) / CALLS)
    return statistics.median(diffs)


def run_here(rounds: int) -> None:
    variants = ["c", "python"] if HAS_C_PROBES else [None]
    cals: dict[str | None, list] = {v: [] for v in variants}
    for _ in range(rounds):  # interleaved, so load on the machine hits every variant alike
        for variant in variants:
            cals[variant].append(measure_calibration(probe_impl=variant))
    cprofile = cprofile_ns(rounds * 3)
    med = statistics.median
    version = sys.version.split()[0]
    for variant, runs in cals.items():
        # the raw inside interval: "enter" has the call's dispatch (outside it) taken off
        inside = med(c.overhead_ns["enter"] + c.overhead_ns.get("dispatch", 0.0) for c in runs)
        full = med(c.overhead_ns["enter"] + c.overhead_ns["exit"] for c in runs)
        full_cpu = med(c.overhead_ns["enter+cpu"] + c.overhead_ns["exit+cpu"] for c in runs)
        c_full = med(c.overhead_ns["c_enter"] + c.overhead_ns["c_exit"] for c in runs)
        label = {"c": "C probes", "python": "Python probes", None: runs[0].mechanism}[variant]
        verdict = ""
        if variant == "c":
            ok = inside <= INSIDE_TARGET and full <= FULL_TARGET
            verdict = f"  targets ≤{INSIDE_TARGET}/≤{FULL_TARGET}: {'PASS' if ok else 'MISS'}"
        print(
            f"python {version:8} {label:46} inside={inside:5.0f}  full={full:5.0f}  "
            f"full+cpu={full_cpu:5.0f}  C full={c_full:5.0f}  cProfile={cprofile:5.0f}  "
            f"(ns per call){verdict}"
        )


def run_all(rounds: int) -> None:
    supported = glob.glob("/tmp/venv3.1[1-9]*/bin/python") + glob.glob(
        "/root/.pyenv/versions/3.1[1-9]*/bin/python3"
    )
    for python in sorted(set(supported) | {sys.executable}):
        probe = subprocess.run(
            [python, "-c", "import apiprof.engine.measure.calibrate"],
            capture_output=True,
            check=False,
        )
        if probe.returncode:
            print(
                f"{python}: apiprof not importable; install with `{python} -m venv /tmp/v && "
                f"/tmp/v/bin/pip install -e /work/main` and run bench/overhead.py with /tmp/v/bin/python"
            )
            continue
        subprocess.run([python, __file__, "--rounds", str(rounds)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all-pythons", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    run_all(args.rounds) if args.all_pythons else run_here(args.rounds)


if __name__ == "__main__":
    main()
