"""Probes that stay on while a real program runs: the measurement core for in-the-wild collection.

A timing pass (:mod:`~apiprof.engine.measure.timing`) installs its probes, runs a scenario and
removes them. A collected program is not a scenario: a few functions get probes when they are
chosen, keep them while the program runs, lose them when the collector's budget says so, and
their records are read while calls keep arriving. :class:`LiveProbes` is that live form of the
same probes — the ``sys.monitoring`` callbacks (3.12+) or trampolines (3.11) and the
:class:`~apiprof.engine.measure.probes.Record` layout of :mod:`~apiprof.engine.measure.probes`.

Only Python functions are watched live (on 3.11 only plain ones, not generators): C-level
callables are timed at their call sites, which only a scan's allocation pass knows.

Per-call active time is the "Active time" rule of docs/mechanisms.rst in closed form, one
function at a time: elapsed time, minus the inside overhead of the call's own entry probe (measured live on an empty reference
function when the probes open), minus the full cost of each nested probed call of the same
function (recursion). Records are swapped for fresh ones when read, so reading never races a
probe; a record always holds one placeholder entry first, because an exit probe looks at the
latest entry. Calls that overlap on several threads are paired in time order: counts and sums
stay exact, the split between the overlapping calls is approximate.
"""

from __future__ import annotations

import statistics
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from apiprof.engine.measure.callbacks import make_monitoring_callbacks
from apiprof.engine.measure.passlog import REFERENCE_EVERY, SAMPLE_EVERY
from apiprof.engine.measure.probes import (
    HAS_MONITORING,
    ProbeId,
    PySite,
    Record,
    cpu_pattern,
    install_probe_id,
    release_tool_id,
    resolve_site,
    restore_code,
)
from apiprof.engine.measure.trampoline import can_trampoline, install_trampoline
from apiprof.errors import MeasurementError

TOOL_IDS = (4, 3)
"""sys.monitoring tool ids a live collector may take: never the debugger (0), coverage (1),
profiler (2) or optimizer (5) ids a host program's own tools expect to find free."""

RECORD_SLOTS = 256
"""Records kept from the start, so a probe never indexes past the end (an exception in a probe
would surface in the host program)."""

MAX_PENDING = 256
"""Calls still open across reads (long calls, recursion) kept per function; older ones drop."""

REFERENCE = 0  # the reference function's record index; watched functions start at 1
_monitoring: Any = getattr(sys, "monitoring", None)
_CALIBRATION_CALLS = 128
_PLACEHOLDER = (-1, -1)  # (cpu, wall) of the entry every fresh record starts with


def _empty() -> None:
    pass


def _twin() -> None:
    pass


_live_reference = cast(types.FunctionType, _empty)
_live_twin = cast(types.FunctionType, _twin)


def _loop(function: Callable[[], None], n: int) -> int:
    t0 = time.perf_counter_ns()
    for _ in range(n):
        function()
    return time.perf_counter_ns() - t0


@dataclass(frozen=True)
class LiveCosts:
    """Active times (ns) of the calls of one watched function completed since the last read:
    wall time of every call, thread-CPU time of the sampled ones."""

    wall_ns: list[int] = field(default_factory=list)
    cpu_ns: list[int] = field(default_factory=list)


@dataclass
class _Watch:
    function: types.FunctionType
    original: types.CodeType
    pending: list[list[int]] = field(default_factory=list)  # open calls: [wall, cpu, nested]
    consumed: int = 0  # calls read so far


SAMPLED = cpu_pattern(SAMPLE_EVERY)
"""Which calls of a watched function also read the thread-CPU clock (a random 1 in 16)."""


def _fresh_enter(pattern: bytes) -> Record:
    record = Record(pattern)
    record.extend(_PLACEHOLDER)
    return record


def watchable(obj: object) -> types.FunctionType | None:
    """The Python function live probes would time for ``obj`` (function, method, property,
    static/class method), or None when ``obj`` cannot be watched in a running program (C code,
    classes — a constructor is more than its ``__init__``)."""
    if isinstance(obj, type):
        return None
    try:
        site = resolve_site(obj)
    except MeasurementError:
        return None
    if not isinstance(site, PySite):
        return None
    function = site.function
    if not HAS_MONITORING and not can_trampoline(function):
        return None
    return function


class LiveProbes:
    """Probes on a changing set of Python functions in a running program.

    ``watch``/``unwatch`` add and remove functions, ``pause``/``resume`` switch every probe off
    and on (calls in flight at a pause are dropped, never mispaired), ``drain`` returns the
    calls completed since the last drain, ``calls`` counts probed calls (for a cost budget) and
    ``probe_cost_ns`` is what one probed call costs the program in total. Not thread-safe:
    one owner calls these methods; probes fire on any thread.
    """

    def __init__(self) -> None:
        self.enters: list[Record] = [_fresh_enter(SAMPLED) for _ in range(RECORD_SLOTS)]
        self.exits: list[Record] = [Record() for _ in range(RECORD_SLOTS)]
        self.watches: dict[int, _Watch] = {}
        self.paused = False
        self.tool: int | None = None
        self.inside_ns = 0.0  # entry probe's share of a plain call's interval
        self.inside_sampled_ns = 0.0  # the same for a call that also reads the CPU clock
        self.inside_cpu_ns = 0.0  # CPU-clock share of a sampled call's interval
        self.probe_cost_ns = 0.0
        self._consumed = 0
        if HAS_MONITORING:
            self._open_monitoring()
        try:
            self._measure_overhead()
        except BaseException:
            self.close()
            raise

    # -- mechanism -------------------------------------------------------------------------
    def _open_monitoring(self) -> None:
        monitoring = _monitoring
        for tool in TOOL_IDS:
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, "apiprof-collect")
                self.tool = tool
                break
        else:
            raise MeasurementError("no free sys.monitoring tool id for live probes")
        callbacks = make_monitoring_callbacks(self.enters, self.exits, {})
        events = monitoring.events
        for name in ("PY_START", "PY_RESUME", "PY_RETURN", "PY_YIELD", "PY_UNWIND", "PY_THROW"):
            monitoring.register_callback(self.tool, getattr(events, name), callbacks[name])

    def _install(self, index: int) -> None:
        watch = self.watches[index]
        if HAS_MONITORING:
            events = _monitoring.events
            local = events.PY_START | events.PY_RESUME | events.PY_RETURN | events.PY_YIELD
            _monitoring.set_local_events(self.tool, watch.function.__code__, local)
            _monitoring.set_events(self.tool, events.PY_UNWIND | events.PY_THROW)
        else:
            watch.function.__code__ = watch.original
            install_trampoline(
                watch.function,
                self.enters[index],
                self.exits[index],
                time.perf_counter_ns,
                time.thread_time_ns,
            )

    def _uninstall(self, index: int) -> None:
        watch = self.watches[index]
        if HAS_MONITORING:
            _monitoring.set_local_events(self.tool, watch.function.__code__, 0)
            if self.paused or not any(i != index for i in self.watches):
                # the unwind and throw events are global: every exception leaving any frame of
                # the program would call the probe while nothing is watched
                _monitoring.set_events(self.tool, 0)
        else:
            watch.function.__code__ = watch.original

    def _tag(self, function: types.FunctionType, index: int) -> types.CodeType:
        if HAS_MONITORING:
            return install_probe_id(function, index)
        return function.__code__

    # -- public interface -------------------------------------------------------------------
    def watch(self, obj: object) -> int | None:
        """Start timing ``obj``; returns its handle, or None if it cannot be watched live (C
        code, a 3.11 generator, already probed by someone, no free slot)."""
        function = watchable(obj)
        if function is None or any(w.function is function for w in self.watches.values()):
            return None
        code = function.__code__
        if code.co_consts and type(code.co_consts[-1]) is ProbeId:
            return None  # another pass has it
        index = next((i for i in range(1, RECORD_SLOTS) if i not in self.watches), None)
        if index is None:
            return None
        self.enters[index] = _fresh_enter(SAMPLED)
        self.exits[index] = Record()
        self.watches[index] = _Watch(function, self._tag(function, index))
        if not self.paused:
            self._install(index)
        return index

    def unwatch(self, handle: int) -> LiveCosts:
        """Stop timing one function; returns its calls not yet drained."""
        costs = self._read(handle)
        self._uninstall(handle)
        restore_code(self.watches[handle].function, self.watches[handle].original)
        del self.watches[handle]
        return costs

    def pause(self) -> dict[int, LiveCosts]:
        """Switch every probe off; returns the calls completed so far (open calls drop)."""
        if self.paused:
            return {}
        for index in self.watches:
            self._uninstall(index)
        if HAS_MONITORING and self.tool is not None:
            _monitoring.set_events(self.tool, 0)
        self.paused = True
        costs = self.drain()
        for watch in self.watches.values():
            watch.pending.clear()
        return costs

    def resume(self) -> None:
        if not self.paused:
            return
        self.paused = False
        for index in self.watches:
            self._install(index)

    def calls(self) -> int:
        """Probed calls so far, drained or not (what the probes have cost is this × cost)."""
        return self._consumed + sum(
            (len(self.enters[i]) - len(_PLACEHOLDER)) // 2 for i in self.watches
        )

    def drain(self) -> dict[int, LiveCosts]:
        """Active times of the calls completed since the last drain, by handle."""
        return {index: self._read(index) for index in list(self.watches)}

    def close(self) -> None:
        """Remove every probe and give the tool id back; safe to call twice."""
        for index in list(self.watches):
            self._uninstall(index)
            restore_code(self.watches[index].function, self.watches[index].original)
        self.watches.clear()
        if self.tool is not None:
            release_tool_id(self.tool)
            self.tool = None

    # -- reading records --------------------------------------------------------------------
    def _swap(self, index: int) -> tuple[Record, Record]:
        enters, exits = self.enters[index], self.exits[index]
        self.enters[index] = _fresh_enter(enters.pattern)
        self.exits[index] = Record()
        if not HAS_MONITORING and index in self.watches and not self.paused:
            self._install(index)  # trampolines hold their records as constants
        return enters, exits

    def _read(self, index: int) -> LiveCosts:
        enters, exits = self._swap(index)
        watch = self.watches[index]
        if not HAS_MONITORING:
            watch.pending.clear()  # in-flight exits land in the old trampoline's records
        fast = None if watch.pending else self._sequential(enters, exits)
        if fast is not None:
            self._consumed += len(fast.wall_ns)
            return fast
        events = [
            (enters[i + 1], 1, enters[i]) for i in range(len(_PLACEHOLDER), len(enters) - 1, 2)
        ]
        self._consumed += len(events)
        events += [(exits[i], 0, exits[i + 1]) for i in range(0, len(exits) - 1, 2)]
        events.sort()
        out = LiveCosts()
        stack = watch.pending
        full = self.probe_cost_ns
        for wall, opens, cpu in events:
            if opens:
                stack.append([wall, cpu, 0])
                continue
            if not stack:
                continue  # the exit of a call that started before its probe was on
            start, start_cpu, nested = stack.pop()
            sampled = start_cpu >= 0 and cpu >= 0
            inside = self.inside_sampled_ns if sampled else self.inside_ns
            out.wall_ns.append(max(0, round(wall - start - inside - nested * full)))
            if sampled:
                out.cpu_ns.append(
                    max(0, round(cpu - start_cpu - self.inside_cpu_ns - nested * full))
                )
            if stack:
                stack[-1][2] += 1 + nested
        del stack[:-MAX_PENDING]
        return out

    def _sequential(self, enters: Record, exits: Record) -> LiveCosts | None:
        """The common case in closed form: calls one after another (no recursion, no overlap
        across threads, none open), each exit following its own entry. None otherwise."""
        starts, ends = enters[3::2], exits[0::2]
        if len(starts) != len(ends) or len(enters) % 2 or len(exits) % 2:
            return None
        if any(e < s for s, e in zip(starts, ends, strict=True)) or any(
            s < e for s, e in zip(starts[1:], ends, strict=False)
        ):
            return None
        plain, sampled = self.inside_ns, self.inside_sampled_ns
        wall = [
            max(0, round(end - start - (sampled if cpu_in >= 0 <= cpu_out else plain)))
            for start, end, cpu_in, cpu_out in zip(
                starts, ends, enters[2::2], exits[1::2], strict=True
            )
        ]
        cpu = [
            max(0, round(cpu_out - cpu_in - self.inside_cpu_ns))
            for cpu_in, cpu_out in zip(enters[2::2], exits[1::2], strict=True)
            if cpu_in >= 0 <= cpu_out
        ]
        return LiveCosts(wall, cpu)

    # -- what the probes cost ---------------------------------------------------------------
    def _measure_overhead(self) -> None:
        """Inside overheads from an empty reference function probed like any watched one, and
        the full cost of a probed call from a loop of them against an unprobed twin loop."""
        self.enters[REFERENCE] = _fresh_enter(cpu_pattern(REFERENCE_EVERY))
        self.watches[REFERENCE] = _Watch(_live_reference, self._tag(_live_reference, REFERENCE))
        self._install(REFERENCE)
        try:
            full = []
            for _ in range(3):
                probed = _loop(_live_reference, _CALIBRATION_CALLS)
                full.append((probed - _loop(_live_twin, _CALIBRATION_CALLS)) / _CALIBRATION_CALLS)
            enters, exits = self._swap(REFERENCE)
        finally:
            self._uninstall(REFERENCE)
            restore_code(_live_reference, self.watches.pop(REFERENCE).original)
        plain, sampled, sampled_cpu = [], [], []
        for k in range(min(len(enters) - len(_PLACEHOLDER), len(exits)) // 2):
            cpu_in, wall_in = enters[2 + 2 * k], enters[3 + 2 * k]
            wall_out, cpu_out = exits[2 * k], exits[2 * k + 1]
            if cpu_in >= 0 and cpu_out >= 0:
                sampled.append(wall_out - wall_in)
                sampled_cpu.append(cpu_out - cpu_in)
            else:
                plain.append(wall_out - wall_in)
        median = statistics.median
        self.inside_ns = float(median(plain)) if plain else 0.0
        self.inside_sampled_ns = float(median(sampled)) if sampled else self.inside_ns
        self.inside_cpu_ns = float(median(sampled_cpu)) if sampled_cpu else 0.0
        self.probe_cost_ns = max(float(median(full)), self.inside_ns)
