"""Probe overhead per measured call: apiprof's probes next to cProfile's, on this interpreter.

Columns (ns per call of an empty function, medians of interleaved rounds):
* apiprof inside — what a probe pair leaves inside the measured interval (subtracted later);
* apiprof full   — everything one probed call adds to the program (entry + exit probes), for a
                   call that does not read the thread-CPU clock (most calls of short functions);
* full +cpu      — the same for a call that also reads the thread-CPU clock (every call of
                   functions ≥ 20 µs, every 16th call of shorter ones);
* apiprof C full — a C function probed at its call site (no CPU clock);
* cProfile       — (loop under cProfile − plain loop) / calls; cProfile also slows every
                   other function by about this much, apiprof's local events do not.
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

CALLS = 2000


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
    cals = [measure_calibration() for _ in range(rounds)]
    med = statistics.median
    inside = med(c.overhead_ns["enter"] for c in cals)
    full = med(c.overhead_ns["enter"] + c.overhead_ns["exit"] for c in cals)
    full_cpu = med(c.overhead_ns["enter+cpu"] + c.overhead_ns["exit+cpu"] for c in cals)
    c_full = med(c.overhead_ns["c_enter"] + c.overhead_ns["c_exit"] for c in cals)
    short_mix = (15 * full + full_cpu) / 16
    print(
        f"python {sys.version.split()[0]:8} {cals[0].mechanism:46} inside={inside:5.0f}  full={full:5.0f}  "
        f"full+cpu={full_cpu:5.0f}  short-call mix={short_mix:5.0f}  C full={c_full:5.0f}  "
        f"cProfile={cprofile_ns(rounds * 3):5.0f}  (ns per call)"
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
