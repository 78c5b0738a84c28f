"""Draining what a call returns: iterators, coroutines and async iterators do their work only
when consumed, so a synthesised scenario consumes them inside the measured call."""

from __future__ import annotations

import asyncio
import collections
import collections.abc as abc
import io
import itertools
from typing import Any

from apiprof.engine.scenarios.resources import QueryCursor, RewoundIterator

CONSUME_LIMIT = "10 * n + 100"
"""At most this many items are drawn from an iterator a synthesised call returns (an expression
in the size ``n``): all of a linear-size result, while combinatorial ones (permutations,
powersets) stay polynomial instead of running for hours."""
UNSIZED_CONSUME_LIMIT = 1000


def rewind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Seek in-memory file arguments back to the start, run a query cursor's query again and
    start an iterator of ours over, so every call reads the same input."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, io.IOBase):
            value.seek(0)
        elif isinstance(value, QueryCursor):
            value.rerun()
        elif isinstance(value, RewoundIterator):
            value.rewind()


def is_a(value: object, kinds: type | tuple[type, ...]) -> bool:
    """``isinstance`` that survives objects lying about their class: one whose
    ``__getattribute__`` answers every name with itself (a null logger) hands the ABC check a
    ``__class__`` that is no class, and ``isinstance`` raises; its real type is asked then."""
    try:
        return isinstance(value, kinds)
    except Exception:  # any error of the object's own __class__ lookup
        return issubclass(type(value), kinds)


def consume(result: object, limit: int = UNSIZED_CONSUME_LIMIT) -> object:
    """Drain an iterator result (at most ``limit`` items) so a lazy API's real work is measured;
    run a coroutine to its end, and drain an async iterator the same way."""
    if is_a(result, abc.Iterator):
        _drain(result, limit)  # type: ignore[arg-type]
    elif is_a(result, abc.Awaitable):
        return _event_loop().run_until_complete(_awaited(result))  # type: ignore[arg-type]
    elif is_a(result, abc.AsyncIterator):
        _event_loop().run_until_complete(_drained(result, limit))  # type: ignore[arg-type]
    return result


DRAIN_CHUNK = 64
"""Items drained in C between two chances for a time limit to interrupt the drain."""
_END = object()


def _drain(iterator: abc.Iterator[object], limit: int) -> None:
    """Draw ``limit`` items (fewer if it ends) in chunks: an iterator written in C (``itertools``
    over a large input) never runs Python code, so a per-call time limit could interrupt it only
    between chunks; one drained in a single C loop ends its worker instead."""
    while limit > 0:
        step = min(DRAIN_CHUNK, limit)
        collections.deque(itertools.islice(iterator, step - 1), maxlen=0)
        if next(iterator, _END) is _END:
            return
        limit -= step


async def _awaited(result: abc.Awaitable[object]) -> object:
    return await result


async def _drained(result: abc.AsyncIterator[object], limit: int) -> None:
    for _ in range(limit):
        try:
            await anext(result)
        except StopAsyncIteration:
            return


_LOOP: list[asyncio.AbstractEventLoop] = []


def _event_loop() -> asyncio.AbstractEventLoop:
    """One event loop per worker for async APIs: a new loop per call would cost more than most
    of the calls measured."""
    if not _LOOP or _LOOP[0].is_closed():
        _LOOP[:] = [asyncio.new_event_loop()]
    return _LOOP[0]


def is_lazy(result: object) -> bool:
    """True for iterators a call returns (whose cost is paid while iterating), and for
    coroutines and async iterators (whose work starts only when awaited)."""
    if is_a(result, (abc.Awaitable, abc.AsyncIterator)):
        return True
    return is_a(result, abc.Iterator) and not is_a(result, (str, bytes, io.IOBase))


def drain_lazy(result: object, limit: int = UNSIZED_CONSUME_LIMIT) -> object:
    """:func:`consume` a lazy result (see :func:`is_lazy`), return any other as it is: for
    replayed calls, whose results may be a generator's or a file."""
    return consume(result, limit) if is_lazy(result) else result
