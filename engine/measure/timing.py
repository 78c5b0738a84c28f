"""Timing passes: re-run the scenario with only one group's targets instrumented.

Mechanisms (every other code object runs unobserved, at full speed):

* ``monitoring`` (3.12+): LOCAL events on the targets' tagged code objects — PY_START/PY_RESUME
  open a call, PY_RETURN/PY_YIELD close it; PY_UNWIND/PY_THROW exist only as global events and
  fire only while an exception unwinds or is thrown into a generator. C-level targets
  (builtins, descriptors, classes) are watched by LOCAL CALL events on the code objects that
  call them (known from the allocation pass) plus C_RETURN/C_RAISE. The callbacks are C
  functions of the ``_timing`` extension when it is built (``probes="c"``: tens of ns per
  event, records in C arrays), else the Python callbacks of :func:`make_monitoring_callbacks`
  (``probes="python"``, the tested fallback; both write the same records).
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
system call (~0.3–0.6 µs), so it is read on *every* call only for sites whose calls are long
(median ≥ ``LONG_NS`` in the warm-up run, where two reads are a small, subtracted fraction) and
on a random 1 in ``SAMPLE_EVERY`` calls otherwise — at one rate for the whole pass
(``PassLog.cpu_every``). Each CPU sample is stored with that rate as its weight, so CPU
histograms of passes sampled at different rates (a cheap and an expensive scenario of one API)
merge into an unbiased picture of the same calls the WALL metric covers.

How long a pass runs (:class:`Budget`): one unrecorded warm-up run, then runs in stretches
that double in length while they are shorter than ``STRETCH_SECONDS``, until at least
``min_runs`` runs are recorded and ``seconds`` have gone into them — time the thread ran:
with perf records the preempted time does not count, so a pass on a busy machine gets about
the samples an idle one gets — (never past ``max_seconds`` of wall time). Many back-to-back runs of a cheap scenario also keep the code warm, as it is
in a caller's loop. Around every stretch the pass calls an empty reference function, probed
identically, ``REFERENCE_CALLS`` times (every 4th call also reads the CPU clock): the medians of
its raw intervals are the *inside* overhead the pass subtracts, so drift of the machine's speed
between calibration and measurement does not bias short calls.

Preemption (:mod:`~apiprof.engine.measure.switches`): with perf context-switch records the
pass keeps the preempted intervals and :func:`measure_calls` subtracts them from the calls
they fall in; with only the involuntary-switch counter, a stretch during which the thread was
preempted is discarded and measured again (until half the budget went into discarded
stretches: a machine that stays busy keeps its numbers, counted as disturbed).
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
from apiprof.engine.measure.invariants import PassCheck
from apiprof.engine.measure.probes import (
    HAS_MONITORING,
    PATTERN_MASK,
    CSite,
    ProbeId,
    PySite,
    Record,
    Site,
    acquire_tool_id,
    can_trampoline,
    cpu_pattern,
    install_probe_id,
    install_trampoline,
    release_tool_id,
    restore_code,
)
from apiprof.engine.measure.switches import SwitchSource

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
LONG_NS = 20_000
SAMPLE_EVERY = 16
REFERENCE_EVERY = 4  # every 4th reference call also reads the CPU clock
REFERENCE_CALLS = 128
STRETCH_SECONDS = 0.002
MAX_STRETCH_RUNS = 4096
CPU_SUFFIX = "+cpu"  # calibration key suffix of probes that also read the thread-CPU clock
SAMPLED = "cpu"  # name of the wall-clock opening event of a call whose CPU clock was read


@dataclass(frozen=True)
class Budget:
    """How long one timing pass measures: at least ``min_runs`` recorded runs and ``seconds``
    of runs, never past ``max_seconds`` (an expensive scenario keeps at least one run)."""

    min_runs: int = 20
    seconds: float = 0.0
    max_seconds: float = 2.0
    warmup: bool = True


@dataclass
class PassLog:
    """Raw probe records of one timing pass, indexed by the sites' dense ids. ``ticks[i]`` holds
    the hook-call counter at each entry / exit of a ``setprofile`` site (empty otherwise);
    ``reference`` the (entries, exits) of the empty reference function; ``preempted`` the
    intervals the thread was preempted (perf records), which :func:`measure_calls` subtracts."""

    sites: list[Site]
    enters: list[Record]
    exits: list[Record]
    runs: int
    ticks: list[tuple[list[int], list[int]]] = field(default_factory=list)
    hooked: list[bool] = field(default_factory=list)
    reference: tuple[Record, Record] = field(default_factory=lambda: (Record(), Record()))
    preempted: list[tuple[int, int]] = field(default_factory=list)
    disturbed_runs: int = 0
    probes: str = ""  # "c" or "python" for monitoring passes
    # per site: 1 in how many calls read the CPU clock (the weight of each CPU sample)
    cpu_every: list[int] = field(default_factory=list)

    @property
    def preempted_ns(self) -> int:
        return sum(back - out for out, back in self.preempted)


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
    budget: Budget | None = None,
    repeat: int | None = None,
    max_seconds: float | None = None,
    cpu_every: int | None = None,
    mechanism: str | None = None,
    probes: str | None = None,
    reference: bool = True,
    switches: SwitchSource | None = None,
) -> PassLog:
    """Run the scenario with probes on ``sites`` only, for as long as ``budget`` says
    (``repeat``/``max_seconds`` are a shorthand for ``Budget(repeat, 0, max_seconds, False)``);
    on 3.11 sites that need the profile hook get their own leg of the same length.
    ``cpu_every`` fixes which calls read the CPU clock (0 none, 1 all, k a random 1 in k;
    default: decided from the warm-up run). ``probes`` forces the C or Python monitoring
    callbacks. ``callers`` maps a C site's key to the code objects that call it.
    Instrumentation is always removed, also when ``run_once`` raises."""
    if budget is None:
        budget = Budget(
            repeat if repeat is not None else 20,
            0.0,
            max_seconds if max_seconds is not None else 2.0,
            warmup=False,
        )
    log = PassLog(
        list(sites),
        [
            Record(cpu_pattern(SAMPLE_EVERY if cpu_every is None else cpu_every, i))
            for i in range(len(sites))
        ],
        [Record() for _ in sites],
        0,
        [([], []) for _ in sites],
    )
    log.cpu_every = [SAMPLE_EVERY if cpu_every is None else max(cpu_every, 1)] * len(sites)
    kinds = choose_mechanisms(sites, mechanism)
    log.hooked = [kind == "setprofile" for kind in kinds]
    log.reference = (Record(cpu_pattern(REFERENCE_EVERY, 99)), Record())
    legs = [
        [i for i, k in enumerate(kinds) if k != "setprofile"],
        [i for i, k in enumerate(kinds) if k == "setprofile"],
    ]
    check = PassCheck("timing pass")
    with check:
        for leg in legs:
            if not leg and (leg is legs[1] or legs[1]):
                continue
            probe_reference = reference and leg is legs[0]
            with _Instrumented(
                log, leg, callers or {}, kinds, probe_reference, probes, check
            ) as inst:
                runs = _measure_leg(run_once, inst, budget, cpu_every, probe_reference, switches)
            log.runs = max(log.runs, runs)
    check.verify()
    return log


def _measure_leg(
    run_once: Callable[[], object],
    inst: _Instrumented,
    budget: Budget,
    cpu_every: int | None,
    probe_reference: bool,
    switches: SwitchSource | None,
) -> int:
    """The run loop of one leg (see the module docstring); returns the runs recorded."""
    records, log = inst.records, inst.log
    if budget.warmup:
        run_once()
        if cpu_every is None:
            for i in inst.leg:
                enters, exits = records.take(i)
                log.cpu_every[i] = _sampling_rate(enters, exits)
                records.set_cpu_every(i, log.cpu_every[i])
        records.truncate(records.empty())
    started = time.perf_counter()
    runs = stretch = 0
    discarded = away = 0.0  # seconds re-measured / spent preempted (not the pass's own time)
    size = 1
    while True:
        lengths = records.lengths()
        if switches is not None:
            switches.mark()
        if probe_reference:
            _call_reference(REFERENCE_CALLS)
        t0 = time.perf_counter()
        for _ in range(size):
            run_once()
        spent = time.perf_counter() - t0
        stretch += 1
        if switches is not None:
            seen = switches.stretch()
            if seen.disturbed:
                log.disturbed_runs += size
                if not switches.subtracts and discarded + spent < budget.max_seconds / 2:
                    discarded += spent
                    records.truncate(lengths)  # measure this stretch again
                    continue
            log.preempted += seen.preempted
            away += sum(back - out for out, back in seen.preempted) / 1e9
        runs += size
        total = time.perf_counter() - started
        own = total - away  # the budget is time the thread ran, so a busy machine's
        if total > budget.max_seconds or (runs >= budget.min_runs and own >= budget.seconds):
            break  # passes get about as many samples as an idle one's (wall time stays capped)
        if spent < STRETCH_SECONDS:
            size = min(size * 2, MAX_STRETCH_RUNS)
        if own >= budget.seconds:  # only the minimum count is left to reach
            size = min(size, budget.min_runs - runs)
    if probe_reference:
        _call_reference(REFERENCE_CALLS)
    return runs


def _sampling_rate(enters: Sequence[int], exits: Sequence[int]) -> int:
    """CPU sampling for a site from its warm-up calls: every call when they are long, else a
    random 1 in SAMPLE_EVERY."""
    intervals = [exits[k] - enters[k + 1] for k in range(0, min(len(enters), len(exits)) - 1, 2)]
    if intervals and statistics.median(intervals) >= LONG_NS:
        return 1
    return SAMPLE_EVERY


class _PyRecords:
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

    def set_cpu_every(self, i: int, every: int) -> None:
        self.enters[i].pattern = cpu_pattern(every, i)

    def collect(self) -> None:
        return None


class _CRecords:
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


class _Instrumented:
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
    ) -> None:
        self.log, self.leg, self.callers, self.kinds = log, leg, callers, kinds
        self.probe_reference = probe_reference
        self.probes, self.check = probes, check
        self.restore: list[tuple[types.FunctionType, types.CodeType]] = []
        self.tool: int | None = None
        self.hooked = False
        self.records: _PyRecords | _CRecords = _PyRecords(log, log.enters, log.exits)

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
            sys.setprofile(make_profile_hook(enters, exits, c_ids, ticks, self.check))
            self.hooked = True
        else:
            for function, i in py:
                self.restore.append((function, install_probe_id(function, i)))
            self._start_monitoring(enters, exits, c_ids)
        self.records = (
            self.records if isinstance(self.records, _CRecords) else _PyRecords(log, enters, exits)
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
            self.records = _CRecords(self.log, enters, exits, probe)
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


def c_monitoring_callbacks(probe) -> dict[str, Callable[..., object]]:
    """The C probe's callbacks, by sys.monitoring event name."""
    return {
        "PY_START": probe.py_start,
        "PY_RESUME": probe.py_start,
        "PY_THROW": probe.py_throw,
        "PY_RETURN": probe.py_exit,
        "PY_YIELD": probe.py_exit,
        "PY_UNWIND": probe.py_unwind,
        "CALL": probe.call,
        "C_RETURN": probe.c_exit,
        "C_RAISE": probe.c_exit,
    }


def make_monitoring_callbacks(
    enters: list[Record],
    exits: list[Record],
    c_ids: Mapping[Hashable, int],
    check: PassCheck | None = None,
) -> dict[str, Callable[..., object]]:
    """The Python probes, by sys.monitoring event name (the fallback of the C probes). Kept
    minimal: they run inside measurements. A fault (an exit whose entry was never seen) is
    reported to ``check`` instead of raising into the measured code."""
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    lookup = c_ids.get
    failed = (check or PassCheck("timing pass")).callback_failed

    def on_start(code, offset):
        r = enters[code.co_consts[-1]]
        r.append(cpu() if r.pattern[len(r) & PATTERN_MASK] else -1)
        r.append(wall())

    def on_exit(code, offset, value):
        now = wall()
        try:
            i = code.co_consts[-1]
            x = exits[i]
            x.append(now)
            x.append(cpu() if enters[i] and enters[i][-2] >= 0 else -1)
        except Exception as error:
            failed("a timing exit probe", error)

    def on_throw(code, offset, exc):  # global event: filter on the tag
        consts = code.co_consts
        if consts and type(consts[-1]) is ProbeId:
            on_start(code, offset)

    def on_unwind(code, offset, exc):  # global event: filter on the tag
        consts = code.co_consts
        if consts and type(consts[-1]) is ProbeId:
            on_exit(code, offset, exc)

    def on_call(code, offset, func, arg0):
        try:
            i = lookup(func)
        except TypeError:  # an unhashable callable is never a target
            return
        if i is not None:
            r = enters[i]
            r.append(cpu() if r.pattern[len(r) & PATTERN_MASK] else -1)
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
            x.append(cpu() if enters[i] and enters[i][-2] >= 0 else -1)

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
    check: PassCheck | None = None,
) -> Callable[[types.FrameType, str, object], None]:
    """The sys.setprofile probe (3.11, generators and C sites). It counts its own calls so the
    cost of filtered-out events inside a measured interval can be subtracted."""
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    lookup = c_ids.get
    failed = (check or PassCheck("timing pass")).callback_failed
    own_globals = globals()
    count = 0

    def hook(frame, event, arg):
        nonlocal count
        count += 1
        try:
            if event == "call":
                consts = frame.f_code.co_consts
                if consts and type(consts[-1]) is ProbeId:
                    i = consts[-1]
                    r = enters[i]
                    ticks[i][0].append(count)
                    r.append(cpu() if r.pattern[len(r) & PATTERN_MASK] else -1)
                    r.append(wall())
            elif event == "return":
                now = wall()
                consts = frame.f_code.co_consts
                if consts and type(consts[-1]) is ProbeId:
                    i = consts[-1]
                    x = exits[i]
                    x.append(now)
                    x.append(cpu() if enters[i] and enters[i][-2] >= 0 else -1)
                    ticks[i][1].append(count)
            elif frame.f_globals is own_globals:  # the pass's own loop calling builtins
                return
            elif event == "c_call":
                try:
                    c = lookup(arg)
                except TypeError:
                    return
                if c is not None:
                    r = enters[c]
                    ticks[c][0].append(count)
                    r.append(cpu() if r.pattern[len(r) & PATTERN_MASK] else -1)
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
                    x.append(cpu() if enters[c] and enters[c][-2] >= 0 else -1)
                    ticks[c][1].append(count)
        except Exception as error:
            failed("the timing profile hook", error)

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
    :func:`~apiprof.engine.measure.activetime.active_times` evaluation per clock, with the pass's
    live inside overheads (:func:`pass_overheads`) and its preempted intervals.

    A thread's CPU time inside a call cannot exceed the call's wall time, but the CPU clock is a
    system call whose cost varies with what ran before it far more than the wall clock's (a
    short call after it runs colder than the reference function the overhead is measured on).
    So each sampled call's CPU figure is capped at its own WALL figure: single-threaded code
    reads CPU ≈ WALL, and only time off the CPU (blocking, sleeping) makes CPU lower.
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
    sampled_wall = [call.active for call in calls if call.name == SAMPLED]
    if len(sampled_wall) == len(cpu):
        cpu = [min(c, w) for c, w in zip(cpu, sampled_wall)]
    return CallCosts([call.active for call in calls], cpu)


def _one_at_a_time(enters: Sequence[int], exits: Sequence[int]) -> bool:
    """Whether a site's calls never overlap (no recursion): each exit comes before the next
    entry. Then no other probe falls inside a call (the co-stack rule keeps the group's other
    sites off its stack) and the arithmetic reduces to :func:`_sequential_costs`."""
    if len(enters) != len(exits):
        return False
    walls_in, walls_out = enters[1::2], exits[0::2]
    return all(a <= b for a, b in zip(walls_in, walls_out)) and all(
        b <= a for b, a in zip(walls_out, walls_in[1:])
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
    windows = sorted(log.preempted)
    window = 0
    wall, cpu = [], []
    for start, end, cpu_in, cpu_out in zip(enters[1::2], exits[0::2], enters[0::2], exits[1::2]):
        away = 0.0
        while window < len(windows) and windows[window][1] <= start:
            window += 1
        later = window
        while later < len(windows) and windows[later][0] < end:
            lo, hi = windows[later]
            away += max(0.0, min(end, hi) - max(start, lo))
            later += 1
        active = max(0.0, end - start - (sampled if cpu_in >= 0 else plain) - away)
        wall.append(active)
        if cpu_in >= 0 and cpu_out >= 0:
            cpu.append(min(max(0.0, cpu_out - cpu_in - cpu_inside), active))
    return CallCosts(wall, cpu)


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
