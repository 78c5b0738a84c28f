"""The allocation pass: bytes allocated per call, call counts, call graph and co-stack relation.

Runs the scenario with a hook that sees every Python and C-level call made from Python code
(sys.monitoring PY_*/CALL/C_RETURN events on 3.12+, sys.setprofile on 3.11) and reads a
cumulative allocation counter (:mod:`.alloccounters`: the allocator hook, else tracemalloc) at
every entry and exit:

* inclusive bytes of a call = counter at exit − counter at entry;
* exclusive bytes = inclusive − the inclusive bytes of the Python functions it calls. C-level
  callees (builtins, ``bytearray(n)``, ``dict.copy``) do their caller's work, so their bytes
  stay in the caller's exclusive figure (they still get their own incl/excl records); Python
  functions called *through* a C callee (``map(f, ...)``) are subtracted from the caller;
* every (ancestor, descendant) pair on the stack goes into the co-stack relation, which the
  timing plan colours; self-recursion yields (f, f).

**The first run is not counted** where later runs called the same function: it pays the
interpreter's one-off bookkeeping for every call site that runs for the first time under the
hook — tens of bytes per call site (72 B on 3.12, 64 B on 3.13), charged to the calling
function — which a program stops paying after its first calls (in the scan's workers: one
call in 20 of a parent reading +72 B). Byte figures of a function come from the runs after
the first; a function called only in the first run (lazy initialisation) keeps that run's
figures. Call counts, the call graph and I/O count every run.

For *targets* only, the pass also reads the thread's system-call I/O counters at entry and
exit (:mod:`~apiprof.engine.measure.iocount`; Linux): bytes read and written per call,
inclusive. A reading costs a system call (≈3 µs), so a target called often is sampled: its
first ``IO_FULL_CALLS`` calls in each run, then one in ``IO_SAMPLE_EVERY`` at random (so
periodic I/O, a buffer flush every k-th call, is not aliased away).

Only the thread that runs the scenario is followed; calls made by C code (``map(f, ...)``,
``sorted(key=...)``) are seen when they run Python code, not as C calls.
"""

from __future__ import annotations

import functools
import inspect
import operator
import random
import sys
import threading
import time
import types
import typing
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterator
from dataclasses import dataclass, field

from apiprof.engine.measure.alloccounters import AllocCounter, choose_counter
from apiprof.engine.measure.framecode import code_of
from apiprof.engine.measure.invariants import PassCheck
from apiprof.engine.measure.iocount import IoCounter, open_io_counter
from apiprof.engine.measure.probes import (
    HAS_MONITORING,
    acquire_tool_id,
    normalize_callable,
    release_tool_id,
)
from apiprof.model.histogram import Histogram, IntTally

Key = Hashable  # a code object (Python function) or a normalized C-level callable

IO_FULL_CALLS = 32  # calls per target and run whose I/O is always read
IO_SAMPLE_EVERY = 16  # beyond those, the share of calls read is 1 / IO_SAMPLE_EVERY


@dataclass
class AllocResult:
    """What one allocation pass learnt about every function the scenario called."""

    runs: int = 0
    incl: dict[Key, Histogram] = field(default_factory=dict)
    excl: dict[Key, Histogram] = field(default_factory=dict)
    calls: Counter[Key] = field(default_factory=Counter)
    calls_per_run: dict[Key, list[int]] = field(default_factory=dict)  # for `targets` only
    edges: Counter[tuple[Key, Key]] = field(default_factory=Counter)  # direct caller -> callee
    target_edges: Counter[tuple[Key, Key]] = field(default_factory=Counter)  # nearest target
    costack: set[tuple[Key, Key]] = field(default_factory=set)  # (ancestor, descendant)
    callers: dict[Key, set[types.CodeType]] = field(default_factory=dict)  # code calling each
    # targets only; empty without an I/O counter
    io_read: dict[Key, Histogram] = field(default_factory=dict)
    io_write: dict[Key, Histogram] = field(default_factory=dict)
    mechanism: str = ""
    returns_iterator: set[Key] = field(default_factory=set)  # targets that returned an iterator

    def shares_stack(self, a: Key, b: Key) -> bool:
        return (a, b) in self.costack or (b, a) in self.costack

    def code_objects(self) -> list[types.CodeType]:
        """The Python code the scenario ran, most called first."""
        return [key for key, _ in self.calls.most_common() if type(key) is types.CodeType]


class _Frame:
    __slots__ = ("children", "index", "io_start", "is_c", "start", "target")

    def __init__(self, index: int, start: int, target: int, is_c: bool) -> None:
        self.index, self.start, self.children, self.target, self.is_c = (
            index,
            start,
            0,
            target,
            is_c,
        )
        self.io_start: tuple[int, int] | None = None  # (read, written) at entry, for targets


class _Recorder:
    """Turns enter/exit notifications into an :class:`AllocResult` (runs inside the paused counter).

    Every key gets a dense index the first time it is seen, and the hot path works on indices:
    hashing a code object walks its names and constants (≈0.5 µs), and a call would otherwise
    hash its key a dozen times. Code objects are found by identity first (kept alive, so an id
    is never reused during the pass), then by value, so equal keys still share one index.
    """

    def __init__(self, targets: Collection[Key], io: IoCounter | None = None) -> None:
        self.targets, self.io = frozenset(targets), io
        # private: the scenario's own random stream stays untouched
        self._coin = random.Random(0).random
        self.keys: list[Key] = []
        self.is_target: list[bool] = []
        self._by_value: dict[Key, int] = {}
        self._by_code_id: dict[int, int] = {}
        self._alive: list[types.CodeType] = []
        self.calls: list[int] = []
        self.run_calls: list[int] = []
        self.incl: list[IntTally] = []
        self.excl: list[IntTally] = []
        # the first run's bytes, kept apart: see _close
        self.first_incl: list[IntTally] = []
        self.first_excl: list[IntTally] = []
        self.io_read: dict[int, IntTally] = {}
        self.io_write: dict[int, IntTally] = {}
        self.edges: Counter[tuple[int, int]] = Counter()
        self.target_edges: Counter[tuple[int, int]] = Counter()
        self.costack: set[tuple[int, int]] = set()
        self.callers: dict[int, set[int]] = {}
        self.stack: list[_Frame] = []
        self.active: dict[int, int] = {}  # index -> frames of it on the stack
        self.runs = 0
        self.returns_iterator: set[int] = set()  # targets seen returning an iterator
        self.calls_per_run: dict[int, list[int]] = {self.index(key): [] for key in self.targets}

    # -- keys ----------------------------------------------------------------------------
    def index(self, key: Key) -> int:
        if type(key) is types.CodeType:
            found = self._by_code_id.get(id(key))
            if found is None:
                found = self._by_code_id[id(key)] = self._register(key)
                self._alive.append(key)
            return found
        found = self._by_value.get(key)
        return self._register(key) if found is None else found

    def _find(self, key: Key) -> int | None:
        """The index of a key already seen, without registering it."""
        if type(key) is types.CodeType:
            found = self._by_code_id.get(id(key))
            if found is not None:
                return found
        return self._by_value.get(key)

    def _register(self, key: Key) -> int:
        found = self._by_value.get(key)
        if found is not None:
            return found
        index = self._by_value[key] = len(self.keys)
        self.keys.append(key)
        self.is_target.append(key in self.targets)
        self.calls.append(0)
        self.run_calls.append(0)
        self.incl.append(IntTally())
        self.excl.append(IntTally())
        self.first_incl.append(IntTally())
        self.first_excl.append(IntTally())
        return index

    # -- events --------------------------------------------------------------------------
    def enter(self, key: Key, now: int, caller: types.CodeType | None) -> None:
        i = self.index(key)
        stack, costack = self.stack, self.costack
        for ancestor in self.active:
            costack.add((ancestor, i))
        if stack:
            parent = stack[-1]
            self.edges[(parent.index, i)] += 1
            enclosing = parent.index if self.is_target[parent.index] else parent.target
            if enclosing >= 0 and self.is_target[i]:
                self.target_edges[(enclosing, i)] += 1
        else:
            enclosing = -1
        if caller is not None:
            c = self.index(caller)
            callers = self.callers.get(i)
            if callers is None:
                self.callers[i] = {c}
            else:
                callers.add(c)
        frame = _Frame(i, now, enclosing, caller is not None)
        if self.io is not None and self.is_target[i] and self._sample_io(i):
            frame.io_start = self.io.read()
        stack.append(frame)
        self.active[i] = self.active.get(i, 0) + 1
        self.run_calls[i] += 1

    def _sample_io(self, i: int) -> bool:
        return self.run_calls[i] < IO_FULL_CALLS or self._coin() * IO_SAMPLE_EVERY < 1

    def exit(self, key: Key, now: int, value: object = None) -> None:
        i = self._find(key)
        if i is None:
            return  # never entered while recording
        if value is not None and self.is_target[i] and issubclass(type(value), Iterator):
            self.returns_iterator.add(i)
        stack = self.stack
        if not stack or stack[-1].index != i:
            if not self.active.get(i):
                return  # a frame that began before recording
            while stack[-1].index != i:  # close frames whose exit we never saw
                self._close(stack[-1], now)
        self._close(stack[-1], now)

    def _close(self, frame: _Frame, now: int) -> None:
        stack = self.stack
        stack.pop()
        i = frame.index
        left = self.active[i] - 1
        if left:
            self.active[i] = left
        else:
            del self.active[i]
        inclusive = now - frame.start if now > frame.start else 0
        exclusive = inclusive - frame.children if inclusive > frame.children else 0
        self.calls[i] += 1
        if self.runs:
            self.incl[i].add(inclusive)
            self.excl[i].add(exclusive)
        else:  # the first run (see "The first run is not counted" in the module docstring)
            self.first_incl[i].add(inclusive)
            self.first_excl[i].add(exclusive)
        if frame.io_start is not None and self.io and (end := self.io.read()) is not None:
            self.io_read.setdefault(i, IntTally()).add(end[0] - frame.io_start[0])
            self.io_write.setdefault(i, IntTally()).add(end[1] - frame.io_start[1])
        if stack:  # a C callee's own bytes stay with its caller; its Python callees do not
            stack[-1].children += frame.children if frame.is_c else inclusive

    def end_run(self) -> None:
        self.stack.clear()
        self.active.clear()
        for i, counts in self.calls_per_run.items():
            counts.append(self.run_calls[i])
        self.run_calls = [0] * len(self.keys)
        self.runs += 1

    # -- result --------------------------------------------------------------------------
    def result(self, mechanism: str) -> AllocResult:
        keys = self.keys
        res = AllocResult(runs=self.runs, mechanism=mechanism)
        for i, n in enumerate(self.calls):
            if n:
                later = bool(self.incl[i].cells)  # called again after the first run
                res.calls[keys[i]] = n
                res.incl[keys[i]] = (self.incl[i] if later else self.first_incl[i]).histogram()
                res.excl[keys[i]] = (self.excl[i] if later else self.first_excl[i]).histogram()
        res.calls_per_run = {keys[i]: counts for i, counts in self.calls_per_run.items()}
        res.edges = Counter({(keys[a], keys[b]): n for (a, b), n in self.edges.items()})
        res.target_edges = Counter(
            {(keys[a], keys[b]): n for (a, b), n in self.target_edges.items()}
        )
        res.costack = {(keys[a], keys[b]) for a, b in self.costack}
        res.callers = {
            keys[i]: {typing.cast(types.CodeType, keys[c]) for c in callers}
            for i, callers in self.callers.items()
        }
        res.returns_iterator = {keys[i] for i in self.returns_iterator}
        res.io_read = {keys[i]: tally.histogram() for i, tally in self.io_read.items()}
        res.io_write = {keys[i]: tally.histogram() for i, tally in self.io_write.items()}
        return res


def run_allocation_pass(
    run_once: Callable[[], object],
    targets: Collection[Key] = (),
    *,
    repeat: int = 20,
    max_seconds: float = 2.0,
    counter: AllocCounter | None = None,
) -> AllocResult:
    """Run the scenario up to ``repeat`` times (at least once, stopping after ``max_seconds``)
    under the allocation hook. Exceptions from ``run_once`` propagate after cleanup."""
    counter = counter or choose_counter()
    io = open_io_counter() if targets else None
    recorder = _Recorder(targets, io)
    check = PassCheck("allocation pass")
    hook_class = _MonitoringHook if HAS_MONITORING else _ProfileHook
    hook = hook_class(recorder, counter, check)
    counter.start()
    try:
        with check:
            deadline = time.perf_counter() + max_seconds
            for _ in range(max(1, repeat)):
                hook.drive(run_once)
                recorder.end_run()
                if counter.paused():
                    check.problem("the allocation counter was left paused after a run")
                    break
                if time.perf_counter() > deadline:
                    break
    finally:
        counter.stop()
        if io is not None:
            io.close()
    check.verify()
    return recorder.result(counter.name)


def _is_python_callable(obj: object) -> bool:
    return isinstance(obj, types.FunctionType) or (
        isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType)
    )


class _MonitoringHook:
    """sys.monitoring adapter (3.12+): global events, a callable's key per CALL/C_RETURN.

    Every callback pauses the counter first and resumes it in ``finally``: a timeout raised
    while a callback runs must not leave counting off. Errors of the recorder are reported to
    the pass's :class:`~apiprof.engine.measure.invariants.PassCheck`, never raised into the
    measured code; only a ``BaseException`` that is not an error (a call timeout) propagates.
    """

    def __init__(self, recorder: _Recorder, counter: AllocCounter, check: PassCheck) -> None:
        self.recorder, self.counter, self.check = recorder, counter, check

    def drive(self, run_once: Callable[[], object]) -> None:
        monitoring = sys.monitoring
        rec, pause, resume = self.recorder, self.counter.pause, self.counter.resume
        failed = self.check.callback_failed
        thread = threading.get_ident()
        get_ident = threading.get_ident
        own_code = _MonitoringHook.drive.__code__

        def on_start(code, offset):
            try:
                now = pause()
                if get_ident() == thread:
                    rec.enter(code, now, None)
            except Exception as error:
                failed("the allocation pass's start callback", error)
            finally:
                resume()

        def on_throw(code, offset, exc):
            try:
                now = pause()
                if get_ident() == thread:
                    rec.enter(code, now, None)
            except Exception as error:
                failed("the allocation pass's throw callback", error)
            finally:
                resume()

        def on_return(code, offset, value):
            try:
                now = pause()
                if get_ident() == thread:
                    rec.exit(code, now, value)
            except Exception as error:
                failed("the allocation pass's return callback", error)
            finally:
                resume()

        def on_exit(code, offset, value):
            try:
                now = pause()
                if get_ident() == thread:
                    rec.exit(code, now)
            except Exception as error:
                failed("the allocation pass's exit callback", error)
            finally:
                resume()

        def on_call(code, offset, func, arg0):
            try:
                now = pause()
                if code is not own_code and get_ident() == thread and not _is_python_callable(func):
                    rec.enter(normalize_callable(func), now, code)
            except Exception as error:
                failed("the allocation pass's call callback", error)
            finally:
                resume()

        def on_c_exit(code, offset, func, arg0):
            try:
                now = pause()
                if code is not own_code and get_ident() == thread and not _is_python_callable(func):
                    rec.exit(normalize_callable(func), now)
            except Exception as error:
                failed("the allocation pass's C-return callback", error)
            finally:
                resume()

        tool = acquire_tool_id()
        try:
            callbacks = monitoring_callbacks(on_start, on_throw, on_exit, on_call, on_c_exit)
            callbacks[sys.monitoring.events.PY_RETURN] = on_return
            for event, callback in callbacks.items():
                monitoring.register_callback(tool, event, callback)
            monitoring.set_events(tool, functools.reduce(operator.or_, ALLOC_EVENTS()))
            run_once()
        finally:
            release_tool_id(tool)


def ALLOC_EVENTS() -> list[int]:
    """The global sys.monitoring events the allocation pass listens to."""
    events = sys.monitoring.events
    return [
        events.PY_START,
        events.PY_RESUME,
        events.PY_THROW,
        events.PY_RETURN,
        events.PY_YIELD,
        events.PY_UNWIND,
        events.CALL,
        events.C_RETURN,
        events.C_RAISE,
    ]


def monitoring_callbacks(
    on_start: Callable[..., None],
    on_throw: Callable[..., None],
    on_exit: Callable[..., None],
    on_call: Callable[..., None],
    on_c_exit: Callable[..., None],
) -> dict[int, Callable[..., None]]:
    """Event → callback. The events pass different arguments: PY_START/PY_RESUME (code,
    offset); PY_THROW, PY_RETURN, PY_YIELD, PY_UNWIND (code, offset, value/exception); CALL,
    C_RETURN, C_RAISE (code, offset, callable, arg0)."""
    events = sys.monitoring.events
    return {
        events.PY_START: on_start,
        events.PY_RESUME: on_start,
        events.PY_THROW: on_throw,
        events.PY_RETURN: on_exit,
        events.PY_YIELD: on_exit,
        events.PY_UNWIND: on_exit,
        events.CALL: on_call,
        events.C_RETURN: on_c_exit,
        events.C_RAISE: on_c_exit,
    }


class _ProfileHook:
    """sys.setprofile adapter (3.11): call/return and c_call/c_return/c_exception events."""

    def __init__(self, recorder: _Recorder, counter: AllocCounter, check: PassCheck) -> None:
        self.recorder, self.counter, self.check = recorder, counter, check

    def drive(self, run_once: Callable[[], object]) -> None:
        rec, pause, resume = self.recorder, self.counter.pause, self.counter.resume
        failed = self.check.callback_failed
        own_code = _ProfileHook.drive.__code__
        sizeof = sys.getsizeof
        resumable = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
        materialized: set[int] = set()  # generator frames whose frame object exists already
        offset = 0  # bytes of frame objects the hook made the interpreter allocate

        def hook(frame, event, arg):
            nonlocal offset
            try:
                now = pause()
                code = code_of(frame)  # not frame.f_code: its audit event (framecode)
                if code is not own_code:
                    if event == "call":
                        # sys.setprofile materialises the callee's frame object before we run:
                        # an allocation the unprofiled program never makes
                        if not code.co_flags & resumable or id(frame) not in materialized:
                            offset += sizeof(frame)
                            if code.co_flags & resumable:
                                materialized.add(id(frame))
                        rec.enter(code, now - offset, None)
                    elif event == "return":
                        rec.exit(code, now - offset, arg)
                    elif event == "c_call":
                        rec.enter(normalize_callable(arg), now - offset, code)
                    else:
                        rec.exit(normalize_callable(arg), now - offset)
            except Exception as error:
                failed("the allocation pass's profile hook", error)
            finally:
                resume()

        sys.setprofile(hook)
        try:
            run_once()
        finally:
            sys.setprofile(None)
