"""Writing one delay trace: the samples and markers as a trace file, and a summary file.

A trace is written into a hidden ``.partial`` directory and renamed when complete, so a
reader (or the uploader) never picks up half of one.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from apiprof.tracing.hang import HangDump
from apiprof.tracing.record import process_facts
from apiprof.tracing.recording import Marker, RecordingWriter
from apiprof.tracing.summary import loaded_packages, machine_facts, utc_now, write_json

if TYPE_CHECKING:
    from apiprof.tracing.delays import DelayTracker, Mark, Tick

TRACE_FILE, SUMMARY_FILE = "trace.sqlite", "summary.json"


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
class Collection:
    """The samples and hang dumps gathered after an event's first exceedance."""

    trigger: Mark
    trigger_ns: int
    elapsed_ns: int
    until: int
    samples: list[Tick]
    hangs: list[HangDump] = field(default_factory=list)


def write_delay_trace(
    tracker: DelayTracker, collection: Collection, now: int, cut_short: bool
) -> TraceFiles:
    """Write the trace file and the summary of one finished collection into a directory of
    its own (built under a ``.partial`` name and renamed, so readers never see half a trace)."""
    trigger = collection.trigger
    event = tracker.settings.events[trigger.event]
    samples = sorted(collection.samples, key=lambda tick: tick[0])
    first_sample = samples[0][0] if samples else collection.trigger_ns
    origin = min(first_sample, trigger.start)  # markers start on or after the origin
    pre_trigger = max(0, collection.trigger_ns - first_sample)
    markers = tracker.markers_between(origin, now)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(tracker.wall()))
    trace_id = f"{stamp}-{trigger.event}-{tracker.session_id[:8]}"
    final = tracker.settings.output_dir / trace_id
    partial = tracker.settings.output_dir / f".{trace_id}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    trigger_thread = tracker.threads.number_of(trigger.ident)
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
        "session_id": tracker.session_id,
        "interval_ns": round(tracker.settings.interval_ms * 1e6),
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
    writer.finish(tracker.stacks, tracker.threads.threads, {})
    names = {t.number: t.name for t in tracker.threads.threads}
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
        "session_id": tracker.session_id,
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
            "threads": len(tracker.threads.threads),
            "pre_trigger_seconds": round(pre_trigger / 1e9, 6),
            "trace_seconds": round((now - collection.trigger_ns) / 1e9, 6),
            "configured_trace_seconds": event.trace_seconds,
            "interval_ms": tracker.settings.interval_ms,
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
