"""From a timing pass's raw records to per-call WALL and CPU active times (docs/mechanisms.rst):
the probes' inside overhead measured live by the pass's reference calls, preempted intervals,
and the active-time arithmetic (one sweep for calls that never overlap).
"""

from __future__ import annotations

import bisect
import operator
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from apiprof.engine.measure.activetime import CLOSES, OPENS, ProbeEvent, active_times
from apiprof.engine.measure.clockgrain import Dither
from apiprof.engine.measure.passlog import CPU_SUFFIX, SAMPLED, PassLog
from apiprof.engine.measure.probes import CSite, Site

PREEMPTED_SHARE = 0.25
"""Preempted calls are left out of a site's figures when at most this share of its calls."""
SHIFT_MIN_CALLS = 16
"""Sampled and unsampled calls a site needs before the CPU clock's cost to a call is measured."""


@dataclass(frozen=True)
class CallCosts:
    """Per-call active times of one site in one pass (ns): WALL for every call in order of the
    calls' ends, CPU for the calls whose CPU clock was sampled. ``calls`` were timed,
    ``preempted_calls`` of them switched out of (left out of the figures unless more than
    ``PREEMPTED_SHARE``)."""

    wall_ns: list[float]
    cpu_ns: list[float]
    calls: int = 0
    preempted_calls: int = 0


def probe_kinds(site: Site, hooked: bool = False) -> tuple[str, str]:
    """Calibration keys of a site's entry and exit probes (without the CPU suffix)."""
    if isinstance(site, CSite):
        return ("c_enter", "c_exit")
    return ("hook_enter", "hook_exit") if hooked else ("enter", "exit")


def reference_overheads(log: PassLog) -> tuple[dict[str, float], dict[str, float]]:
    """Inside overheads measured live by the pass's reference calls (wall, CPU): the medians of
    the raw exit − entry intervals of an empty function, per probe flavour, each interval
    dithered by its clock's step (:mod:`~apiprof.engine.measure.clockgrain`)."""
    enters, exits = log.reference
    wall_dither, cpu_dither = Dither(log.clock_steps[0], 1), Dither(log.clock_steps[1], 2)
    plain, sampled, sampled_cpu = [], [], []
    for i in range(0, min(len(enters), len(exits)), 2):
        interval = exits[i] - enters[i + 1] + wall_dither()
        if enters[i] >= 0 and exits[i + 1] >= 0:
            sampled.append(interval)
            sampled_cpu.append(exits[i + 1] - enters[i] + cpu_dither())
        else:
            plain.append(interval)
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    if len(plain) >= 5:
        wall["enter"] = statistics.median(plain)
    if len(sampled) >= 5:
        wall["enter" + CPU_SUFFIX] = statistics.median(sampled)
        cpu["enter" + CPU_SUFFIX] = statistics.median(sampled_cpu)
    return wall, cpu


def pass_overheads(
    log: PassLog, overhead_ns: Mapping[str, float], cpu_overhead_ns: Mapping[str, float]
) -> tuple[dict[str, float], dict[str, float]]:
    """Calibrated overheads with the pass's live inside figures, less the calibrated call
    dispatch (what a short call's interval misses), in place of the calibrated ones. A probe
    pair's full cost (entry + exit) stays the calibrated one: only nested calls pay it."""
    out = []
    for calibrated, live in zip((overhead_ns, cpu_overhead_ns), reference_overheads(log)):
        merged = dict(calibrated)
        for enter_key, inside in live.items():
            exit_key = enter_key.replace("enter", "exit")
            full = calibrated.get(enter_key, 0.0) + calibrated.get(exit_key, 0.0)
            merged[enter_key] = max(0.0, inside - calibrated.get("dispatch", 0.0))
            merged[exit_key] = max(0.0, full - merged[enter_key])
        out.append(merged)
    return out[0], out[1]


def measure_calls(
    log: PassLog, overhead_ns: Mapping[str, float], cpu_overhead_ns: Mapping[str, float]
) -> list[CallCosts]:
    """Turn a pass's raw records into per-call WALL and CPU active times (docs/mechanisms.rst), one
    :func:`~apiprof.engine.measure.activetime.active_times` evaluation per clock, with the pass's
    live inside overheads (:func:`pass_overheads`) and its preempted intervals.

    Every figure is then finished by :func:`_finish`: dithered by its clock's step, sampled
    calls corrected for what reading the CPU clock cost them, CPU capped at WALL.
    """
    wall_overhead, cpu_overhead = pass_overheads(log, overhead_ns, cpu_overhead_ns)
    out = []
    for index, site in enumerate(log.sites):
        hooked = bool(log.hooked and log.hooked[index])
        kinds = probe_kinds(site, hooked)
        if not hooked and _one_at_a_time(log.enters[index], log.exits[index]):
            out.append(_sequential_costs(log, index, kinds[0], wall_overhead, cpu_overhead))
        else:
            out.append(_nested_costs(log, index, kinds, wall_overhead, cpu_overhead))
    return out


def _nested_costs(
    log: PassLog,
    index: int,
    kinds: tuple[str, str],
    wall_overhead: Mapping[str, float],
    cpu_overhead: Mapping[str, float],
) -> CallCosts:
    """The general case (recursion, hook-timed sites): the active-time arithmetic (docs/mechanisms.rst) over events."""
    wall_events, cpu_events = _events_of(log, index, kinds)
    calls = active_times(wall_events, wall_overhead, log.preempted)
    cpu = [call.active for call in active_times(cpu_events, cpu_overhead)]
    sampled = [call.name == SAMPLED for call in calls]
    preempted = _overlaps([(call.start, call.end) for call in calls], log.preempted)
    return _finish(log, [call.active for call in calls], sampled, cpu, preempted)


def _overlaps(
    calls: Sequence[tuple[float, float]], windows: Sequence[tuple[int, int]]
) -> list[bool]:
    """For each (start, end) call, whether a switched-out window falls inside it."""
    ordered = sorted(windows)
    ends = [hi for _, hi in ordered]
    out = []
    for start, end in calls:
        k = bisect.bisect_right(ends, start)
        out.append(k < len(ordered) and ordered[k][0] < end)
    return out


def _one_at_a_time(enters: Sequence[int], exits: Sequence[int]) -> bool:
    """Whether a site's calls never overlap (no recursion): each exit comes before the next
    entry. Then no other probe falls inside a call (the co-stack rule keeps the group's other
    sites off its stack) and the arithmetic reduces to :func:`_sequential_costs`."""
    if len(enters) != len(exits):
        return False
    walls_in, walls_out = enters[1::2], exits[0::2]
    return all(map(operator.le, walls_in, walls_out)) and all(
        map(operator.le, walls_out, walls_in[1:])
    )


def _sequential_costs(
    log: PassLog,
    index: int,
    enter_kind: str,
    wall_overhead: Mapping[str, float],
    cpu_overhead: Mapping[str, float],
) -> CallCosts:
    """Active times of calls that do not overlap: elapsed − the call's own entry probe −
    preempted time inside it (the same figures as :func:`_nested_costs`, computed in one sweep:
    a pass holds thousands of calls)."""
    enters, exits = log.enters[index], log.exits[index]
    plain = wall_overhead.get(enter_kind, 0.0)
    sampled = wall_overhead.get(enter_kind + CPU_SUFFIX, 0.0)
    cpu_inside = cpu_overhead.get(enter_kind + CPU_SUFFIX, 0.0)
    starts, ends, cpu_ins = enters[1::2], exits[0::2], enters[0::2]
    flags = [cpu_in >= 0 for cpu_in in cpu_ins]
    elapsed = [
        end - start - (sampled if flag else plain)
        for start, end, flag in zip(starts, ends, flags, strict=False)
    ]
    preempted = [False] * len(elapsed)
    for lo, hi in sorted(log.preempted):  # few windows: visit only the calls each overlaps
        k = bisect.bisect_right(ends, lo)
        while k < len(elapsed) and starts[k] < hi:
            elapsed[k] -= max(0.0, min(ends[k], hi) - max(starts[k], lo))
            preempted[k] = True
            k += 1
    wall = [figure if figure > 0.0 else 0.0 for figure in elapsed]
    cpu = [
        figure if (figure := cpu_out - cpu_in - cpu_inside) > 0.0 else 0.0
        for cpu_in, cpu_out in zip(cpu_ins, exits[1::2], strict=False)
        if cpu_in >= 0 and cpu_out >= 0
    ]
    return _finish(log, wall, flags, cpu, preempted)


def _finish(
    log: PassLog,
    wall: list[float],
    sampled: list[bool],
    cpu: list[float],
    preempted: list[bool],
) -> CallCosts:
    """The last steps shared by both paths, on one site's calls in order (``sampled[k]``: call
    ``k`` read the CPU clock; ``cpu`` holds those calls' CPU figures, in the same order;
    ``preempted[k]``: the thread was switched out during call ``k``):

    0. a call the thread was switched out of reads high even with the switched-out time taken
       off — the caches are refilled after it resumes, and the switch records do not cover all
       of the time around a switch (measured: about twice a clean call's time, for a 140 µs
       call on a loaded machine). Such calls are left out when they are at most
       ``PREEMPTED_SHARE`` of the site's calls; when more were preempted (long calls on a busy
       machine) they all stay, with the switched-out time subtracted, so the figures keep
       the longer calls a preemption is more likely to hit;

    1. each figure gets its clock's dither (:class:`~apiprof.engine.measure.clockgrain.Dither`),
       so medians of readings on a coarse clock are not pinned to its steps;
    2. reading the CPU clock (a system call) leaves the call that follows it slower — colder
       caches and branch predictors after the kernel entry, a cost the empty reference function
       cannot show. Its size is the difference between the median WALL of the site's sampled
       and unsampled calls in this pass, which are the same calls but for the reading (picked at
       random); it is taken off the sampled calls' WALL and CPU figures (both clocks ran during
       it). Needs ``SHIFT_MIN_CALLS`` of each; a site whose calls are all sampled (long calls,
       where the cost is a small fraction) keeps its figures;
    3. a thread's CPU time inside a call cannot exceed the call's wall time: each CPU figure is
       capped at its own call's WALL figure (single-threaded code reads CPU ≈ WALL; only time
       off the CPU — blocking, sleeping — makes CPU lower).
    """
    calls, hits = len(preempted), sum(preempted)
    if hits and hits <= PREEMPTED_SHARE * calls:
        if len(cpu) == sum(sampled):
            cpu = [
                c for c, hit in zip(cpu, (h for h, f in zip(preempted, sampled) if f)) if not hit
            ]
        wall, sampled = (
            [w for w, hit in zip(wall, preempted) if not hit],
            [f for f, hit in zip(sampled, preempted) if not hit],
        )
    wall_dither, cpu_dither = Dither(log.clock_steps[0], 3), Dither(log.clock_steps[1], 4)
    wall, cpu = wall_dither.add(wall), cpu_dither.add(cpu)
    sampled_wall = [w for w, flag in zip(wall, sampled) if flag]
    plain_wall = [w for w, flag in zip(wall, sampled) if not flag]
    shift = 0.0
    if len(sampled_wall) >= SHIFT_MIN_CALLS and len(plain_wall) >= SHIFT_MIN_CALLS:
        shift = max(0.0, statistics.median(sampled_wall) - statistics.median(plain_wall))
    if len(sampled_wall) == len(cpu):
        cpu = [max(0.0, min(c, w) - shift) for c, w in zip(cpu, sampled_wall)]
    wall = [max(0.0, w - shift) if flag else w for w, flag in zip(wall, sampled)]
    return CallCosts(wall, cpu, calls, hits)


def _events_of(
    log: PassLog, index: int, kinds: tuple[str, str]
) -> tuple[list[ProbeEvent], list[ProbeEvent]]:
    """Wall- and CPU-clock event lists of one site; 'filtered' events for hook-timed sites."""
    enter_kind, exit_kind = kinds
    raw_in, raw_out = log.enters[index], log.exits[index]
    tick_in, tick_out = log.ticks[index] if index < len(log.ticks) else ([], [])
    probes = [
        (raw_in[i + 1], raw_in[i], OPENS, tick_in[i // 2] if tick_in else 0)
        for i in range(0, len(raw_in) - 1, 2)
    ]
    probes += [
        (raw_out[i], raw_out[i + 1], CLOSES, tick_out[i // 2] if tick_out else 0)
        for i in range(0, len(raw_out) - 1, 2)
    ]
    probes.sort(key=lambda p: (p[3], p[0]))
    wall_events, cpu_events = [], []
    open_stack: list[list] = []  # [wall, cpu, tick, hook calls used by nested target calls]
    for wall, cpu, kind, tick in probes:
        name = enter_kind if kind == OPENS else exit_kind
        sampled = SAMPLED if kind == OPENS and cpu >= 0 else ""
        wall_events.append(ProbeEvent(wall, name + CPU_SUFFIX if cpu >= 0 else name, kind, sampled))
        if kind == OPENS:
            open_stack.append([wall, cpu, tick, 0])
            continue
        if not open_stack:
            continue
        w0, c0, t0, nested = open_stack.pop()
        if c0 >= 0 and cpu >= 0:
            cpu_events += [
                ProbeEvent(c0, enter_kind + CPU_SUFFIX, OPENS),
                ProbeEvent(cpu, exit_kind + CPU_SUFFIX, CLOSES),
            ]
        if tick_in:
            filtered = tick - t0 - 1 - nested
            wall_events += [ProbeEvent(w0, "filtered")] * filtered
            if c0 >= 0:
                cpu_events += [ProbeEvent(c0, "filtered")] * filtered
            if open_stack:
                open_stack[-1][3] += tick - t0 + 1
    return wall_events, cpu_events
