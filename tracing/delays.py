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
import os
import shlex
import shutil
import sqlite3
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from apiprof.tracing.hang import HangDump, HangWatch
from apiprof.tracing.record import process_facts
from apiprof.tracing.recording import Marker, RecordingWriter
from apiprof.tracing.sampler import Sampler, ThreadTable
from apiprof.tracing.settings import TrackerSettings, load_settings
from apiprof.tracing.stacks import StackTable
from apiprof.tracing.state import TraceState
from apiprof.tracing.summary import loaded_packages, machine_facts, utc_now, write_json
from apiprof.tracing.upload import Uploader, UploadError, UploadResult, pending_traces

log = logging.getLogger(__name__)
P = ParamSpec("P")
Tick = tuple[int, list[tuple[int, int]]]  # (clock ns, [(thread number, stack id), ...])
R = TypeVar("R")

FINISHED_MARKERS = 16384
"""Finished markers remembered for the next trace (seconds' worth in any real program)."""
RECHECK_SECONDS = 60.0
"""After a refused trace, how long further exceedances of that event skip the state file."""
TRACE_FILE, SUMMARY_FILE = "trace.sqlite", "summary.json"


class _Mark:
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


@dataclass(frozen=True)
class TraceFiles:
    """A finished delay trace: its directory, the trace and the summary."""

    trace_id: str
    event: str
    directory: Path
    trace: Path
    summary: Path
    window: tuple[float, float]  # seconds of the trace from the slow event's start to its end
    thread: str  # the thread the slow event ran on

    def report_command(self) -> str:
        start, end = self.window
        return (
            f"apiprof window {self.trace} --from {start:.3f} --to {end:.3f}"
            f" --thread {shlex.quote(self.thread)}"
        )


@dataclass
class _Collection:
    trigger: _Mark
    trigger_ns: int
    elapsed_ns: int
    until: int
    samples: list[Tick]
    hangs: list[HangDump] = field(default_factory=list)


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
        self._running: set[_Mark] = set()
        self._finished: deque[tuple[str, int, int, int, int | None]] = deque(
            maxlen=FINISHED_MARKERS
        )
        self._late: deque[_Mark] = deque()
        self._ring: deque[Tick] = deque()
        self._collection: _Collection | None = None
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
    def begin(self, event: str) -> _Mark:
        """Mark the start of an event; pass the result to :meth:`end`."""
        mark = _Mark(event, threading.get_ident(), self.clock(), self._thresholds.get(event))
        self._running.add(mark)
        return mark

    def end(self, mark: _Mark) -> None:
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

    def _exceeded(self, mark: _Mark, now: int) -> None:
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
        self._collection = _Collection(
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
            files = self._write(collection, now, cut_short)
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

    def _markers(self, since: int, until: int) -> list[Marker]:
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

    def _write(self, collection: _Collection, now: int, cut_short: bool) -> TraceFiles:
        trigger = collection.trigger
        event = self.settings.events[trigger.event]
        samples = sorted(collection.samples, key=lambda tick: tick[0])
        first_sample = samples[0][0] if samples else collection.trigger_ns
        origin = min(first_sample, trigger.start)  # markers start on or after the origin
        pre_trigger = max(0, collection.trigger_ns - first_sample)
        markers = self._markers(origin, now)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.wall()))
        trace_id = f"{stamp}-{trigger.event}-{self.session_id[:8]}"
        final = self.settings.output_dir / trace_id
        partial = self.settings.output_dir / f".{trace_id}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        trigger_thread = self.threads.number_of(trigger.ident)
        trigger_info = {
            "event": trigger.event,
            "at_ns": collection.trigger_ns - origin,
            "threshold_ns": trigger.threshold,
            "elapsed_ns": collection.elapsed_ns,
            "event_start_ns": trigger.start - origin,
            "thread": trigger_thread,
        }
        meta = {
            **process_facts(),
            "kind": "delay trace",
            "trace_id": trace_id,
            "session_id": self.session_id,
            "interval_ns": round(self.settings.interval_ms * 1e6),
            "trigger": trigger_info,
            "pre_trigger_ns": pre_trigger,
            "trace_ns": now - collection.trigger_ns,
            "configured_trace_ns": round(event.trace_seconds * 1e9),
            "cut_short": cut_short,
            "duration_ns": now - origin + 1,
        }
        writer = RecordingWriter(partial / TRACE_FILE, meta)
        try:
            for t, batch in samples:
                writer.add_tick(t - origin, batch)
            writer.add_markers(
                Marker(
                    m.event,
                    m.thread,
                    m.start_ns - origin,
                    None if m.end_ns is None else m.end_ns - origin,
                    m.threshold_ns,
                )
                for m in markers
            )
        except BaseException:
            writer.close()
            raise
        writer.finish(self.stacks, self.threads.threads, {})
        names = {t.number: t.name for t in self.threads.threads}
        delays = [
            {
                "event": m.event,
                "thread": names.get(m.thread, str(m.thread)),
                "start_s": round((m.start_ns - origin) / 1e9, 6),
                "duration_ms": None if m.duration_ns is None else round(m.duration_ns / 1e6, 3),
                "running_for_ms": round((now - m.start_ns) / 1e6, 3) if m.end_ns is None else None,
                "threshold_ms": m.threshold_ns / 1e6,
            }
            for m in markers
            if m.threshold_ns is not None
            and ((m.end_ns if m.end_ns is not None else now) - m.start_ns) > m.threshold_ns
        ]
        window = (
            max(0.0, (trigger.start - origin) / 1e9),
            (now - origin + 1) / 1e9,
        )
        summary = {
            "trace_id": trace_id,
            "session_id": self.session_id,
            "created_at": utc_now(),
            "trigger": {
                "event": trigger.event,
                "threshold_ms": event.threshold_ms,
                "elapsed_ms_at_trigger": round(collection.elapsed_ns / 1e6, 3),
                "thread": names.get(trigger_thread, str(trigger_thread)),
            },
            "delays": delays,
            "trace": {
                "file": TRACE_FILE,
                "samples": writer.samples,
                "threads": len(self.threads.threads),
                "pre_trigger_seconds": round(pre_trigger / 1e9, 6),
                "trace_seconds": round((now - collection.trigger_ns) / 1e9, 6),
                "configured_trace_seconds": event.trace_seconds,
                "interval_ms": self.settings.interval_ms,
                "cut_short": cut_short,
                "report": (
                    f"apiprof window {TRACE_FILE} --from {window[0]:.3f} --to {window[1]:.3f}"
                    f" --thread {shlex.quote(names.get(trigger_thread, str(trigger_thread)))}"
                ),
            },
            "hangs": [
                {
                    "gil_blocked_for_more_than_s": h.seconds,
                    "at_s": round((h.at_ns - origin) / 1e9, 6),
                    "dump": h.text,
                }
                for h in collection.hangs
            ],
            "machine": machine_facts(),
            "process": {"pid": os.getpid()},
            "packages": loaded_packages(),
        }
        write_json(partial / SUMMARY_FILE, summary)
        os.replace(partial, final)
        return TraceFiles(
            trace_id,
            trigger.event,
            final,
            final / TRACE_FILE,
            final / SUMMARY_FILE,
            window,
            names.get(trigger_thread, str(trigger_thread)),
        )
