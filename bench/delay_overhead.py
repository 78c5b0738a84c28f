"""What the delay tracker costs while nothing is slow.

1. Per marked event: ``begin``/``end``, the context manager and the decorator, against the bare
   call they wrap, with the tracker's watchdog running (thresholds far above every event).
2. On ``bench/workload.py`` (a main thread and a 3-thread pool), with every unit of work (~2 ms)
   marked: no tracker, tracker (it samples its pre-trigger ring only while an event runs —
   here nearly always, the worst case), tracker sampling even when idle, and a tracker watching
   an event that never runs (the idle watchdog alone). Rounds interleaved, medians.

Run: python bench/delay_overhead.py [--rounds 5] [--units 400]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import workload

from apiprof.tracing.delays import DelayTracker
from apiprof.tracing.settings import read_settings

CALLS = 200_000


def tracker(output: str, **overrides: object) -> DelayTracker:
    settings = {
        "output_dir": output,
        "events": {"unit": {"threshold_ms": 10_000}, "rare": {"threshold_ms": 10_000}},
        **overrides,
    }
    return DelayTracker(read_settings(settings))


def per_call_ns(loop: Callable[[], None]) -> float:
    """CPU ns per call of this thread (steadier than wall time on a busy machine)."""
    rounds = []
    for _ in range(5):
        started = time.thread_time_ns()
        loop()
        rounds.append((time.thread_time_ns() - started) / CALLS)
    return statistics.median(rounds)


def markers(output: str) -> None:
    with tracker(output) as watched:

        def work() -> None:
            return None

        marked = watched.mark("unit")(work)
        begin, end, event = watched.begin, watched.end, watched.event

        def bare() -> None:
            for _ in range(CALLS):
                work()

        def begin_end() -> None:
            for _ in range(CALLS):
                mark = begin("unit")
                work()
                end(mark)

        def scope() -> None:
            for _ in range(CALLS):
                with event("unit"):
                    work()

        def decorated() -> None:
            for _ in range(CALLS):
                marked()

        base = per_call_ns(bare)
        print(f"per marked event (watchdog running), CPU ns on top of a bare call ({base:.0f} ns):")
        for name, loop in (
            ("begin/end", begin_end),
            ("with tracker.event()", scope),
            ("@tracker.mark()", decorated),
        ):
            print(f"  {name:<22} +{per_call_ns(loop) - base:,.0f} ns")


def workload_runs(output: str, rounds: int, units: int) -> None:
    variants: dict[str, Callable[[], tuple[float, float]]] = {}

    def cpu_and_wall(run: Callable[[], float]) -> tuple[float, float]:
        cpu = time.process_time()
        wall = run()
        return wall, time.process_time() - cpu

    variants["no tracker"] = lambda: cpu_and_wall(lambda: workload.run(units))

    def with_tracker(event: str, **overrides: object) -> tuple[float, float]:
        with tracker(output, **overrides) as watched:
            around = (lambda unit: watched.event(event)) if event else None
            return cpu_and_wall(lambda: workload.run(units, around))

    variants["tracker (default)"] = lambda: with_tracker("unit")
    variants["tracker, ring_while_idle"] = lambda: with_tracker("unit", ring_while_idle=True)
    variants["idle watchdog only"] = lambda: with_tracker("")
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            times[name].append(run())
    median = statistics.median
    base_wall = median(w for w, _ in times["no tracker"])
    base_cpu = median(c for _, c in times["no tracker"])
    print(f"\nworkload, {units} marked units of ~2 ms, {rounds} interleaved rounds (medians):")
    print(f"  {'':<26} {'wall':>8} {'+':>7}  {'CPU':>8} {'+':>7}")
    for name, values in times.items():
        wall, cpu = median(w for w, _ in values), median(c for _, c in values)
        extra = (
            ("", "")
            if name == "no tracker"
            else (f"{wall / base_wall - 1:+.1%}", f"{cpu / base_cpu - 1:+.1%}")
        )
        print(f"  {name:<26} {wall:>7.3f}s {extra[0]:>7}  {cpu:>7.3f}s {extra[1]:>7}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--units", type=int, default=400)
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as output, contextlib.redirect_stderr(sys.stdout):
        markers(output)
        workload_runs(output, args.rounds, args.units)
        assert not list(Path(output).glob("2*")), "nothing was slow: there must be no trace"
    return 0


if __name__ == "__main__":
    sys.exit(main())
