"""The immediate delay tracker: a trace of the first time an event of interest is slow.

The application marks the start and end of events (a context manager, a decorator, or
``begin``/``end``; any thread). A watchdog thread compares each running event's elapsed time
with its threshold. Nothing heavy happens until an event exceeds its threshold for the first
time (per event, remembered across restarts, rate-limited overall): then the watchdog records
the stacks of all threads at a fine interval for the event's trace length, prepends its short
ring of earlier samples (what led up to the delay), and writes one trace file (samples and
markers together, in the format of ``apiprof trace``) and a summary file. A hang in C code
that holds the GIL, which stops the watchdog itself, is caught by :mod:`.hang`.

Cost while nothing is slow: ``begin`` + ``end`` are a clock read, an object and a set and a
deque operation each (see ``bench/delay_overhead.py``). The watchdog looks at stacks every
interval while an event runs (or always, with ``ring_while_idle``); while none runs it only
wakes every quarter of the smallest threshold (at most every 100 ms) to notice one.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from apiprof.tracing.delaytrace import Collection, TraceFiles, write_delay_trace
from apiprof.tracing.hang import HangDump, HangWatch
from apiprof.tracing.recording import Marker
from apiprof.tracing.sampler import Sampler, ThreadTable
from apiprof.tracing.settings import TrackerSettings, load_settings
from apiprof.tracing.stacks import StackTable
from apiprof.tracing.state import TraceState
from apiprof.tracing.upload import Uploader, UploadError, UploadResult, pending_traces

log = logging.getLogger(__name__)
P = ParamSpec("P")
Tick = tuple[int, list[tuple[int, int]]]  # (clock ns, [(thread number, stack id), ...])
R = TypeVar("R")

FINISHED_MARKERS = 16384
"""Finished markers remembered for the next trace (seconds' worth in any real program)."""
RECHECK_SECONDS = 60.0
"""After a refused trace, how long further exceedances of that event skip the state file."""


class Mark:
    """A running event; the token ``begin`` returns and ``end`` takes."""

    __slots__ = ("event", "flagged", "ident", "start", "threshold")

    def __init__(self, event: str, ident: int, start: int, threshold: int | None) -> None:
        self.event, self.ident, self.start, self.threshold = event, ident, start, threshold
        self.flagged = False  # its exceedance has been handled


class _Scope:
    """``with tracker.event("completion"):`` without a generator's overhead."""

    __slots__ = ("_event", "_mark", "_tracker")

    def __init__(self, tracker: DelayTracker, event: str) -> None:
        self._tracker, self._event = tracker, event

    def __enter__(self) -> _Scope:
        self._mark = self._tracker.begin(self._event)
        return self

    def __exit__(self, *exc: object) -> None:
        self._tracker.end(self._mark)


class DelayTracker:
    """Watches marked events and records a trace the first time one is slow.

    ``on_trace`` is called (on the watchdog thread) with each finished :class:`TraceFiles`.
    ``clock`` (ns) drives markers, samples and the watchdog; tests pass a fake one and call
    :meth:`tick` themselves instead of :meth:`start`.
    """

    def __init__(
        self,
        settings: TrackerSettings,
        *,
        session_id: str | None = None,
        on_trace: Callable[[TraceFiles], None] | None = None,
        on_upload: Callable[[Path, UploadResult | UploadError], None] | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.session_id = session_id or uuid.uuid4().hex
        self.on_trace = on_trace
        self.on_upload = on_upload
        self.clock, self.wall = clock, wall
        self.traces: list[TraceFiles] = []
        self.suppressed: Counter[str] = Counter()  # exceedances not traced, per event
        self.stacks, self.threads = StackTable(), ThreadTable()
        self.sampler = Sampler(
            self.tick,
            interval=settings.interval_ms / 1000,
            stacks=self.stacks,
            threads=self.threads,
            clock=clock,
            name="apiprof-delay-watchdog",
        )
        self.sampler.wants_sample = self._wants_sample
        # idle, the watchdog only needs to notice an event within a fraction of its threshold
        smallest = min((e.threshold_ms for e in settings.events.values()), default=100.0)
        self.sampler.idle_interval = min(0.1, max(settings.interval_ms, smallest / 4) / 1000)
        self._thresholds = {name: e.threshold_ns for name, e in settings.events.items()}
        self._running: set[Mark] = set()
        self._finished: deque[tuple[str, int, int, int, int | None]] = deque(
            maxlen=FINISHED_MARKERS
        )
        self._late: deque[Mark] = deque()
        self._ring: deque[Tick] = deque()
        self._collection: Collection | None = None
        self._state = TraceState(settings.output_dir)
        self._quiet: dict[str, float] = {}  # event → wall time before which it is not traced
        self._hang: HangWatch | None = None
        self._uploader: Uploader | None = None
        # hang dumps taken while an event ran (with the samples they fill the gap with),
        # waiting for the trigger their delay causes
        self._pending_hangs: list[tuple[HangDump, list[Tick]]] = []
        self._last_tick = clock()

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> DelayTracker:
        return cls(load_settings(path), **options)

    # -- markers: the application's side (any thread, cheap) ------------------------------
    def begin(self, event: str) -> Mark:
        """Mark the start of an event; pass the result to :meth:`end`."""
        mark = Mark(event, threading.get_ident(), self.clock(), self._thresholds.get(event))
        self._running.add(mark)
        return mark

    def end(self, mark: Mark) -> None:
        """Mark the end of the event ``begin`` returned ``mark`` for."""
        now = self.clock()
        self._running.discard(mark)
        self._finished.append((mark.event, mark.ident, mark.start, now, mark.threshold))
        if mark.threshold is not None and now - mark.start > mark.threshold and not mark.flagged:
            self._late.append(mark)  # slower than its threshold, but ended between two looks

    def event(self, name: str) -> _Scope:
        """``with tracker.event("completion"): ...``"""
        return _Scope(self, name)

    def mark(self, name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """``@tracker.mark("completion")``: every call of the function is one event."""

        def decorate(function: Callable[P, R]) -> Callable[P, R]:
            @functools.wraps(function)
            def marked(*args: P.args, **kwargs: P.kwargs) -> R:
                mark = self.begin(name)
                try:
                    return function(*args, **kwargs)
                finally:
                    self.end(mark)

            return marked

        return decorate

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> DelayTracker:
        """Start the watchdog (and the hang fallback and uploader, when configured)."""
        self.settings.output_dir.mkdir(parents=True, exist_ok=True)
        if self.settings.hang_seconds > 0:
            self._hang = HangWatch(
                self.settings.output_dir / f".hang-{self.session_id}.txt",
                self.settings.hang_seconds,
                self.stacks,
                lambda ident: self.sampler.thread_root(self.threads.number_of(ident)),
                self.clock,
            )
            self._hang.start()
        if self.settings.upload.enabled:
            self._uploader = Uploader(self.settings.upload, self.on_upload)
            if self._uploader.ident is not None:
                self.sampler.skip.add(self._uploader.ident)
            for directory in pending_traces(self.settings.output_dir):
                self._uploader.submit(directory)
        self.sampler.start()
        return self

    def close(self, upload_timeout: float = 5.0) -> None:
        """Stop watching; a trace being recorded is written with what it has."""
        self.sampler.stop()
        if self._collection is not None:
            self._finish(self.clock(), cut_short=True)
        if self._hang is not None:
            self._hang.stop()
            self._hang = None
        if self._uploader is not None:
            self._uploader.close(upload_timeout)  # the rest is sent at the next start
            self._uploader = None

    def __enter__(self) -> DelayTracker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def recording(self) -> bool:
        """Whether a triggered trace is being recorded right now."""
        return self._collection is not None

    # -- the watchdog ---------------------------------------------------------------------
    def _wants_sample(self) -> bool:
        return self._collection is not None or bool(self._running) or self.settings.ring_while_idle

    def tick(self, now: int, batch: list[tuple[int, int]] | None = None) -> None:
        """One watchdog step at clock time ``now`` with the stacks sampled then.

        The sampler thread calls this every interval; with ``batch=None`` it samples itself.
        """
        if batch is None:
            batch = self.sampler.sample() if self._wants_sample() else []
        try:
            self._tick(now, batch)
        except Exception:  # the watchdog must outlive its own bugs and full disks
            log.exception("delay tracker: watchdog step failed")

    def _tick(self, now: int, batch: list[tuple[int, int]]) -> None:
        if self._hang is not None:
            dump = self._hang.collect()
            if dump is not None:
                self._add_hang(dump, now)
                batch = list(dict.fromkeys(batch))  # the dump's samples fill the late look's gap
            self._hang.heartbeat(now)
        self._last_tick = now
        collection = self._collection
        if collection is not None:
            if batch:
                collection.samples.append((now, batch))
            self._check(now)
            if now >= collection.until:
                self._finish(now)
            return
        if batch:
            self._ring.append((now, batch))
        horizon = now - round(self.settings.ring_seconds * 1e9)
        while self._ring and self._ring[0][0] < horizon:
            self._ring.popleft()
        self._check(now)
        self._pending_hangs.clear()  # no trigger took them (the event was traced before)

    def _add_hang(self, dump: HangDump, now: int) -> None:
        """Fill the time the watchdog could not sample with the stacks of the dump."""
        log.warning(
            "delay tracker: the watchdog was blocked for over %g s (GIL held)", dump.seconds
        )
        batch = [
            (self.threads.number_of(ident), stack)
            for ident, stack in dump.stacks.items()
            if ident not in self.sampler.skip
        ]
        step = round(self.settings.interval_ms * 1e6)
        fill = [(t, batch) for t in range(self._last_tick + step, now, step)] or [
            (dump.at_ns, batch)
        ]
        if self._collection is not None:
            self._collection.hangs.append(dump)
            self._collection.samples.extend(fill)
        elif self._event_running_at(dump.at_ns):  # kept for the trace this delay triggers
            self._pending_hangs.append((dump, fill))

    def _event_running_at(self, t: int) -> bool:
        return any(m.start <= t for m in list(self._running)) or any(
            start <= t <= stop for _, _, start, stop, _ in list(self._finished)
        )

    def _check(self, now: int) -> None:
        exceeded = []
        while self._late:
            exceeded.append(self._late.popleft())
        for mark in list(self._running):
            if mark.threshold is not None and now - mark.start > mark.threshold:
                exceeded.append(mark)
        for mark in exceeded:
            if not mark.flagged:
                mark.flagged = True
                self._exceeded(mark, now)

    def _exceeded(self, mark: Mark, now: int) -> None:
        if self._collection is not None:
            return  # the trace being recorded shows this delay too
        settings = self.settings
        wall = self.wall()
        if wall < self._quiet.get(mark.event, wall):
            self.suppressed[mark.event] += 1  # refused a moment ago: spare the state file
            return
        refusal = self._state.claim(
            mark.event,
            wall,
            min_seconds_between=settings.min_minutes_between_traces * 60,
            retrace_after=settings.retrace_after_days * 86400,
        )
        if refusal is not None:
            self.suppressed[mark.event] += 1
            self._quiet[mark.event] = wall + RECHECK_SECONDS
            log.debug("delay tracker: slow %s not traced: %s", mark.event, refusal)
            return
        event = settings.events[mark.event]
        log.info("delay tracker: %s exceeded %g ms; recording", mark.event, event.threshold_ms)
        self._collection = Collection(
            trigger=mark,
            trigger_ns=now,
            elapsed_ns=now - mark.start,
            until=now + round(event.trace_seconds * 1e9),
            samples=[*self._ring, *(tick for _, fill in self._pending_hangs for tick in fill)],
            hangs=[dump for dump, _ in self._pending_hangs],
        )
        self._pending_hangs = []
        self._ring.clear()

    # -- writing a trace ------------------------------------------------------------------
    def _finish(self, now: int, *, cut_short: bool = False) -> None:
        collection, self._collection = self._collection, None
        assert collection is not None
        try:
            files = write_delay_trace(self, collection, now, cut_short)
        except (OSError, sqlite3.Error) as error:
            log.warning("delay tracker: could not write the trace: %s", error)
            return
        self.traces.append(files)
        log.info("delay tracker: trace of slow %s in %s", files.event, files.directory)
        if self.on_trace is not None:
            try:
                self.on_trace(files)
            except Exception:
                log.exception("delay tracker: on_trace callback failed")
        if self._uploader is not None:
            self._uploader.submit(files.directory)

    def markers_between(self, since: int, until: int) -> list[Marker]:
        """Markers overlapping ``[since, until]``: finished ones, then those still running."""
        number = self.threads.number_of
        markers = [
            Marker(event, number(ident), start, stop, threshold)
            for event, ident, start, stop, threshold in list(self._finished)
            if stop >= since and start <= until
        ]
        markers += [
            Marker(m.event, number(m.ident), m.start, None, m.threshold)
            for m in list(self._running)
            if m.start <= until
        ]
        return markers
