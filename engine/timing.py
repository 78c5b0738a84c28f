"""Timing passes: re-run the scenario with only one group's targets instrumented.

Python 3.12+ (``sys.monitoring``): LOCAL events on the targets' (tagged) code objects only —
PY_START/PY_RESUME open a call, PY_RETURN/PY_YIELD close it; PY_UNWIND and PY_THROW exist only
as global events and fire only while an exception unwinds or is thrown into a generator. C-level
targets (builtins, descriptors, classes = their constructor call) are watched by LOCAL CALL
events on the code objects that call them (known from the allocation pass) plus C_RETURN /
C_RAISE. Every other code object runs unmonitored, at full speed. Callers of C targets pay a
CALL event per call site execution, but by the co-stack rule they are never inside an interval
measured in the same pass.

Python 3.11 (``sys.setprofile``): one hook sees every call in the process and filters on the
:class:`~apiprof.engine.probes.ProbeId` tag. Non-target code slows down by a hook call per
event, and the events of a target's callees cost time inside its interval; the hook counts them
and active-time subtraction removes their calibrated cost ("filtered"), which is noisier.

A generator's "call" is one activation: from start/resume to yield/return, i.e. the cost of
producing one item (plus the final, exhausting step); creating the generator is not a call.

Probes write to dense per-target arrays (``enters[id]``, ``exits[id]``): the entry probe
appends (cpu, wall[, ticks]) with the wall clock read last, the exit probe (wall, [ticks,] cpu)
with the wall clock read first, so the thread-CPU clock (a system call, ~0.5 µs on VMs) stays
outside the wall interval. Only the thread that starts the pass is expected to call targets.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from apiprof.engine.activetime import CLOSES, OPENS, ProbeEvent, active_times
from apiprof.engine.probes import (
    HAS_MONITORING,
    CSite,
    ProbeId,
    PySite,
    Site,
    acquire_tool_id,
    install_probe_id,
    release_tool_id,
    restore_code,
)

MECHANISM = "sys.monitoring (local events)" if HAS_MONITORING else "sys.setprofile (filtered)"
STRIDE = 2 if HAS_MONITORING else 3  # values per probe record: (cpu, wall) / (cpu, ticks, wall)


@dataclass
class PassLog:
    """Raw probe records of one timing pass, indexed by the sites' dense ids."""

    sites: list[Site]
    enters: list[list[int]]
    exits: list[list[int]]
    runs: int
    stride: int = STRIDE


def run_timing_pass(
    run_once: Callable[[], object],
    sites: Sequence[Site],
    callers: Mapping[Hashable, Iterable[types.CodeType]] | None = None,
    *,
    repeat: int = 20,
    max_seconds: float = 2.0,
) -> PassLog:
    """Run the scenario up to ``repeat`` times (at least once, stopping after ``max_seconds``)
    with probes on ``sites`` only. ``callers`` maps a C site's key to the code objects that call
    it. Instrumentation is always removed, also when ``run_once`` raises."""
    log = PassLog(list(sites), [[] for _ in sites], [[] for _ in sites], 0)
    with _instrumented(log, callers or {}):
        deadline = time.perf_counter() + max_seconds
        for _ in range(max(1, repeat)):
            run_once()
            log.runs += 1
            if time.perf_counter() > deadline:
                break
    return log


class _instrumented:  # noqa: N801 - used as a context manager
    def __init__(self, log: PassLog, callers: Mapping[Hashable, Iterable[types.CodeType]]) -> None:
        self.log, self.callers = log, callers
        self.restore: list[tuple[types.FunctionType, types.CodeType]] = []
        self.c_ids: dict[Hashable, int] = {}
        self.py_codes: list[types.CodeType] = []

    def __enter__(self) -> _instrumented:
        try:
            for index, site in enumerate(self.log.sites):
                if isinstance(site, PySite):
                    self.restore.append((site.function, install_probe_id(site.function, index)))
                    self.py_codes.append(site.function.__code__)
                else:
                    self.c_ids[site.callable] = index
                    self.c_ids.setdefault(site.key, index)
            self._start()
        except BaseException:
            self._undo_codes()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._stop()
        finally:
            self._undo_codes()

    def _undo_codes(self) -> None:
        for function, original in reversed(self.restore):
            restore_code(function, original)
        self.restore.clear()

    # -- sys.monitoring (3.12+) --------------------------------------------------------------
    def _start(self) -> None:
        if not HAS_MONITORING:
            sys.setprofile(make_profile_hook(self.log.enters, self.log.exits, self.c_ids))
            return
        monitoring, events = sys.monitoring, sys.monitoring.events
        self.tool = tool = acquire_tool_id()
        try:
            callbacks = make_monitoring_callbacks(self.log.enters, self.log.exits, self.c_ids)
            for name, callback in callbacks.items():
                monitoring.register_callback(tool, getattr(events, name), callback)
            py_events = events.PY_START | events.PY_RESUME | events.PY_RETURN | events.PY_YIELD
            for code in self.py_codes:
                monitoring.set_local_events(tool, code, py_events)
            self.call_sites = {code for key in self.c_ids for code in self.callers.get(key, ())}
            for code in self.call_sites:
                monitoring.set_local_events(tool, code, events.CALL | _local_events_of(tool, code))
            monitoring.set_events(tool, events.PY_UNWIND | events.PY_THROW if self.py_codes else 0)
        except BaseException:
            self._stop()
            raise

    def _stop(self) -> None:
        if not HAS_MONITORING:
            sys.setprofile(None)
            return
        tool = getattr(self, "tool", None)
        if tool is None:
            return
        for code in (*self.py_codes, *getattr(self, "call_sites", ())):
            sys.monitoring.set_local_events(tool, code, 0)
        release_tool_id(tool)
        self.tool = None


def _local_events_of(tool: int, code: types.CodeType) -> int:
    return sys.monitoring.get_local_events(tool, code)


def make_monitoring_callbacks(
    enters: list[list[int]], exits: list[list[int]], c_ids: Mapping[Hashable, int]
) -> dict[str, Callable[..., object]]:
    """The probes, by sys.monitoring event name. Kept minimal: they run inside measurements."""
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    lookup = c_ids.get

    def on_start(code, offset):
        record = enters[code.co_consts[-1]]
        record.append(cpu())
        record.append(wall())

    def on_exit(code, offset, value):
        now = wall()
        record = exits[code.co_consts[-1]]
        record.append(now)
        record.append(cpu())

    def on_throw(code, offset, exc):  # global event: filter on the tag
        consts = code.co_consts
        if consts and type(consts[-1]) is ProbeId:
            on_start(code, offset)

    def on_unwind(code, offset, exc):  # global event: filter on the tag
        now = wall()
        consts = code.co_consts
        if consts and type(consts[-1]) is ProbeId:
            record = exits[consts[-1]]
            record.append(now)
            record.append(cpu())

    def on_call(code, offset, func, arg0):
        try:
            index = lookup(func)
        except TypeError:  # an unhashable callable is never a target
            return
        if index is not None:
            record = enters[index]
            record.append(cpu())
            record.append(wall())

    def on_c_exit(code, offset, func, arg0):
        now = wall()
        try:
            index = lookup(func)
        except TypeError:
            return
        if index is not None:
            record = exits[index]
            record.append(now)
            record.append(cpu())

    return {
        "PY_START": on_start, "PY_RESUME": on_start, "PY_THROW": on_throw,
        "PY_RETURN": on_exit, "PY_YIELD": on_exit, "PY_UNWIND": on_unwind,
        "CALL": on_call, "C_RETURN": on_c_exit, "C_RAISE": on_c_exit,
    }


def make_profile_hook(
    enters: list[list[int]], exits: list[list[int]], c_ids: Mapping[Hashable, int]
) -> Callable[[types.FrameType, str, object], None]:
    """The sys.setprofile probe (3.11). ``ticks`` counts every hook call so the cost of
    filtered-out events inside a measured interval can be subtracted."""
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    lookup = c_ids.get
    ticks = 0

    def hook(frame, event, arg):
        nonlocal ticks
        ticks += 1
        if event == "call":
            consts = frame.f_code.co_consts
            if consts and type(consts[-1]) is ProbeId:
                record = enters[consts[-1]]
                record.append(cpu())
                record.append(ticks)
                record.append(wall())
        elif event == "return":
            now = wall()
            consts = frame.f_code.co_consts
            if consts and type(consts[-1]) is ProbeId:
                record = exits[consts[-1]]
                record.append(now)
                record.append(ticks)
                record.append(cpu())
        elif event == "c_call":
            try:
                index = lookup(arg)
            except TypeError:
                return
            if index is not None:
                record = enters[index]
                record.append(cpu())
                record.append(ticks)
                record.append(wall())
        else:  # c_return, c_exception
            now = wall()
            try:
                index = lookup(arg)
            except TypeError:
                return
            if index is not None:
                record = exits[index]
                record.append(now)
                record.append(ticks)
                record.append(cpu())

    return hook


@dataclass(frozen=True)
class CallCosts:
    """Per-call active times of one site in one pass (ns), in call order."""

    wall_ns: list[float]
    cpu_ns: list[float]


def probe_kinds(site: Site) -> tuple[str, str]:
    """Calibration keys of a site's entry and exit probes."""
    return ("enter", "exit") if isinstance(site, PySite) else ("c_enter", "c_exit")


def measure_calls(log: PassLog, overhead_ns: Mapping[str, float], cpu_overhead_ns: Mapping[str, float]) -> list[CallCosts]:
    """Turn a pass's raw records into per-call WALL and CPU active times (seeds/001), one
    :func:`~apiprof.engine.activetime.active_times` evaluation per clock."""
    out = []
    for index, site in enumerate(log.sites):
        wall_events, cpu_events = _events_of(log, index, probe_kinds(site))
        wall = [call.active for call in active_times(wall_events, overhead_ns)]
        cpu = [call.active for call in active_times(cpu_events, cpu_overhead_ns)]
        out.append(CallCosts(wall, cpu))
    return out


def _events_of(log: PassLog, index: int, kinds: tuple[str, str]):
    """Wall- and CPU-clock event lists of one site, with 'filtered' events on 3.11."""
    enter_kind, exit_kind = kinds
    s = log.stride
    raw_in, raw_out = log.enters[index], log.exits[index]
    if s == 2:  # (cpu, wall) / (wall, cpu)
        probes = [(raw_in[i + 1], raw_in[i], OPENS, 0) for i in range(0, len(raw_in), 2)]
        probes += [(raw_out[i], raw_out[i + 1], CLOSES, 0) for i in range(0, len(raw_out), 2)]
    else:  # (cpu, ticks, wall) / (wall, ticks, cpu): order by the hook's tick counter
        probes = [(raw_in[i + 2], raw_in[i], OPENS, raw_in[i + 1]) for i in range(0, len(raw_in), 3)]
        probes += [(raw_out[i], raw_out[i + 2], CLOSES, raw_out[i + 1]) for i in range(0, len(raw_out), 3)]
    probes.sort(key=lambda p: (p[3], p[0]))
    wall_events, cpu_events = [], []
    open_stack: list[list] = []  # [wall, cpu, tick, ticks used by children]
    for wall, cpu, kind, tick in probes:
        name = enter_kind if kind == OPENS else exit_kind
        wall_events.append(ProbeEvent(wall, name, kind))
        cpu_events.append(ProbeEvent(cpu, name, kind))
        if s == 2:
            continue
        if kind == OPENS:
            open_stack.append([wall, cpu, tick, 0])
        elif open_stack:
            w0, c0, t0, children = open_stack.pop()
            filtered = tick - t0 - 1 - children
            wall_events += [ProbeEvent(w0, "filtered")] * filtered
            cpu_events += [ProbeEvent(c0, "filtered")] * filtered
            if open_stack:
                open_stack[-1][3] += tick - t0 + 1
    return wall_events, cpu_events
