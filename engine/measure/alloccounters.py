"""Cumulative allocation counters the allocation pass reads at every call's entry and exit.

Counters (``Calibration.alloc_mechanism``):

* ``allocator hook (_alloccount)`` — the C extension wraps the RAW/MEM/OBJ allocators and adds
  every requested size to a per-thread total (realloc counts its new size; free lists count 0).
  The hook pauses the counter while it does its own bookkeeping, so probes add 0 bytes.
  On 3.11 sys.setprofile materialises a frame object per Python call before the hook runs (an
  allocation the unprofiled program never makes); the hook subtracts its size
  (``sys.getsizeof(frame)``, once per generator frame) from every later reading.
* ``tracemalloc (net)`` — fallback when the extension is not built: the change in traced
  *current* memory, i.e. bytes still alive at exit (freed temporaries are not counted and may
  make a call look negative, clamped at 0); the hook's own lists are included. Approximate.
"""

from __future__ import annotations

import tracemalloc
from typing import Protocol

try:
    from apiprof.engine.measure import _alloccount
except ImportError:  # the optional extension was not built
    _alloccount = None  # type: ignore[assignment]


class AllocCounter(Protocol):
    """A cumulative byte counter with pause/resume around the hook's own work."""

    name: str

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def pause(self) -> int: ...
    def resume(self) -> None: ...
    def paused(self) -> bool: ...


class ExtensionCounter:
    name = "allocator hook (_alloccount)"

    def start(self) -> None:
        self._owner = _alloccount.install()

    def stop(self) -> None:
        if self._owner:
            _alloccount.uninstall()

    # the C functions themselves, not wrappers: the hook calls them around every event
    if _alloccount is not None:
        pause = staticmethod(_alloccount.pause)
        resume = staticmethod(_alloccount.resume)

    def paused(self) -> bool:
        return bool(_alloccount.depth())


class TracemallocCounter(AllocCounter):
    name = "tracemalloc (net)"

    def start(self) -> None:
        self._owner = not tracemalloc.is_tracing()
        if self._owner:
            tracemalloc.start(1)

    def stop(self) -> None:
        if self._owner:
            tracemalloc.stop()

    def pause(self) -> int:
        return tracemalloc.get_traced_memory()[0]

    def resume(self) -> None:
        return None

    def paused(self) -> bool:
        return False


def choose_counter() -> AllocCounter:
    """The best available counter: the allocator hook when built, else tracemalloc."""
    return ExtensionCounter() if _alloccount is not None else TracemallocCounter()


def counter_name() -> str:
    return choose_counter().name
