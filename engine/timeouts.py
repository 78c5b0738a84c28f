"""Time limits on single calls: an interrupt for Python code, a stop for code stuck in C.

Two mechanisms, used together:

* **The alarm** (SIGALRM, ``ITIMER_REAL``) raises :class:`CallTimeout` in the interrupted
  thread — a ``BaseException``, so package code catching ``Exception`` cannot swallow it.
  :func:`alarm` nests: an enclosing limit is re-armed with what is left of it.
* **The stop.** Python runs signal handlers only between bytecodes: C code that loops for long
  (``sum(itertools.repeat(1, 10**13))``, a regular expression backtracking) cannot be
  interrupted and would hold a worker until the per-entry-point timeout kills it. So, in worker
  processes, every limited call also arms a CPU-time timer ``STUCK_GRACE_SECONDS`` past its
  alarm. Its signal, SIGPROF, keeps its default action — ending the process at once, with no
  Python involved — and the scanner reports the death as a timeout, keeping what the worker had
  already sent. Other processes (tests, the scanner) never arm it: only workers call
  :func:`enable_stuck_call_stop`.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

STUCK_GRACE_SECONDS = 2.0


class CallTimeout(BaseException):
    """A limited call ran past its time limit."""


_stop_enabled = False


def enable_stuck_call_stop() -> None:
    """Make calls stuck in C code past their limit end this process (worker processes only)."""
    global _stop_enabled
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    _stop_enabled = True


def _arm_stop(seconds: float) -> float:
    """Start the stop for a call allowed ``seconds``; returns the enclosing call's remaining CPU
    budget (0 when none), for :func:`_disarm_stop` to restore."""
    if not _stop_enabled:
        return 0.0
    outer, _ = signal.setitimer(signal.ITIMER_PROF, seconds + STUCK_GRACE_SECONDS)
    return outer


def _disarm_stop(outer: float = 0.0) -> None:
    """Stop the timer, or give the enclosing call back what was left of its budget."""
    if _stop_enabled:
        signal.setitimer(signal.ITIMER_PROF, outer)


def _raise_call_timeout(signum: int, frame: object) -> None:
    raise CallTimeout()


def install_alarm_handler() -> None:
    """Make SIGALRM raise :class:`CallTimeout` for the life of this process (workers only, so
    that :func:`limit_each_call` costs two timer calls and no handler swap)."""
    signal.signal(signal.SIGALRM, _raise_call_timeout)


@contextlib.contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Raise :class:`CallTimeout` in the block after ``seconds`` (main thread on POSIX only;
    elsewhere no limit). Restores the previous SIGALRM handler, and re-arms an enclosing
    ``ITIMER_REAL`` limit with what is left of it (it fires at once if it is already due)."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    previous = signal.signal(signal.SIGALRM, _raise_call_timeout)
    outer_remaining, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    outer_budget = _arm_stop(seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _disarm_stop(outer_budget)
        signal.signal(signal.SIGALRM, previous)
        if outer_remaining:
            left = outer_remaining - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-4))


def limit_each_call(fn: Callable[[], object], seconds: float) -> Callable[[], object]:
    """``fn`` wrapped so that each call raises :class:`CallTimeout` after ``seconds`` (and ends
    the process if stuck in C code). Needs :func:`install_alarm_handler`; ``seconds <= 0`` means
    no limit."""
    if not seconds or seconds <= 0:
        return fn

    def limited_call() -> object:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        outer = _arm_stop(seconds)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _disarm_stop(outer)

    return limited_call
