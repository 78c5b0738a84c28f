"""Trampolines: the probes of Python functions on 3.11, which has no per-code-object events.

The target function's ``__code__`` is swapped for a generated code object that reads the
clocks, appends to the target's record and calls a clone of the original function (same code,
globals, defaults, closure). The generated code has as many free variables as the original, so
the swap is allowed; its probes and records are constants of that code (no lookup per call).
All other code runs untouched, at full speed.

The trampoline takes the target's own parameters and hands them on one by one, so the call it
makes inside the measured interval is an ordinary Python-to-Python call, which 3.11 runs in the
same interpreter loop — the call a caller makes. A ``*args, **kwargs`` pass-through (the first
design) called the clone with ``CALL_FUNCTION_EX``, which 3.11 runs in a *nested* interpreter
loop: ~120 ns inside every interval (3.12's C probes: ~20), which the empty reference function
of each pass measures — but in its own tight loop, where that machinery runs faster than between
a scenario's calls. Measured with an empty target (``docs/mechanisms.rst``, "Corrections"), its
interval read 18 ns above the reference's in a scan's batches of 3 runs (7 ns in batches of 16;
3.12: −2 ns either way), so a 160 ns leaf read 1.08–1.19× its truth on 3.11 only.

A function with keyword-only or variable parameters is called through a clone whose code takes
every parameter positionally (same body: locals are addressed by position), so that call too is
a plain positional one; such a clone's code is a new code object, specialised anew by the
interpreter in its first calls, so it is kept per original code object for the next passes.
"""

from __future__ import annotations

import inspect
import types
import warnings
from collections.abc import Callable

_PLACEHOLDERS = (
    "\0apiprof:enter",
    "\0apiprof:exit",
    "\0apiprof:clone",
    "\0apiprof:wall",
    "\0apiprof:cpu",
    "\0apiprof:len",
)
_PREFIX = "_apiprof_"  # the trampoline's own names; a target's parameter never starts with it
_VARIABLE = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_TEMPLATES: dict[tuple[tuple[str, ...], str, int], types.CodeType] = {}
_FLAT_CODE: dict[types.CodeType, types.CodeType] = {}

_TEMPLATE = """
def _outer():
{cells}
    def trampoline({params}):
{keep}
        _apiprof_r = {enter!r}
        _apiprof_cpu = {cpu!r}
        _apiprof_size = {size!r}  # the target's globals may shadow len()
        _apiprof_r.append(_apiprof_cpu() if _apiprof_r.pattern[_apiprof_size(_apiprof_r) & 8191] else -1)
        _apiprof_wall = {wall!r}
        _apiprof_call = {clone!r}
        _apiprof_r.append(_apiprof_wall())
        try:
            return _apiprof_call({arguments})
        finally:
            _apiprof_t = _apiprof_wall()
            _apiprof_x = {exit!r}
            _apiprof_x.append(_apiprof_t)
            _apiprof_x.append(_apiprof_cpu() if _apiprof_r[-2] >= 0 else -1)
    return trampoline
"""


def set_code(function: types.FunctionType, code: types.CodeType) -> None:
    """Give ``function`` another code object. A generator function swapped for a plain wrapper
    (and back) makes 3.13+ warn that such swaps are deprecated; they are still allowed, last
    one pass and are always undone, so the warning would only alarm the people scanning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Assigning a code object of non-matching type")
        function.__code__ = code


def can_trampoline(function: types.FunctionType) -> bool:
    """Plain functions only: a generator's or coroutine's activations are not calls of a wrapper."""
    flags = function.__code__.co_flags
    return not flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR)


def clone_function(function: types.FunctionType) -> types.FunctionType:
    """A function running ``function``'s current code with its globals, defaults and closure —
    what a wrapper swapped into ``function.__code__`` calls."""
    clone = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    clone.__kwdefaults__ = function.__kwdefaults__
    return clone


def parameters(code: types.CodeType) -> tuple[tuple[str, ...], str, str]:
    """A code object's parameter names in the order its locals hold them, and the trampoline's
    parameter list and the argument list its call hands on (all positional when the code takes
    keyword-only or variable parameters: the call then goes to :func:`positional_code`)."""
    positional = code.co_argcount
    names = code.co_varnames[: positional + code.co_kwonlyargcount + _count_variable(code)]
    posonly, kwonly = code.co_posonlyargcount, code.co_kwonlyargcount
    params = list(names[:positional])
    if posonly:
        params.insert(posonly, "/")
    index = positional + kwonly
    star = []
    if code.co_flags & inspect.CO_VARARGS:
        star.append("*" + names[index])
        index += 1
    elif kwonly:
        star.append("*")
    params += star + list(names[positional : positional + kwonly])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append("**" + names[index])
    return names, ", ".join(params), ", ".join(names)


def _count_variable(code: types.CodeType) -> int:
    return bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)


def takes_positional_only(code: types.CodeType) -> bool:
    """Whether a call can hand ``code``'s parameters on as they are (no keyword-only or variable
    parameters)."""
    return not code.co_kwonlyargcount and not code.co_flags & _VARIABLE


def positional_code(code: types.CodeType) -> types.CodeType:
    """``code`` taking all its parameters positionally: keyword-only ones after the positional
    ones, then the ``*args`` tuple and the ``**kwargs`` dict as plain arguments (the order its
    locals already hold them in). Kept per code object, so its specialisation carries over."""
    flat = _FLAT_CODE.get(code)
    if flat is None:
        flat = code.replace(
            co_argcount=code.co_argcount + code.co_kwonlyargcount + _count_variable(code),
            co_posonlyargcount=0,
            co_kwonlyargcount=0,
            co_flags=code.co_flags & ~_VARIABLE,
        )
        _FLAT_CODE[code] = flat
    return flat


def _template(code: types.CodeType) -> tuple[types.CodeType, bool]:
    """The trampoline code for ``code``'s parameters, and whether it hands them on one by one
    (else through ``*args, **kwargs``: a parameter named like the trampoline's own locals)."""
    names, params, arguments = parameters(code)
    one_by_one = not any(name.startswith(_PREFIX) for name in names)
    if not one_by_one:
        names, params, arguments = ("args", "kwargs"), "*args, **kwargs", "*args, **kwargs"
    freevars = len(code.co_freevars)
    key = (names, params, freevars)
    template = _TEMPLATES.get(key)
    if template is None:
        cells = ", ".join(f"{_PREFIX}c{i}" for i in range(freevars)) + ","
        enter, exit_, clone, wall, cpu, size = _PLACEHOLDERS
        source = _TEMPLATE.format(
            # the free variables the swap requires, referenced in code compiled to nothing
            cells=f"    {cells} = {(None,) * freevars}" if freevars else "",
            keep=f"        if False:\n            return {cells}" if freevars else "",
            params=params,
            arguments=arguments,
            enter=enter,
            exit=exit_,
            clone=clone,
            wall=wall,
            cpu=cpu,
            size=size,
        )
        outer = compile(source, "<apiprof trampoline>", "exec").co_consts
        outer_code = next(c for c in outer if isinstance(c, types.CodeType))
        template = next(c for c in outer_code.co_consts if isinstance(c, types.CodeType))
        _TEMPLATES[key] = template
    return template, one_by_one


def install_trampoline(
    function: types.FunctionType,
    enter: list[int],
    exit_: list[int],
    wall: Callable[[], int],
    cpu: Callable[[], int],
) -> types.CodeType:
    """Swap ``function.__code__`` for a probing trampoline; returns the original code."""
    original = function.__code__
    clone = clone_function(function)
    template, one_by_one = _template(original)
    if one_by_one and not takes_positional_only(original):
        clone.__code__ = positional_code(original)
    objects = dict(zip(_PLACEHOLDERS, (enter, exit_, clone, wall, cpu, len)))
    consts = tuple(objects.get(c, c) if isinstance(c, str) else c for c in template.co_consts)
    set_code(
        function,
        template.replace(
            co_consts=consts,
            co_freevars=original.co_freevars,
            co_name=original.co_name,
            co_qualname=original.co_qualname,
        ),
    )
    return original
