"""Stand-ins that let Python 3.11 time calls its profiling hook does not report.

``sys.setprofile`` (3.11) reports calls of Python code and of builtin functions, and nothing
else. A class whose ``__init__`` and ``__new__`` are both C (an exception class with no body, a
C extension type) has nothing to attach a probe to; a class whose metaclass answers the call in
Python (an enum looked up by value) may never run the ``__init__`` that would be timed; a C
callable that is not a builtin function (an ``lru_cache`` wrapper, a ``functools.partial``)
is called without any event. Inside a scenario the call is made through a name, though:
replacing that name's value with a small Python function that makes the call gives the
profiler a Python site whose interval holds the whole call (for a class: ``__new__``,
``__init__`` and the instance's allocation too). Only the scenario's own namespace is changed,
after its setup has run, so the package, ``isinstance`` checks and the objects the call builds
all see the real object.

What the figure adds (docs/mechanisms.rst): the stand-in passes ``*args`` and ``**kwargs`` on,
so a call reads 40–90 ns above what 3.12+ reads for making it directly. On 3.12+ every call
is seen where it is made, and no stand-in is used.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterable

from apiprof.engine.measure.probes import HAS_MONITORING, CSite, python_constructor, resolve_site
from apiprof.errors import MeasurementError

_SEEN_BY_THE_HOOK = (types.BuiltinFunctionType, types.MethodDescriptorType)
"""The C callables whose calls 3.11's profiling hook reports (builtins, bound or not)."""

_STAND_INS: dict[int, tuple[object, types.FunctionType]] = {}


def stand_in_for(obj: object) -> types.FunctionType | None:
    """The Python function to time in place of ``obj`` on an interpreter without call events
    for it (a class whose call runs no timed Python code, a C callable such as an
    ``lru_cache`` wrapper or a ``partial``); None where ``obj`` is timed as it is."""
    if HAS_MONITORING or not callable(obj):
        return None
    if isinstance(obj, type):
        if python_constructor(obj) is not None and not _metaclass_call(obj):
            return None  # its own __init__ or __new__ is timed instead
    elif isinstance(obj, _SEEN_BY_THE_HOOK) or not _timed_at_call_sites(obj):
        return None
    kept = _STAND_INS.get(id(obj))
    if kept is None:
        kept = _STAND_INS[id(obj)] = (obj, _make_stand_in(obj))
    return kept[1]


def stand_ins_for(objects: Iterable[object]) -> dict[int, types.FunctionType]:
    """``id(obj)`` → its stand-in, for each of ``objects`` that needs one here."""
    return {id(obj): stand_in for obj in objects if (stand_in := stand_in_for(obj)) is not None}


def _timed_at_call_sites(obj: object) -> bool:
    try:
        return isinstance(resolve_site(obj), CSite)
    except MeasurementError:
        return False


def _metaclass_call(cls: type) -> bool:
    """Whether calling ``cls`` runs a Python ``__call__`` of its metaclass, which may answer
    without ``__init__`` or ``__new__`` ever running (an enum looked up by value)."""
    return any(
        isinstance(vars(meta).get("__call__"), types.FunctionType)
        for meta in inspect.getmro(type(cls))
        if meta is not type
    )


def _make_stand_in(target: typing.Callable[..., object]) -> types.FunctionType:
    def call(*args: object, **kwargs: object) -> object:
        return target(*args, **kwargs)

    call.__name__ = call.__qualname__ = getattr(target, "__name__", type(target).__name__)
    call.__module__ = getattr(target, "__module__", None) or type(target).__module__
    return typing.cast(types.FunctionType, call)
