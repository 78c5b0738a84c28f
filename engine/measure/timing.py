"""Timing passes: re-run the scenario with only one group's targets instrumented.

Mechanisms (every other code object runs unobserved, at full speed):

* ``monitoring`` (3.12+): LOCAL events on the targets' tagged code objects — PY_START/PY_RESUME
  open a call, PY_RETURN/PY_YIELD close it; PY_UNWIND/PY_THROW exist only as global events and
  fire only while an exception unwinds or is thrown into a generator. C-level targets
  (builtins, descriptors, classes) are watched by LOCAL CALL events on the code objects that
  call them (known from the allocation pass) plus C_RETURN/C_RAISE.
* ``trampoline`` (3.11, plain Python functions): the function's ``__code__`` becomes a
  generated wrapper that probes and calls a clone of the original
  (:func:`~apiprof.engine.measure.probes.install_trampoline`).
* ``setprofile`` (3.11, generators, coroutines and C-level targets only): one hook sees every
  event and filters on the :class:`~apiprof.engine.measure.probes.ProbeId` tag; it counts its own calls
  so the cost of filtered events inside an interval can be subtracted. Such sites run in a
  second leg of the pass, so trampolined targets never pay for the hook.

A generator's "call" is one activation: start/resume to yield/return.

Records (constant-time lookup, docs/mechanisms.rst): one :class:`~apiprof.engine.measure.probes.Record` per site, indexed by dense id.
Entry appends ``(cpu, wall)`` with the wall clock read last, exit ``(wall, cpu)`` with it read
first. ``cpu`` is the thread-CPU clock, or -1 when that call was not sampled: the clock is a
system call (~0.6 µs on VMs), so it is read on *every* call only for sites whose calls are long
(median ≥ ``LONG_NS``, where two reads are a small, subtracted fraction) and on every
``SAMPLE_EVERY``-th call otherwise. The WALL metric covers every call; the CPU metric is the
thread-CPU active time of the sampled calls (a systematic sample; exact per sampled call).

Live calibration: alongside every run of the scenario the pass calls an empty reference
function, probed identically, ``REFERENCE_CALLS`` times before and after (every 4th call
also reads the CPU clock). The medians of its raw intervals are the *inside* overhead that pass subtracts, so drift
of the machine's speed between calibration and measurement does not bias short calls.
"""

from __future__ import annotations

import statistics
import sys
import time
import types
import typing
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from apiprof.engine.measure.activetime import CLOSES, OPENS, ProbeEvent, active_times
from apiprof.engine.measure.probes import (
    HAS_MONITORING,
    CSite,
    ProbeId,
    PySite,
    Record,
    Site,
    acquire_tool_id,
    can_trampoline,
    install_probe_id,
    install_trampoline,
    release_tool_id,
    restore_code,
)

MECHANISM = (
    "sys.monitoring (local events)"
    if HAS_MONITORING
    else "trampolines (sys.setprofile for generators/C)"
)
LONG_NS = 20_000
SAMPLE_EVERY = 16
MASK_SAMPLED = 2 * SAMPLE_EVERY - 2  # entry records are pairs: len(record) = 2 × calls so far
MASK_ALWAYS = 0
MASK_REFERENCE = 6  # every 4th reference call also reads the CPU clock
MASK_NEVER = (1 << 62) - 2  # only the very first call reads the CPU clock
REFERENCE_CALLS = 128
CPU_SUFFIX = "+cpu"  # calibration key suffix of probes that also read the thread-CPU clock


@dataclass
class PassLog:
    """Raw probe records of one timing pass, indexed by the sites' dense ids. ``ticks[i]`` holds
    the hook-call counter at each entry / exit of a ``setprofile`` site (empty otherwise);
    ``reference`` the (entries, exits) of the empty reference function."""

    sites: list[Site]
    enters: list[Record]
    exits: list[Record]
    runs: int
    ticks: list[tuple[list[int], list[int]]] = field(default_factory=list)
    hooked: list[bool] = field(default_factory=list)
    reference: tuple[Record, Record] = field(default_factory=lambda: (Record(), Record()))


def _reference() -> None:
    pass


def _call_reference(n: int) -> None:
    f = _reference
    for _ in range(n):
        f()


def choose_mechanisms(sites: Sequence[Site], mechanism: str | None = None) -> list[str]:
    """The mechanism that times each site (``mechanism`` forces one where it can apply)."""
    out = []
    for site in sites:
        if mechanism == "setprofile" or (isinstance(site, CSite) and not HAS_MONITORING):
            out.append("setprofile")
        elif mechanism == "monitoring" or (mechanism is None and HAS_MONITORING):
            out.append("monitoring")
        elif isinstance(site, PySite) and can_trampoline(site.function):
            out.append("trampoline")
        else:
            out.append("setprofile")
    return out


def run_timing_pass(
    run_once: Callable[[], object],
    sites: Sequence[Site],
    callers: Mapping[Hashable, Iterable[types.CodeType]] | None = None,
    *,
    repeat: int = 20,
    max_seconds: float = 2.0,
    cpu_mask: int | None = None,
    mechanism: str | None = None,
    reference: bool = True,
) -> PassLog:
    """Run the scenario up to ``repeat`` times (at least once, stopping after ``max_seconds``)
    with probes on ``sites`` only; on 3.11 sites that need the profile hook get their own leg of
    the same length. ``cpu_mask`` fixes which calls read the CPU clock (default: adaptive).
    ``callers`` maps a C site's key to the code objects that call it. Instrumentation is always
    removed, also when ``run_once`` raises."""
    mask = MASK_SAMPLED if cpu_mask is None else cpu_mask
    log = PassLog(
        list(sites),
        [Record(mask) for _ in sites],
        [Record() for _ in sites],
        0,
        [([], []) for _ in sites],
    )
    kinds = choose_mechanisms(sites, mechanism)
    log.hooked = [kind == "setprofile" for kind in kinds]
    ref_in, ref_out = Record(MASK_REFERENCE), Record()
    log.reference = (ref_in, ref_out)
    legs = [
        [i for i, k in enumerate(kinds) if k != "setprofile"],
        [i for i, k in enumerate(kinds) if k == "setprofile"],
    ]
    for leg in legs:
        if not leg and (leg is legs[1] or legs[1]):
            continue
        probe_reference = reference and leg is legs[0]
        with _Instrumented(log, leg, callers or {}, kinds, probe_reference):
            deadline = time.perf_counter() + max_seconds
            runs = 0
            for _ in range(max(1, repeat)):
                if probe_reference:
                    _call_reference(REFERENCE_CALLS)
                run_once()
                runs += 1
                if probe_reference:
                    _call_reference(REFERENCE_CALLS)
                # not under the profile hook: it would see it
                if cpu_mask is None and probe_reference:
                    _adapt_masks(log, leg)
                if time.perf_counter() > deadline:
                    break
        log.runs = max(log.runs, runs)
    return log


def _adapt_masks(log: PassLog, indices: Iterable[int]) -> None:
    """Long calls read the CPU clock every time, short ones every SAMPLE_EVERY-th time."""
    for i in indices:
        enters, exits = log.enters[i], log.exits[i]
        n = min(len(enters), len(exits)) // 2
        if n:
            k = min(n, 8)
            recent = [exits[-2 * j] - enters[-2 * j + 1] for j in range(1, k + 1)]
            enters.mask = MASK_ALWAYS if statistics.median(recent) >= LONG_NS else MASK_SAMPLED


class _Instrumented:
    """Installs one leg's probes (and the reference function's) and always removes them."""

    def __init__(
        self,
        log: PassLog,
        leg: list[int],
        callers: Mapping[Hashable, Iterable[types.CodeType]],
        kinds: list[str],
        probe_reference: bool,
    ) -> None:
        self.log, self.leg, self.callers, self.kinds = log, leg, callers, kinds
        self.probe_reference = probe_reference
        self.restore: list[tuple[types.FunctionType, types.CodeType]] = []
        self.tool: int | None = None
        self.hooked = False

    def __enter__(self) -> _Instrumented:
        try:
            self._install()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.hooked:
                sys.setprofile(None)
                self.hooked = False
            if self.tool is not None:
                for function, _ in self.restore:
                    sys.monitoring.set_local_events(self.tool, function.__code__, 0)
                for code in getattr(self, "call_sites", ()):
                    sys.monitoring.set_local_events(self.tool, code, 0)
                release_tool_id(self.tool)
                self.tool = None
        finally:
            for function, original in reversed(self.restore):
                restore_code(function, original)
            self.restore.clear()

    def _install(self) -> None:
        log = self.log
        wall, cpu = time.perf_counter_ns, time.thread_time_ns
        enters, exits = list(log.enters), list(log.exits)
        py: list[tuple[types.FunctionType, int]] = []
        c_ids: dict[Hashable, int] = {}
        for i in self.leg:
            site = log.sites[i]
            if isinstance(site, CSite):
                c_ids[site.callable] = i
                c_ids.setdefault(site.key, i)
            else:
                py.append((site.function, i))
        kind = (
            self.kinds[self.leg[0]]
            if self.leg
            else ("monitoring" if HAS_MONITORING else "trampoline")
        )
        if self.probe_reference:
            enters.append(log.reference[0])
            exits.append(log.reference[1])
            py.append((typing.cast(types.FunctionType, _reference), len(enters) - 1))
        if kind == "trampoline":
            for function, i in py:
                self.restore.append(
                    (function, install_trampoline(function, enters[i], exits[i], wall, cpu))
                )
        elif kind == "setprofile":
            for function, i in py:
                self.restore.append((function, install_probe_id(function, i)))
            ticks = [log.ticks[i] if i < len(log.ticks) else ([], []) for i in range(len(enters))]
            sys.setprofile(make_profile_hook(enters, exits, c_ids, ticks))
            self.hooked = True
        else:
            for function, i in py:
                self.restore.append((function, install_probe_id(function, i)))
            self._start_monitoring(enters, exits, c_ids)

    def _start_monitoring(
        self, enters: list[Record], exits: list[Record], c_ids: dict[Hashable, int]
    ) -> None:
        monitoring, events = sys.monitoring, sys.monitoring.events
        self.tool = tool = acquire_tool_id()
        for name, callback in make_monitoring_callbacks(enters, exits, c_ids).items():
            monitoring.register_callback(tool, getattr(events, name), callback)
        py_events = events.PY_START | events.PY_RESUME | events.PY_RETURN | events.PY_YIELD
        for function, _ in self.restore:
            monitoring.set_local_events(tool, function.__code__, py_events)
        self.call_sites = {code for key in c_ids for code in self.callers.get(key, ())}
        for code in self.call_sites:
            monitoring.set_local_events(
                tool, code, events.CALL | monitoring.get_local_events(tool, code)
            )
        monitoring.set_events(tool, events.PY_UNWIND | events.PY_THROW if self.restore else 0)


def make_monitoring_callbacks(
    enters: list[Record], exits: list[Record], c_ids: Mapping[Hashable, int]
) -> dict[str, Callable[..., object]]:
    """The probes, by sys.monitoring event name. Kept minimal: they run inside measurements."""
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    lookup = c_ids.get

    def on_start(code, offset):
        r = enters[code.co_consts[-1]]
        r.append(cpu() if not len(r) & r.mask else -1)
        r.append(wall())

    def on_exit(code, offset, value):
        now = wall()
        i = code.co_consts[-1]
        x = exits[i]
        x.append(now)
        x.append(cpu() if enters[i][-2] >= 0 else -1)

    def on_throw(code, offset, exc):  # global event: filter on the tag
        consts = code.co_consts
        if consts and type(consts[-1]) is ProbeId:
            on_start(code, offset)

    def on_unwind(code, offset, exc):  # global event: filter on the tag
        now = wall()
        consts = code.co_consts
        if consts and type(consts[-1]) is ProbeId:
            i = consts[-1]
            x = exits[i]
            x.append(now)
            x.append(cpu() if enters[i][-2] >= 0 else -1)

    def on_call(code, offset, func, arg0):
        try:
            i = lookup(func)
        except TypeError:  # an unhashable callable is never a target
            return
        if i is not None:
            r = enters[i]
            r.append(cpu() if not len(r) & r.mask else -1)
            r.append(wall())

    def on_c_exit(code, offset, func, arg0):
        now = wall()
        try:
            i = lookup(func)
        except TypeError:
            return
        if i is not None:
            x = exits[i]
            x.append(now)
            x.append(cpu() if enters[i][-2] >= 0 else -1)

    return {
        "PY_START": on_start,
        "PY_RESUME": on_start,
        "PY_THROW": on_throw,
        "PY_RETURN": on_exit,
        "PY_YIELD": on_exit,
        "PY_UNWIND": on_unwind,
        "CALL": on_call,
        "C_RETURN": on_c_exit,
        "C_RAISE": on_c_exit,
    }


def make_profile_hook(
    enters: list[Record],
    exits: list[Record],
    c_ids: Mapping[Hashable, int],
    ticks: list[tuple[list[int], list[int]]],
) -> Callable[[types.FrameType, str, object], None]:
    """The sys.setprofile probe (3.11, generators and C sites). It counts its own calls so the
    cost of filtered-out events inside a measured interval can be subtracted."""
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    lookup = c_ids.get
    count = 0

    def hook(frame, event, arg):
        nonlocal count
        count += 1
        if event == "call":
            consts = frame.f_code.co_consts
            if consts and type(consts[-1]) is ProbeId:
                i = consts[-1]
                r = enters[i]
                ticks[i][0].append(count)
                r.append(cpu() if not len(r) & r.mask else -1)
                r.append(wall())
        elif event == "return":
            now = wall()
            consts = frame.f_code.co_consts
            if consts and type(consts[-1]) is ProbeId:
                i = consts[-1]
                x = exits[i]
                x.append(now)
                x.append(cpu() if enters[i][-2] >= 0 else -1)
                ticks[i][1].append(count)
        elif event == "c_call":
            try:
                c = lookup(arg)
            except TypeError:
                return
            if c is not None:
                r = enters[c]
                ticks[c][0].append(count)
                r.append(cpu() if not len(r) & r.mask else -1)
                r.append(wall())
        else:  # c_return, c_exception
            now = wall()
            try:
                c = lookup(arg)
            except TypeError:
                return
            if c is not None:
                x = exits[c]
                x.append(now)
                x.append(cpu() if enters[c][-2] >= 0 else -1)
                ticks[c][1].append(count)

    return hook


@dataclass(frozen=True)
class CallCosts:
    """Per-call active times of one site in one pass (ns): WALL for every call in order of the
    calls' ends, CPU for the calls whose CPU clock was sampled."""

    wall_ns: list[float]
    cpu_ns: list[float]


def probe_kinds(site: Site, hooked: bool = False) -> tuple[str, str]:
    """Calibration keys of a site's entry and exit probes (without the CPU suffix)."""
    if isinstance(site, CSite):
        return ("c_enter", "c_exit")
    return ("hook_enter", "hook_exit") if hooked else ("enter", "exit")


def reference_overheads(log: PassLog) -> tuple[dict[str, float], dict[str, float]]:
    """Inside overheads measured live by the pass's reference calls (wall, CPU): the medians of
    the raw exit − entry intervals of an empty function, per probe flavour."""
    enters, exits = log.reference
    plain, sampled, sampled_cpu = [], [], []
    for i in range(0, min(len(enters), len(exits)), 2):
        interval = exits[i] - enters[i + 1]
        if enters[i] >= 0 and exits[i + 1] >= 0:
            sampled.append(interval)
            sampled_cpu.append(exits[i + 1] - enters[i])
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
    """Calibrated overheads with the pass's live inside figures in place of the calibrated ones.
    A probe pair's full cost (entry + exit) stays the calibrated one: only nested calls pay it."""
    out = []
    for calibrated, live in zip((overhead_ns, cpu_overhead_ns), reference_overheads(log)):
        merged = dict(calibrated)
        for enter_key, inside in live.items():
            exit_key = enter_key.replace("enter", "exit")
            full = calibrated.get(enter_key, 0.0) + calibrated.get(exit_key, 0.0)
            merged[enter_key] = inside
            merged[exit_key] = max(0.0, full - inside)
        out.append(merged)
    return out[0], out[1]


def measure_calls(
    log: PassLog, overhead_ns: Mapping[str, float], cpu_overhead_ns: Mapping[str, float]
) -> list[CallCosts]:
    """Turn a pass's raw records into per-call WALL and CPU active times (docs/mechanisms.rst), one
    :func:`~apiprof.engine.measure.activetime.active_times` evaluation per clock, with the pass's live
    inside overheads (:func:`pass_overheads`)."""
    wall_overhead, cpu_overhead = pass_overheads(log, overhead_ns, cpu_overhead_ns)
    out = []
    for index, site in enumerate(log.sites):
        hooked = bool(log.hooked and log.hooked[index])
        wall_events, cpu_events = _events_of(log, index, probe_kinds(site, hooked))
        wall = [call.active for call in active_times(wall_events, wall_overhead)]
        cpu = [call.active for call in active_times(cpu_events, cpu_overhead)]
        out.append(CallCosts(wall, cpu))
    return out


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
        wall_events.append(ProbeEvent(wall, name + CPU_SUFFIX if cpu >= 0 else name, kind))
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
