"""Probe overhead on this machine and interpreter, measured once per process.

For each probe kind the calibration measures, with the very probes the timing passes use:

* ``inside`` — the raw interval the probes report for an (almost) empty call: the tail of
  the entry probe after its clock read plus the head of the exit probe before its clock read;
* ``full`` — what one probed call adds in total: the median spacing of consecutive probed
  calls in a loop minus the plain loop's time per call;
* ``dispatch`` (Python sites) — the part of a short call's cost that its interval misses. What
  a caller pays for ``f()`` is the time of ``f()`` in a plain loop minus the bare loop: the call
  itself (pushing and popping the frame) included, while the probes' interval starts and ends
  inside the function. Measured against that truth on a reference function of known shape, a
  short call of integer arithmetic: its plain per-call time minus (its raw interval minus an
  empty function's). It also takes in how much the probes slow a short body (on 3.12+ events
  make the interpreter run instrumented instructions, on 3.11 a trampoline makes the call), so
  it differs between interpreters; the ``enter`` figures are ``inside − dispatch``, as the C
  sites' are the inside interval minus the plain call of the builtin.

In the active-time model (docs/mechanisms.rst) a call's own entry probe counts and its own exit probe does not, while
probes of nested calls count in full; with ``enter = inside`` and ``exit = full − inside`` the
model charges exactly ``inside`` to a leaf call and ``full`` per nested call.

Keys: ``enter``/``exit`` (Python sites: sys.monitoring on 3.12+, trampolines on 3.11),
``c_enter``/``c_exit`` (C sites), on 3.11 ``hook_enter``/``hook_exit`` (generators under the
profile hook) and ``filtered`` (one hook call for a non-target event). Each has a ``+cpu``
variant for probes that also read the thread-CPU clock (``cpu_overhead_ns`` holds only those).
Timing passes replace the Python sites' ``inside`` figures with ones measured live in the pass
(:func:`~apiprof.engine.measure.costs.pass_overheads`); the stored calibration is the provenance. Each figure is the median
of interleaved rounds, so a noisy machine moves it little; the same is done on the thread-CPU
clock for ``cpu_overhead_ns``.
"""

from __future__ import annotations

import itertools
import statistics
import time
import types
import typing
from collections.abc import Callable
from typing import Any

from apiprof.engine.measure.alloccounters import counter_name
from apiprof.engine.measure.instrument import MECHANISM
from apiprof.engine.measure.iocount import io_mechanism
from apiprof.engine.measure.machine import machine_speed_ns
from apiprof.engine.measure.passlog import CPU_SUFFIX
from apiprof.engine.measure.probes import HAS_MONITORING, CSite, PySite, Site
from apiprof.engine.measure.switches import switch_mechanism
from apiprof.engine.measure.timing import run_timing_pass
from apiprof.model.records import Calibration

ROUNDS = 9
DISPATCH_ROUNDS = 41
CALLS = 1000
NEVER, ALWAYS = 0, 1  # which calls of a calibration pass read the thread-CPU clock

_cached: Calibration | None = None
_probes: str | None = None  # the probe implementation measure_calibration is measuring


def calibrate(rounds: int = ROUNDS, calls: int = CALLS) -> Calibration:
    """This process's probe overheads (cached: computed on first use, ~0.1–0.5 s)."""
    global _cached
    if _cached is None:
        _cached = measure_calibration(rounds, calls)
    return _cached


def _empty() -> None:
    pass


def _never_called() -> None:
    pass


def _loop_empty(n: int) -> None:
    f = _empty
    for _ in range(n):
        f()


_C_PROBE = len
_C_ARG = ()


def _loop_builtin(n: int) -> None:
    f, arg = _C_PROBE, _C_ARG
    for _ in range(n):
        f(arg)


def _loop_nothing(n: int) -> None:
    f = _empty  # same shape as _loop_empty without the call
    for _ in range(n):
        f  # noqa: B018 - the loop's cost without the call is what is measured


def _loop_bare(n: int) -> None:
    _f, arg = _C_PROBE, _C_ARG  # same shape as _loop_builtin without the call
    for _ in range(n):
        arg  # noqa: B018 - the loop's cost without the call is what is measured


def _function(fn: Callable[..., object]) -> types.FunctionType:
    return typing.cast(types.FunctionType, fn)


def measure_calibration(
    rounds: int = ROUNDS, calls: int = CALLS, probe_impl: str | None = None
) -> Calibration:
    """Measure every probe kind (``probe_impl`` forces the "c" or "python" monitoring
    callbacks)."""
    global _probes
    _probes = probe_impl
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    c_site = CSite(_C_PROBE)
    c_callers = {c_site.key: {_loop_builtin.__code__}}
    builtin_cost = _median_rounds(
        lambda: _plain(_loop_builtin, calls), lambda: _plain(_loop_bare, calls), rounds, calls
    )
    py_mechanism = "monitoring" if HAS_MONITORING else "trampoline"
    dispatch = _dispatch(rounds, calls)
    wall["dispatch"], cpu["dispatch"] = dispatch
    probes: list[tuple[str, str, Site, Callable[[int], None], Any, str | None, tuple[float, float]]]
    probes = [
        ("enter", "exit", PySite(_function(_empty)), _loop_empty, None, py_mechanism, dispatch)
    ]
    probes.append(("c_enter", "c_exit", c_site, _loop_builtin, c_callers, None, builtin_cost))
    if not HAS_MONITORING:
        probes.append(
            (
                "hook_enter",
                "hook_exit",
                PySite(_function(_empty)),
                _loop_empty,
                None,
                "setprofile",
                (0.0, 0.0),
            )
        )
    for enter, exit_, site, loop, callers, mechanism, body in probes:
        for suffix, mask in (("", NEVER), (CPU_SUFFIX, ALWAYS)):
            figures = _measure_probe(site, loop, callers, rounds, calls, mechanism, mask)
            for clock, out in ((0, wall), (1, cpu)):
                if clock and not suffix:
                    continue  # probes that do not read the CPU clock leave no CPU interval
                inside = max(0.0, figures.inside[clock] - body[clock])
                out[enter + suffix] = inside
                out[exit_ + suffix] = max(0.0, figures.full[clock] - inside)
    if not HAS_MONITORING:
        filtered = _median_rounds(
            lambda: _timed_pass(
                PySite(_function(_never_called)), _loop_empty, None, calls, "setprofile", NEVER
            )[0],
            lambda: _plain(_loop_empty, calls),
            rounds,
            2 * calls,  # a call and a return event per call
        )
        wall["filtered"], cpu["filtered"] = filtered
    resolution = time.get_clock_info("perf_counter").resolution * 1e9
    return Calibration(
        overhead_ns=wall,
        cpu_overhead_ns=cpu,
        timer_resolution_ns=max(1.0, resolution),
        mechanism=MECHANISM if probe_impl != "python" else MECHANISM.replace(", C probes", ""),
        alloc_mechanism=counter_name(),
        io_mechanism=io_mechanism(),
        switch_mechanism=switch_mechanism(),
        machine_speed_ns=machine_speed_ns(),
    )


def _dispatch(rounds: int, calls: int) -> tuple[float, float]:
    """What a call costs its caller beyond its probed interval (wall, CPU): an empty
    function's plain per-call time, the loop without the call taken off.

    Every short call of the scan gets this figure added, so its noise is every figure's: it
    is the difference of two loops of a few µs, measured first thing in a freshly forked
    worker. Nine rounds read 7.7–16.8 ns over 15 scans (±8% of a 100 ns leaf); after a
    warm-up round (the loops' first run pays for cold code and copy-on-write pages), the
    median of ``DISPATCH_ROUNDS`` rounds — a few ms — reads within about ±1 ns."""
    measured = lambda: _plain(_loop_empty, calls)  # noqa: E731
    baseline = lambda: _plain(_loop_nothing, calls)  # noqa: E731
    _median_rounds(measured, baseline, 1, calls)
    return _median_rounds(measured, baseline, max(rounds, DISPATCH_ROUNDS), calls)


class _ProbeFigures:
    def __init__(self, inside: tuple[float, float], full: tuple[float, float]) -> None:
        self.inside, self.full = inside, full


def _plain(loop: Callable[[int], None], calls: int) -> tuple[int, int]:
    c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
    loop(calls)
    w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
    return w1 - w0, c1 - c0


def _timed_pass(
    site: Site, loop: Callable[[int], None], callers, calls: int, mechanism: str | None, mask: int
):
    totals: list[tuple[int, int]] = []
    log = run_timing_pass(
        lambda: totals.append(_plain(loop, calls)),
        [site],
        callers,
        repeat=1,
        cpu_every=mask,
        mechanism=mechanism,
        probes=_probes,
        reference=False,
    )
    return totals[0], log


def _median_rounds(
    measured: Callable[[], tuple[int, int]],
    baseline: Callable[[], tuple[int, int]],
    rounds: int,
    per: int,
) -> tuple[float, float]:
    """Median over interleaved rounds of (measured − baseline) / per, for wall and CPU."""
    diffs = []
    for _ in range(rounds):
        m, b = measured(), baseline()
        diffs.append(((m[0] - b[0]) / per, (m[1] - b[1]) / per))
    return (
        max(0.0, statistics.median(d[0] for d in diffs)),
        max(0.0, statistics.median(d[1] for d in diffs)),
    )


def _measure_probe(
    site: Site, loop, callers, rounds: int, calls: int, mechanism: str | None, mask: int
) -> _ProbeFigures:
    """Inside = median raw interval; full = median spacing of consecutive probed calls (robust
    to interruptions, unlike a loop total) minus the plain loop's per-call time."""
    inside_wall, inside_cpu, spacing_wall, spacing_cpu, plain_wall, plain_cpu = (
        [],
        [],
        [],
        [],
        [],
        [],
    )
    med = statistics.median
    for _ in range(rounds):
        _, log = _timed_pass(site, loop, callers, calls, mechanism, mask)
        base_w, base_c = _plain(loop, calls)
        walls, cpus = _raw_intervals(log)
        inside_wall.append(med(walls))
        inside_cpu.append(med(cpus))
        wall_in, cpu_in = log.enters[0][1::2], log.enters[0][0::2]
        spacing_wall.append(med(b - a for a, b in itertools.pairwise(wall_in)))
        spacing_cpu.append(med(b - a for a, b in itertools.pairwise(cpu_in)))
        plain_wall.append(base_w / calls)
        plain_cpu.append(base_c / calls)
    return _ProbeFigures(
        (med(inside_wall), med(inside_cpu)),
        (
            max(0.0, med(spacing_wall) - med(plain_wall)),
            max(0.0, med(spacing_cpu) - med(plain_cpu)),
        ),
    )


def _raw_intervals(log) -> tuple[list[int], list[int]]:
    """Exit − entry per call of the single, non-recursive calibration site."""
    enters, exits = log.enters[0], log.exits[0]
    wall_in, cpu_in = enters[1::2], enters[0::2]
    wall_out, cpu_out = exits[0::2], exits[1::2]
    return ([b - a for a, b in zip(wall_in, wall_out)], [b - a for a, b in zip(cpu_in, cpu_out)])
