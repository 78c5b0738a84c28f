"""The last resort behind per-call timeouts: a call stuck in C code ends its worker process.

Per-call timeouts raise an exception from a SIGALRM handler, and Python runs signal handlers
only between bytecodes: C code that loops for long (``sum(itertools.repeat(1, 10**13))``, a
regular expression backtracking) cannot be interrupted and would hold the worker until the
per-entry-point timeout kills it. So, in worker processes, every timed call also arms a CPU-time
timer ``STUCK_GRACE_SECONDS`` past its alarm. Its signal, SIGPROF, keeps its default action —
ending the process at once, with no Python involved — and the scanner reports the death as a
timeout (:func:`apiprof.engine.run.describe_death`), keeping what the worker had already sent.

Other processes (tests, the scanner) never arm it: :func:`enable` is called by the worker only.
"""

from __future__ import annotations

import signal

STUCK_GRACE_SECONDS = 2.0

_enabled = False


def enable() -> None:
    """Make stuck calls end this process (worker processes only)."""
    global _enabled
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    _enabled = True


def arm(seconds: float) -> float:
    """Start the stop for a call allowed ``seconds``; returns the enclosing call's remaining CPU
    budget (0 when none), for :func:`disarm` to restore."""
    if not _enabled:
        return 0.0
    outer, _ = signal.setitimer(signal.ITIMER_PROF, seconds + STUCK_GRACE_SECONDS)
    return outer


def disarm(outer: float = 0.0) -> None:
    """Stop the timer, or give the enclosing call back what was left of its budget."""
    if _enabled:
        signal.setitimer(signal.ITIMER_PROF, outer)
