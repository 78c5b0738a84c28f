"""Stand-ins that let Python 3.11 time a class call that runs no timed Python code.

``sys.setprofile`` (3.11) reports calls of builtin functions but not calls of a class. A class
whose ``__init__`` and ``__new__`` are both C (an exception class with no body, a C extension
type) has nothing to attach a probe to; a class whose metaclass answers the call in Python (an
enum looked up by value) may never run the ``__init__`` that would be timed. Inside a scenario
the call is made through a name, though: replacing that name's value with a small Python
function that calls the class gives the profiler a Python site whose interval holds the whole
construction: the class call itself, ``__new__``, ``__init__`` and the instance's allocation.
Only the scenario's own namespace is changed, after its setup has run, so the package,
``isinstance`` checks and the objects the call builds all see the real class.

What the figure adds (docs/mechanisms.rst): the stand-in passes ``*args`` and ``**kwargs`` on,
so a construction reads 40–75 ns above what 3.12+ reads for calling the class directly.
On 3.12+ class calls are seen where they are made, and no stand-in is used.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterable

from apiprof.engine.measure.probes import HAS_MONITORING, python_constructor

_STAND_INS: dict[type, types.FunctionType] = {}


def construction_stand_in(obj: object) -> types.FunctionType | None:
    """The Python function to time in place of ``obj``, a class whose construction runs no
    Python code on an interpreter without class-call events; None for anything else."""
    if HAS_MONITORING or not isinstance(obj, type):
        return None
    if python_constructor(obj) is not None and not _metaclass_call(obj):
        return None  # its own __init__ or __new__ is timed instead
    stand_in = _STAND_INS.get(obj)
    if stand_in is None:
        stand_in = _STAND_INS[obj] = _make_stand_in(obj)
    return stand_in


def construction_stand_ins(objects: Iterable[object]) -> dict[int, types.FunctionType]:
    """``id(obj)`` → its stand-in, for each of ``objects`` that needs one here."""
    return {
        id(obj): stand_in for obj in objects if (stand_in := construction_stand_in(obj)) is not None
    }


def _metaclass_call(cls: type) -> bool:
    """Whether calling ``cls`` runs a Python ``__call__`` of its metaclass, which may answer
    without ``__init__`` or ``__new__`` ever running (an enum looked up by value)."""
    return any(
        isinstance(vars(meta).get("__call__"), types.FunctionType)
        for meta in inspect.getmro(type(cls))
        if meta is not type
    )


def _make_stand_in(cls: type) -> types.FunctionType:
    def construct(*args: object, **kwargs: object) -> object:
        return cls(*args, **kwargs)

    construct.__name__ = construct.__qualname__ = cls.__name__
    construct.__module__ = cls.__module__
    return typing.cast(types.FunctionType, construct)
