"""Sample the Python call stacks of all threads at a fixed interval, from a thread of our own.

``sys._current_frames()`` hands over every thread's innermost frame at one instant; each is
interned into a :class:`~apiprof.tracing.stacks.StackTable` and handed, with one timestamp per
tick, to a consumer (a recording file, a ring buffer). The sampler needs the GIL to look: while
a CPU-bound thread runs, it gets its turn after the interpreter's switch interval (5 ms by
default), so it lowers the switch interval to its own sampling interval while it runs and puts
it back when it stops.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from apiprof.tracing.stacks import EMPTY_STACK, StackTable

MAX_LOOKS_OWED = 10_000
"""A look after a long GIL hold stands for at most this many intervals."""

Tick = Callable[[int, list[tuple[int, int]]], None]
"""A consumer of samples: ``(clock ns, [(thread number, stack id), ...])`` once per tick."""


@dataclass(frozen=True)
class ThreadInfo:
    """A sampled thread: its dense number in the recording, OS-level ids and name."""

    number: int
    ident: int
    native_id: int | None
    name: str


class ThreadTable:
    """Dense numbers for the threads seen, each with its name (refreshed when threads change).

    Thread idents are reused once a thread ends, so an ident maps to a new number when the
    :class:`threading.Thread` behind it is a different object.
    """

    def __init__(self) -> None:
        self.threads: list[ThreadInfo] = []
        self._numbers: dict[int, tuple[threading.Thread | None, int]] = {}
        self._last_idents: frozenset[int] = frozenset()

    def numbers(self, idents: frozenset[int]) -> dict[int, int]:
        if idents != self._last_idents:
            self._refresh(idents)
        return {ident: self._numbers[ident][1] for ident in idents}

    def number_of(self, ident: int) -> int:
        """The number of a thread seen before, or of a live one seen now for the first time."""
        known = self._numbers.get(ident)
        if known is None:
            self._refresh(self._last_idents | {ident})
            known = self._numbers[ident]
        return known[1]

    def _refresh(self, idents: frozenset[int]) -> None:
        live = {t.ident: t for t in threading.enumerate()}
        for ident in idents:
            thread = live.get(ident)
            known = self._numbers.get(ident)
            if known is not None and known[0] is thread:
                continue
            number = len(self.threads)
            name = thread.name if thread is not None else f"thread {ident:#x}"
            native = thread.native_id if thread is not None else None
            self.threads.append(ThreadInfo(number, ident, native, name))
            self._numbers[ident] = (thread, number)
        self._last_idents = idents


class Sampler:
    """Calls ``on_tick`` with the stacks of every thread (but skipped ones) each ``interval`` s.

    ``interval`` may change while the sampler runs (the delay tracker samples slowly into its
    ring and fast while it records a trace). ``skip`` holds thread idents never sampled; the
    sampler's own thread is always skipped.
    """

    def __init__(
        self,
        on_tick: Tick,
        *,
        interval: float,
        stacks: StackTable | None = None,
        threads: ThreadTable | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
        name: str = "apiprof-sampler",
    ) -> None:
        self.on_tick = on_tick
        self.stacks = stacks if stacks is not None else StackTable()
        self.threads = threads if threads is not None else ThreadTable()
        self.clock = clock
        self.skip: set[int] = set()
        self._roots: dict[int, int] = {}  # thread number → its thread frame stack
        # asked before each tick: False hands on_tick an empty batch (a tick without a look),
        # and the next tick comes after `idle_interval` seconds (None: the usual interval)
        self.wants_sample: Callable[[], bool] | None = None
        self.idle_interval: float | None = None
        self._name = name
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_look: int | None = None
        self._switch_set: float | None = None  # the switch interval we set, to restore ours only
        self._switch_before = 0.0

    @property
    def interval(self) -> float:
        return self._interval

    @interval.setter
    def interval(self, seconds: float) -> None:
        self._interval = seconds
        if self._thread is not None:
            self._adjust_switch_interval()

    def sample(self) -> list[tuple[int, int]]:
        """One look at every thread: ``[(thread number, stack id), ...]``.

        Threads whose whole stack is our own machinery (an empty stack) are left out.
        """
        frames = sys._current_frames()
        for ident in self.skip:
            frames.pop(ident, None)
        numbers = self.threads.numbers(frozenset(frames))
        intern, roots = self.stacks.intern_python, self._roots
        batch = []
        for ident, frame in frames.items():
            number = numbers[ident]
            root = roots.get(number)
            stack = intern(frame, self.thread_root(number) if root is None else root)
            if stack != EMPTY_STACK:
                batch.append((number, stack))
        return batch

    def thread_root(self, number: int) -> int:
        """The thread frame stack that the stacks of thread ``number`` start with."""
        root = self._roots.get(number)
        if root is None:
            name = self.threads.threads[number].name
            root = self._roots[number] = self.stacks.thread_root(number, name)
        return root

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        self._adjust_switch_interval()

    def stop(self) -> None:
        """Stop sampling and wait for the thread; the last tick has been delivered on return."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        if thread is not threading.current_thread():
            thread.join()
        self.skip.discard(thread.ident or 0)
        self._restore_switch_interval()

    @property
    def running(self) -> bool:
        return self._thread is not None

    def looks_owed(self, now: int) -> int:
        """How many intervals the look at ``now`` stands for (1 unless it comes late).

        A CPU-bound thread holds the GIL until the interpreter switches threads, so looks come
        late exactly while threads compute; counting a late look once would let idle phases
        outweigh busy ones in every report. A late look is therefore repeated (same time,
        same stacks) once per interval it covers, so a sample always stands for one interval.
        """
        last, self._last_look = self._last_look, now
        if last is None:
            return 1
        return max(1, min(MAX_LOOKS_OWED, round((now - last) / (self._interval * 1e9))))

    def _run(self) -> None:
        self.skip.add(threading.get_ident())
        clock, stop = self.clock, self._stop
        next_tick = clock()
        self._last_look = None
        while not stop.is_set():
            now = clock()
            wanted = self.wants_sample
            looked = wanted is None or wanted()
            if looked:
                self.on_tick(now, self.sample() * self.looks_owed(now))
            else:
                self._last_look = None  # the next look starts afresh
                self.on_tick(now, [])
            pause = self._interval if looked or self.idle_interval is None else self.idle_interval
            interval_ns = int(pause * 1e9)
            next_tick += interval_ns
            if next_tick < now:  # fell behind (a long GIL hold): do not burst to catch up
                next_tick = now + interval_ns
            stop.wait(max(0.0, (next_tick - clock()) / 1e9))

    def _adjust_switch_interval(self) -> None:
        current = sys.getswitchinterval()
        if self._switch_set is None or current != self._switch_set:
            self._switch_before = current
        wanted = min(self._switch_before, self._interval)
        sys.setswitchinterval(wanted)
        self._switch_set = sys.getswitchinterval()

    def _restore_switch_interval(self) -> None:
        if self._switch_set is not None and sys.getswitchinterval() == self._switch_set:
            sys.setswitchinterval(self._switch_before)
        self._switch_set = None
