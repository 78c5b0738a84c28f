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
