"""Pausing Python's cycle collector while the extension builds short-lived data.

Summaries, views and pages are made of strings and records that form no reference cycles, yet
their allocations keep triggering the cycle collector, and each of its full passes walks the
whole Sphinx environment. Pausing it while the extension works (reading the database, making
summary nodes, writing pages) keeps those passes to the ones Sphinx itself would cause.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """``with cycle_collector_paused():`` or as a decorator; nests, and restores the state the
    collector was in (a project that disabled it keeps it disabled)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_frozen = False


def keep_out_of_collections() -> None:
    """Move every object alive now out of the cycle collector's reach until
    :func:`back_into_collections` (``gc.freeze``). Called once the database is loaded: its
    summaries and scenario breakdowns (~100,000 small records on a real project) live through the
    whole build and hold no cycles, yet every full collection Sphinx triggers would walk them
    again. Objects frozen here with them (the environment read so far) are only collected, if
    they become garbage, after the build."""
    global _frozen
    gc.freeze()
    _frozen = True


def back_into_collections() -> None:
    """``build-finished``: undo :func:`keep_out_of_collections` (nothing to do if it did not run)."""
    global _frozen
    if _frozen:
        gc.unfreeze()
        _frozen = False
