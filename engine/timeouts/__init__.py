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

:func:`limit_each_call` limits every call of a function that a profiler runs thousands of times.
Arming both timers around each call would cost four system calls per call, and every short
call would start right after a kernel entry (cold caches, a slower call than in a caller's
loop). With the ``_callguard`` extension a limited call only notes its start: the timers are
armed by the first call of a :func:`stretch` and re-armed by C signal handlers (no Python code,
nothing a profiler sees) for the deadline of the call under way. A call that hangs is
interrupted at its own deadline, to within the coarse clock's tick (a few ms) and the signal's
latency; one stuck in C ends the process once it has run ``STUCK_GRACE_SECONDS`` past its limit
in wall time — single-threaded, no later than limit + ``STUCK_GRACE_SECONDS`` of CPU time after
its start, as with a timer per call. Between deadlines the handlers run at most once per limit
of wall time, so a stretch of short calls makes no system call at all.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType

_callguard: ModuleType | None
try:
    from apiprof.engine.timeouts import _callguard
except ImportError:  # not built (no C compiler): a timer per call
    _callguard = None

STUCK_GRACE_SECONDS = 2.0


class CallTimeout(BaseException):
    """A limited call ran past its time limit."""


_stop_enabled = False


def enable_stuck_call_stop() -> None:
    """Make calls stuck in C code past their limit end this process (worker processes only)."""
    global _stop_enabled
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    _stop_enabled = True
    if _callguard is not None:
        _callguard.configure(CallTimeout, STUCK_GRACE_SECONDS)


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
    """Make SIGALRM raise :class:`CallTimeout` in a limited call that is due, for the life of
    this process (workers and tests only: :func:`limit_each_call` swaps no handlers)."""
    if _callguard is None:
        signal.signal(signal.SIGALRM, _raise_call_timeout)
        return
    if not _stop_enabled:
        _callguard.configure(CallTimeout, -1.0)
    signal.signal(signal.SIGALRM, _callguard.on_alarm)


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
    no limit. Run the calls inside :func:`stretch`, which stops the timers when they are over."""
    if not seconds or seconds <= 0:
        return fn
    if _callguard is not None:
        limited: Callable[[], object] = _callguard.Limited(fn, seconds)
        return limited

    def limited_call() -> object:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        outer = _arm_stop(seconds)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _disarm_stop(outer)

    return limited_call


@contextlib.contextmanager
def stretch() -> Iterator[None]:
    """A stretch of calls made by :func:`limit_each_call` functions: the timers their first call
    armed are stopped, and the signal dispositions restored, when it ends (however it ends)."""
    try:
        yield
    finally:
        if _callguard is not None:
            _callguard.disarm()
