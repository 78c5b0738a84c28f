"""Installing one leg of a timing pass: the targets' probes (and the reference function's),
always removed again, and where the records live while the leg runs (Python lists, or the C
probe's arrays copied into the log at the end).

Mechanisms (every other code object runs unobserved, at full speed):

* ``monitoring`` (3.12+): LOCAL events on the targets' tagged code objects — PY_START/PY_RESUME
  open a call, PY_RETURN/PY_YIELD close it; PY_UNWIND/PY_THROW exist only as global events and
  fire only while an exception unwinds or is thrown into a generator. C-level targets
  (builtins, descriptors, classes) are watched by LOCAL CALL events on the code objects that
  call them (known from the allocation pass) plus C_RETURN/C_RAISE. The callbacks are C
  functions of the ``_timing`` extension when it is built (``probes="c"``: tens of ns per
  event, records in C arrays), else the Python callbacks of
  :func:`~apiprof.engine.measure.callbacks.make_monitoring_callbacks` (``probes="python"``,
  the tested fallback; both write the same records).
* ``trampoline`` (3.11, plain Python functions): the function's ``__code__`` becomes a
  generated wrapper that probes and calls a clone of the original
  (:func:`~apiprof.engine.measure.probes.install_trampoline`).
* ``setprofile`` (3.11, generators, coroutines and C-level targets only): one hook sees every
  event and filters on the :class:`~apiprof.engine.measure.probes.ProbeId` tag; it counts its
  own calls so the cost of filtered events inside an interval can be subtracted. Such sites
  run in a second leg of the pass, so trampolined targets never pay for the hook.

A generator's "call" is one activation: start/resume to yield/return.

On 3.12, once every event is set, the code the pass will run (the targets' tagged copies, their
call sites, and the code objects the scenario ran in the allocation pass) gets back the
superinstructions monitoring split (:mod:`~apiprof.engine.measure.quicken`): the timed code
runs the bytecode a plain process runs.
"""

from __future__ import annotations

import sys
import time
import types
import typing
from collections.abc import Hashable, Iterable, Mapping, Sequence

from apiprof.engine.measure.callbacks import (
    c_monitoring_callbacks,
    make_monitoring_callbacks,
    make_profile_hook,
    run_by_the_pass,
)
from apiprof.engine.measure.invariants import PassCheck
from apiprof.engine.measure.passlog import PassLog
from apiprof.engine.measure.probes import (
    HAS_MONITORING,
    CSite,
    ProbeId,
    PySite,
    Record,
    Site,
    acquire_tool_id,
    cpu_pattern,
    install_probe_id,
    release_tool_id,
    restore_code,
)
from apiprof.engine.measure.quicken import RESTORE_LIMIT, restore_quickened
from apiprof.engine.measure.trampoline import can_trampoline, install_trampoline

try:
    from apiprof.engine.measure import _timing
except ImportError:  # the optional extension was not built
    _timing = None  # type: ignore[assignment]

HAS_C_PROBES = HAS_MONITORING and _timing is not None
MECHANISM = (
    ("sys.monitoring (local events, C probes)" if HAS_C_PROBES else "sys.monitoring (local events)")
    if HAS_MONITORING
    else "trampolines (sys.setprofile for generators/C)"
)

run_by_the_pass(globals())  # the pass's own builtin calls are not the scenario's


def reference_function() -> None:
    pass


def call_reference(n: int) -> None:
    f = reference_function
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


class PyRecords:
    """Records kept in the pass log's Python lists (Python callbacks, trampolines, hook)."""

    def __init__(self, log: PassLog, enters: list[Record], exits: list[Record]) -> None:
        self.log, self.enters, self.exits = log, enters, exits

    def lengths(self) -> list[tuple[int, int]]:
        return [(len(e), len(x)) for e, x in zip(self.enters, self.exits)]

    def empty(self) -> list[tuple[int, int]]:
        return [(0, 0)] * len(self.enters)

    def truncate(self, lengths: list[tuple[int, int]]) -> None:
        for (e, x), enters, exits in zip(lengths, self.enters, self.exits):
            del enters[e:]
            del exits[x:]
        for i, (tick_in, tick_out) in enumerate(self.log.ticks):
            if i < len(lengths):
                del tick_in[lengths[i][0] // 2 :]
                del tick_out[lengths[i][1] // 2 :]

    def take(self, i: int) -> tuple[list[int], list[int]]:
        return self.enters[i], self.exits[i]

    def since(self, i: int, lengths: tuple[int, int]) -> tuple[list[int], list[int]]:
        """Site ``i``'s records after ``lengths`` (what :meth:`lengths` gave for it earlier)."""
        return self.enters[i][lengths[0] :], self.exits[i][lengths[1] :]

    def set_cpu_every(self, i: int, every: int) -> None:
        self.enters[i].pattern = cpu_pattern(every, i)

    def collect(self) -> None:
        return None


class CRecords:
    """Records kept in a ``_timing.Probe``'s C arrays; copied into the log when the leg ends."""

    def __init__(self, log: PassLog, enters: list[Record], exits: list[Record], probe) -> None:
        self.log, self.enters, self.exits, self.probe = log, enters, exits, probe
        for i, record in enumerate(enters):
            self.probe.set_cpu_every(i, _pattern_rate(record.pattern))

    def lengths(self) -> list[tuple[int, int]]:
        return self.probe.lengths()

    def empty(self) -> list[tuple[int, int]]:
        return [(0, 0)] * len(self.enters)

    def truncate(self, lengths: list[tuple[int, int]]) -> None:
        for i, (e, x) in enumerate(lengths):
            self.probe.truncate(i, e, x)

    def take(self, i: int) -> tuple[list[int], list[int]]:
        return self.probe.records(i)

    def since(self, i: int, lengths: tuple[int, int]) -> tuple[list[int], list[int]]:
        return self.probe.records(i, *lengths)

    def set_cpu_every(self, i: int, every: int) -> None:
        self.probe.set_cpu_every(i, every)

    def collect(self) -> None:
        for i, (enters, exits) in enumerate(zip(self.enters, self.exits)):
            new_in, new_out = self.probe.records(i)
            enters.extend(new_in)
            exits.extend(new_out)


def _pattern_rate(pattern: bytes) -> int:
    """The sampling rate a :func:`~apiprof.engine.measure.probes.cpu_pattern` was made for."""
    ones = sum(pattern)
    if ones == 0:
        return 0
    if ones == len(pattern):
        return 1
    return max(2, round(len(pattern) / ones))


class Instrumented:
    """Installs one leg's probes (and the reference function's) and always removes them."""

    def __init__(
        self,
        log: PassLog,
        leg: list[int],
        callers: Mapping[Hashable, Iterable[types.CodeType]],
        kinds: list[str],
        probe_reference: bool,
        probes: str | None,
        check: PassCheck,
        running: Sequence[types.CodeType] = (),
    ) -> None:
        self.log, self.leg, self.callers, self.kinds = log, leg, callers, kinds
        self.running = running
        self.probe_reference = probe_reference
        self.probes, self.check = probes, check
        self.restore: list[tuple[types.FunctionType, types.CodeType]] = []
        self.tool: int | None = None
        self.hooked = False
        self.records: PyRecords | CRecords = PyRecords(log, log.enters, log.exits)

    def __enter__(self) -> Instrumented:
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
            self.records.collect()
            errors = getattr(getattr(self.records, "probe", None), "errors", 0)
            if errors:
                self.check.problem(f"{errors} probe records were lost (out of memory)")

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
            py.append((typing.cast(types.FunctionType, reference_function), len(enters) - 1))
        if kind == "trampoline":
            for function, i in py:
                self.restore.append(
                    (function, install_trampoline(function, enters[i], exits[i], wall, cpu))
                )
        elif kind == "setprofile":
            for function, i in py:
                self.restore.append((function, install_probe_id(function, i)))
            ticks = [log.ticks[i] if i < len(log.ticks) else ([], []) for i in range(len(enters))]
            sys.setprofile(make_profile_hook(enters, exits, c_ids, ticks, self.check))
            self.hooked = True
        else:
            for function, i in py:
                self.restore.append((function, install_probe_id(function, i)))
            self._start_monitoring(enters, exits, c_ids)
        self.records = (
            self.records if isinstance(self.records, CRecords) else PyRecords(log, enters, exits)
        )

    def _start_monitoring(
        self, enters: list[Record], exits: list[Record], c_ids: dict[Hashable, int]
    ) -> None:
        monitoring, events = sys.monitoring, sys.monitoring.events
        use_c = self.probes == "c" or (self.probes is None and HAS_C_PROBES)
        if use_c and _timing is None:
            raise ValueError("C probes were asked for but the _timing extension is not built")
        self.log.probes = "c" if use_c else "python"
        if use_c:
            probe = _timing.Probe(len(enters), dict(c_ids), ProbeId)
            self.records = CRecords(self.log, enters, exits, probe)
            callbacks = c_monitoring_callbacks(probe)
        else:
            callbacks = make_monitoring_callbacks(enters, exits, c_ids, self.check)
        self.tool = tool = acquire_tool_id()
        for name, callback in callbacks.items():
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
        timed = [function.__code__ for function, _ in self.restore]
        restore_quickened([*timed, *self.call_sites, *self.running[:RESTORE_LIMIT]])
