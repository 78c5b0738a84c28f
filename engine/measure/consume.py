"""What an API that returns an iterator costs once its result is consumed.

Calling ``more_itertools.unique(xs)`` or ``sliced(seq, 3)`` costs almost nothing: the work
happens when the caller iterates. The allocation pass notes targets that return an iterator
(or are generator functions); for those, a *consumption pass* runs the scenario with the
target's ``__code__`` swapped for a wrapper that calls the original, then exhausts what it
returned, and records per call the wall time and the bytes allocated from the call's start to
the iterator's end (metrics ``consume_wall_ns`` and ``consume_alloc_bytes``). The scenario gets
an exhausted iterator back; only the outermost call of the target is consumed (a generator that
recurses into itself is consumed once, by its caller's loop).

The figures include the wrapper's own call (a few hundred ns) — small next to consuming
anything — and are left out for iterators longer than :data:`CONSUME_LIMIT` items (an
infinite iterator has no consumption cost to report). A scenario that fails once its iterator
is exhausted (it wanted the items) yields no consumption figures; the rest of the profile
stands.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field

from apiprof.engine.measure.alloccounters import choose_counter
from apiprof.engine.measure.probes import restore_code
from apiprof.engine.measure.trampoline import clone_function, set_code

try:
    from apiprof.engine.measure import _alloccount
except ImportError:  # the optional extension was not built
    _alloccount = None  # type: ignore[assignment]

CONSUME_LIMIT = 100_000
"""Iterators longer than this are not consumed to the end; their calls get no figures."""


@dataclass
class Consumed:
    """Per-call costs of calling a target and exhausting its iterator."""

    wall_ns: list[int] = field(default_factory=list)
    alloc_bytes: list[int] = field(default_factory=list)  # empty without the allocator hook
    capped: int = 0  # calls whose iterator went past CONSUME_LIMIT (left out)


def _exhaust(result: object, limit: int) -> bool:
    """Iterate ``result`` to its end; False when it went past ``limit`` items."""
    count = 0  # a plain loop: it allocates nothing of its own, unlike all()/enumerate()
    for _ in result:  # type: ignore[attr-defined]
        count += 1  # noqa: SIM113
        if count > limit:
            return False
    return True


def _wrapper(
    function: types.FunctionType, clone: types.FunctionType, out: Consumed, counting: bool
) -> Callable[..., object]:
    wall = time.perf_counter_ns
    allocated = _alloccount.allocated if counting else (lambda: 0)
    depth = [0]

    def consuming(*args, **kwargs):
        if depth[0]:
            return clone(*args, **kwargs)
        depth[0] += 1
        try:
            a0, t0 = allocated(), wall()
            result = clone(*args, **kwargs)
            if not hasattr(result, "__next__"):
                return result
            whole = _exhaust(result, CONSUME_LIMIT)
            t1, a1 = wall(), allocated()
        finally:
            depth[0] -= 1
        if whole:
            out.wall_ns.append(t1 - t0)
            if counting:
                out.alloc_bytes.append(a1 - a0)
        else:
            out.capped += 1
        return iter(())

    return consuming


def run_consume_pass(
    run_once: Callable[[], object],
    function: types.FunctionType,
    *,
    min_runs: int = 20,
    seconds: float = 0.0,
    max_seconds: float = 2.0,
) -> Consumed:
    """Run the scenario with ``function``'s calls consumed (see the module docstring): at least
    ``min_runs`` runs and ``seconds`` of them, never past ``max_seconds``, after one unrecorded
    warm-up run. Exceptions from ``run_once`` propagate; the function is always restored."""
    out = Consumed()
    counter = choose_counter() if _alloccount is not None else None
    original = function.__code__
    wrapper = _wrapper(function, clone_function(function), out, counter is not None)
    if counter is not None:
        counter.start()
    try:
        _swap_in(function, wrapper)
        run_once()  # warm-up
        out.wall_ns.clear()
        out.alloc_bytes.clear()
        out.capped = 0
        started = time.perf_counter()
        runs = 0
        while True:
            run_once()
            runs += 1
            spent = time.perf_counter() - started
            if spent > max_seconds or (runs >= min_runs and spent >= seconds):
                break
    finally:
        restore_code(function, original)
        if counter is not None:
            counter.stop()
    return out


def _swap_in(function: types.FunctionType, wrapper: Callable[..., object]) -> None:
    """Make calls of ``function`` run ``wrapper`` (same free variables: the swap is allowed)."""
    code = _delegating_code(len(function.__code__.co_freevars))
    set_code(
        function,
        code.replace(
            co_consts=tuple(wrapper if c == _PLACEHOLDER else c for c in code.co_consts),
            co_freevars=function.__code__.co_freevars,
            co_name=function.__code__.co_name,
            co_qualname=function.__code__.co_qualname,
        ),
    )


_PLACEHOLDER = "\0apiprof:consume"
_CODES: dict[int, types.CodeType] = {}


def _delegating_code(freevars: int) -> types.CodeType:
    """A code object ``(*args, **kwargs) -> wrapper(*args, **kwargs)`` with ``freevars`` free
    variables (a function's ``__code__`` may only be swapped for one with as many)."""
    code = _CODES.get(freevars)
    if code is None:
        cells = ", ".join(f"_c{i}" for i in range(freevars)) + ("," if freevars == 1 else "")
        source = (
            "def _outer():\n"
            f"    {cells or '_unused'} = None\n"
            "    def delegate(*args, **kwargs):\n"
            "        if kwargs is None:  # never true: keeps the free variables\n"
            f"            return {cells or 'None'}\n"
            f"        wrapper = {_PLACEHOLDER!r}\n"
            "        return wrapper(*args, **kwargs)\n"
            "    return delegate\n"
        )
        outer = next(
            c
            for c in compile(source, "<apiprof consume>", "exec").co_consts
            if isinstance(c, types.CodeType)
        )
        code = next(c for c in outer.co_consts if isinstance(c, types.CodeType))
        _CODES[freevars] = code
    return code
