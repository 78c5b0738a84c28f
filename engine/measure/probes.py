"""What a probe is attached to, and how it finds its record in O(1) (docs/mechanisms.rst, "Finding a probe's record").

A target is resolved to a *site*: a Python function whose code object the probes watch, or a
C-level callable (builtin, method descriptor, class) that is watched at its call sites.

Dense ids: when a Python site is instrumented, its function gets a copy of its code object
with one extra constant, a :class:`ProbeId` — the index of the site's record in the pass's
record arrays. A probe reads ``code.co_consts[-1]`` and indexes a list: no hashing of code
objects per call (a code object's hash is recomputed over its bytecode every time). The extra
constant is never loaded by the bytecode, so behaviour is unchanged; the original code object
is put back when the pass ends. C callables cannot carry a constant; their call-site probes map
the callable to its dense id with one identity-hashed dict lookup.

Python 3.11 has no per-code-object events: its Python sites are probed by trampolines
(:mod:`~apiprof.engine.measure.trampoline`), whose records are constants of their code.
"""

from __future__ import annotations

import random
import sys
import types
import typing
from collections.abc import Hashable
from dataclasses import dataclass

from apiprof.engine.measure.trampoline import set_code
from apiprof.errors import MeasurementError

HAS_MONITORING = sys.version_info >= (3, 12)
TOOL_NAME = "apiprof"


class ProbeId(int):
    """A dense record index stored as the last constant of an instrumented code object; its
    own type lets a global hook tell instrumented code from all other code in one check."""

    __slots__ = ()


@dataclass(frozen=True)
class PySite:
    """A Python function timed by entry/exit events of its code object."""

    function: types.FunctionType

    @property
    def key(self) -> types.CodeType:
        return self.function.__code__


@dataclass(frozen=True)
class CSite:
    """A callable without a Python code object of its own (builtin, descriptor, class),
    timed from the call sites that call it."""

    callable: Hashable

    @property
    def key(self) -> Hashable:
        return normalize_callable(self.callable)


Site = PySite | CSite


def normalize_callable(obj: object) -> Hashable:
    """Stable identity of a C-level callable as seen at call sites.

    Bound builtin methods are created afresh on every attribute access (``[].append``); they
    are folded into the method of the instance's type so all calls of one API share a key. A
    builtin bound to a module (``math.sqrt``) or to a class (``dict.fromkeys``) is stable.
    """
    if isinstance(obj, (types.BuiltinMethodType, types.MethodWrapperType)):
        owner = obj.__self__
        if owner is not None and not isinstance(owner, (types.ModuleType, type)):
            unbound = getattr(type(owner), obj.__name__, None)
            if unbound is not None:
                return unbound
    if isinstance(obj, Hashable):
        try:
            hash(obj)
            return obj
        except TypeError:
            pass
    return typing.cast(Hashable, type(obj))  # unhashable instances are keyed by their type


def resolve_site(obj: object) -> Site:
    """The site that times calls of ``obj`` (function, method, property, class, builtin...)."""
    if isinstance(obj, property):
        if obj.fget is None:
            raise MeasurementError(
                "a property without a getter has nothing to time; target its setter function"
            )
        return resolve_site(obj.fget)
    if isinstance(obj, (staticmethod, classmethod)):
        return resolve_site(obj.__func__)
    if isinstance(obj, types.MethodType):
        return resolve_site(obj.__func__)
    if isinstance(obj, types.FunctionType):
        return PySite(obj)
    if isinstance(obj, type):
        if HAS_MONITORING:
            return CSite(obj)
        return _resolve_class_without_monitoring(obj)
    if isinstance(
        obj,
        (
            types.BuiltinFunctionType,
            types.MethodDescriptorType,
            types.WrapperDescriptorType,
            types.ClassMethodDescriptorType,
            types.MethodWrapperType,
        ),
    ):
        return CSite(obj)
    call = getattr(type(obj), "__call__", None)  # noqa: B004 - the function behind a call, not callable()
    if isinstance(call, types.FunctionType):
        return PySite(call)
    if callable(obj):
        return CSite(obj)
    raise MeasurementError(
        f"{obj!r} is not callable; pass a function, method, property, class or builtin"
    )


def _resolve_class_without_monitoring(cls: type) -> Site:
    # sys.setprofile (3.11) reports no event for calling a class, only for the Python code it
    # runs: time the class's own Python __init__ or __new__. A class constructed entirely in C
    # is timed through a stand-in where a scenario calls it by name (measure/standins.py).
    constructor = python_constructor(cls)
    if constructor is not None:
        return PySite(constructor)
    raise MeasurementError(
        f"class {cls.__qualname__} has no Python __init__/__new__, and on Python 3.11 its "
        "constructor can only be timed where a scenario calls the class by a name of its own "
        "(this one reaches it another way) — profile it on Python 3.12+ (sys.monitoring sees "
        "class calls) or call it by name in a scenario file"
    )


def python_constructor(cls: type) -> types.FunctionType | None:
    """The Python ``__init__`` or ``__new__`` a class call runs first, if any."""
    for name in ("__init__", "__new__"):
        for klass in cls.__mro__:
            member = klass.__dict__.get(name)
            if isinstance(member, staticmethod):
                member = member.__func__
            if isinstance(member, types.FunctionType):
                return member
    return None


def install_probe_id(function: types.FunctionType, index: int) -> types.CodeType:
    """Give ``function`` a code object tagged with ``ProbeId(index)``; returns the original."""
    original = function.__code__
    function.__code__ = original.replace(co_consts=(*original.co_consts, ProbeId(index)))
    return original


def restore_code(function: types.FunctionType, original: types.CodeType) -> None:
    set_code(function, original)


def acquire_tool_id() -> int:
    """A free sys.monitoring tool id (the profiler slot first); the caller must free it."""
    monitoring = sys.monitoring
    for tool in (monitoring.PROFILER_ID, 5, 4, 3, 1, 0):
        if monitoring.get_tool(tool) is None:
            monitoring.use_tool_id(tool, TOOL_NAME)
            return tool
    raise MeasurementError(
        "all sys.monitoring tool ids are in use; stop other profilers/debuggers and retry"
    )


def release_tool_id(tool: int) -> None:
    monitoring = sys.monitoring
    monitoring.set_events(tool, 0)
    for event in _ALL_EVENTS():
        monitoring.register_callback(tool, event, None)
    monitoring.free_tool_id(tool)


def _ALL_EVENTS() -> list[int]:
    events = sys.monitoring.events
    names = (
        "PY_START",
        "PY_RESUME",
        "PY_RETURN",
        "PY_YIELD",
        "PY_UNWIND",
        "PY_THROW",
        "CALL",
        "C_RETURN",
        "C_RAISE",
    )
    return [getattr(events, name) for name in names]


PATTERN_SIZE = 8192
PATTERN_MASK = PATTERN_SIZE - 1


def cpu_pattern(every: int, seed: int = 0) -> bytes:
    """Which calls read the thread-CPU clock, indexed by ``len(record) & PATTERN_MASK`` at entry
    (records hold pairs, so even positions are used): none (``every`` 0), all (1), or a random
    1 in ``every`` — random, so a scenario whose calls repeat with a period (a cold first call
    per run) is not sampled in step with it."""
    if every <= 1:
        return bytes([every]) * PATTERN_SIZE
    draw = random.Random(seed).random
    pattern = bytearray(1 if draw() * every < 1 else 0 for _ in range(PATTERN_SIZE))
    pattern[0] = 1  # a site's first recorded call: a pass of few calls still gets a CPU figure
    return bytes(pattern)


class Record(list[int]):
    """One site's probe records (a list of ints), hashable by identity so a code object that
    holds it as a constant stays hashable; ``pattern`` (:func:`cpu_pattern`) selects which calls
    also read the thread-CPU clock."""

    __slots__ = ("pattern",)
    __hash__ = object.__hash__  # type: ignore[assignment]

    def __init__(self, pattern: bytes = b"") -> None:
        super().__init__()
        self.pattern = pattern or cpu_pattern(1)
