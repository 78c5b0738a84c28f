"""Export a recording for the viewers people already have: speedscope and Perfetto.

* **speedscope** (https://www.speedscope.app): one *sampled* profile per thread, each sample
  weighted by the time until that thread's next sample, plus *evented* profiles holding the
  marked events (one lane per set of non-overlapping markers).
* **Chrome trace-event JSON** (Perfetto, ``chrome://tracing``): per thread, consecutive
  samples that share a frame become one complete (``X``) slice, so the samples read as a flame
  chart on a timeline; marked events are async (``b``/``e``) slices, so overlapping ones stay
  intact; a delay trace's trigger is an instant (``i``) event.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apiprof
from apiprof.errors import UsageError
from apiprof.tracing.recording import Marker, Recording
from apiprof.tracing.stacks import StackTable

FORMATS = ("speedscope", "chrome")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


@dataclass
class _ThreadSamples:
    times: list[int]
    stacks: list[int]


def _threads_samples(
    recording: Recording, start: int, end: int
) -> Iterator[tuple[int, _ThreadSamples]]:
    by_thread: dict[int, _ThreadSamples] = {}
    for t, thread, stack in recording.conn.execute(
        "SELECT t_ns, thread, stack FROM samples ORDER BY seq"
    ):
        if start <= t < end:
            entry = by_thread.setdefault(thread, _ThreadSamples([], []))
            entry.times.append(t)
            entry.stacks.append(stack)
    yield from sorted(by_thread.items())


def _weights(times: list[int], interval: int, end: int) -> list[int]:
    """Each sample stands for the time until the thread's next sample (the last: one interval)."""
    weights = [b - a for a, b in itertools.pairwise(times)]
    if times:
        weights.append(max(1, min(interval or 1, end - times[-1])))
    return weights


def _marker_lanes(markers: list[Marker], end: int) -> list[list[Marker]]:
    """Markers grouped so that those in one lane never overlap (earliest-free lane first)."""
    lanes: list[list[Marker]] = []
    lane_ends: list[int] = []
    for marker in sorted(markers, key=lambda m: (m.start_ns, -(m.end_ns or end))):
        stop = end if marker.end_ns is None else marker.end_ns
        for i, lane_end in enumerate(lane_ends):
            if lane_end <= marker.start_ns:
                lanes[i].append(marker)
                lane_ends[i] = stop
                break
        else:
            lanes.append([marker])
            lane_ends.append(stop)
    return lanes


def _window(recording: Recording, start: int | None, end: int | None) -> tuple[int, int]:
    lo = 0 if start is None else start
    hi = recording.duration_ns if end is None else end
    if hi <= lo:
        raise UsageError("the export window must end after it starts")
    return lo, hi


def _markers_in(recording: Recording, start: int, end: int) -> list[Marker]:
    return [
        m for m in recording.markers if m.start_ns < end and (m.end_ns is None or m.end_ns > start)
    ]


def to_speedscope(
    recording: Recording, start: int | None = None, end: int | None = None
) -> dict[str, Any]:
    """The recording (or the window ``[start, end)`` of it) as a speedscope file."""
    lo, hi = _window(recording, start, end)
    table = recording.stacks
    frames: list[dict[str, Any]] = [
        {"name": f.function, "file": f.file, "line": f.line} for f in table.frames
    ]
    names = {t.number: t.name for t in recording.threads}
    paths: dict[int, list[int]] = {}
    profiles: list[dict[str, Any]] = []
    for thread, samples in _threads_samples(recording, lo, hi):
        weights = _weights(samples.times, recording.interval_ns, hi)
        stacks = [
            paths[s] if s in paths else paths.setdefault(s, table.code_path(s))
            for s in samples.stacks
        ]
        profiles.append(
            {
                "type": "sampled",
                "name": f"{names.get(thread, thread)} (thread {thread})",
                "unit": "nanoseconds",
                "startValue": samples.times[0],
                "endValue": samples.times[-1] + weights[-1],
                "samples": stacks,
                "weights": weights,
            }
        )
    event_frames: dict[str, int] = {}
    for number, lane in enumerate(_marker_lanes(_markers_in(recording, lo, hi), hi), 1):
        events: list[tuple[int, int, str, int]] = []  # (at, close-before-open, type, frame)
        for marker in lane:
            label = f"{marker.event} on {names.get(marker.thread, marker.thread)}"
            frame = event_frames.get(label)
            if frame is None:
                frame = event_frames[label] = len(frames)
                frames.append({"name": label})
            opened = max(marker.start_ns, lo)
            closed = hi if marker.end_ns is None else min(marker.end_ns, hi)
            events += [(opened, 1, "O", frame), (closed, 0, "C", frame)]
        events.sort()
        profiles.append(
            {
                "type": "evented",
                "name": "marked events" + (f" ({number})" if number > 1 else ""),
                "unit": "nanoseconds",
                "startValue": lo,
                "endValue": hi,
                "events": [
                    {"type": kind, "at": at, "frame": frame} for at, _, kind, frame in events
                ],
            }
        )
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "name": recording.path.name,
        "exporter": f"apiprof {apiprof.__version__}",
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": profiles,
    }


def to_chrome_trace(
    recording: Recording, start: int | None = None, end: int | None = None
) -> dict[str, Any]:
    """The recording (or a window of it) in the Chrome trace-event JSON object format."""
    lo, hi = _window(recording, start, end)
    table = recording.stacks
    pid = int(recording.meta.get("pid") or 1)
    threads = {t.number: t for t in recording.threads}

    def tid(number: int) -> int:
        info = threads.get(number)
        return info.native_id if info is not None and info.native_id else number

    def us(ns: int) -> int:
        # whole microseconds: flooring keeps every slice inside its parent, which decimal
        # fractions re-read as binary doubles by a viewer would not guarantee
        return ns // 1000

    events: list[dict[str, Any]] = [
        {
            "ph": "M",
            "pid": pid,
            "tid": 0,
            "name": "process_name",
            "args": {"name": _process_name(recording)},
        }
    ]
    for number, info in sorted(threads.items()):
        events.append(
            {
                "ph": "M",
                "pid": pid,
                "tid": tid(number),
                "name": "thread_name",
                "args": {"name": info.name},
            }
        )
    for thread, samples in _threads_samples(recording, lo, hi):
        end_of_last = samples.times[-1] + _weights(samples.times, recording.interval_ns, hi)[-1]
        for frame_id, opened, closed in _slices(table, samples, end_of_last):
            frame = table.frames[frame_id]
            events.append(
                {
                    "ph": "X",
                    "pid": pid,
                    "tid": tid(thread),
                    "name": frame.function,
                    "cat": "sample",
                    "ts": us(opened),
                    "dur": us(closed) - us(opened),
                    "args": {"file": frame.file, "line": frame.line},
                }
            )
    for index, marker in enumerate(_markers_in(recording, lo, hi)):
        common_fields = {
            "pid": pid,
            "tid": tid(marker.thread),
            "cat": "apiprof.marker",
            "name": marker.event,
            "id": index + 1,
        }
        args: dict[str, Any] = {"slow": marker.slow}
        if marker.threshold_ns is not None:
            args["threshold_ms"] = marker.threshold_ns / 1e6
        if marker.duration_ns is not None:
            args["duration_ms"] = marker.duration_ns / 1e6
        closed = hi if marker.end_ns is None else min(marker.end_ns, hi)
        events.append(
            {**common_fields, "ph": "b", "ts": us(max(marker.start_ns, lo)), "args": args}
        )
        events.append({**common_fields, "ph": "e", "ts": us(closed)})
    trigger = recording.meta.get("trigger")
    if isinstance(trigger, dict) and lo <= int(trigger.get("at_ns", -1)) < hi:
        events.append(
            {
                "ph": "i",
                "s": "g",
                "pid": pid,
                "tid": 0,
                "name": f"slow {trigger.get('event')}: trace triggered",
                "ts": us(int(trigger["at_ns"])),
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"exporter": f"apiprof {apiprof.__version__}", "trace": recording.path.name},
    }


def _slices(table: StackTable, samples: _ThreadSamples, end: int) -> Iterator[tuple[int, int, int]]:
    """``(frame id, opened, closed)`` for each run of consecutive samples sharing a frame.

    A frame stays open while it is on the stack at the same depth below the same callers.
    """
    open_frames: list[tuple[int, int]] = []  # (frame id, opened at), outermost first

    def close(depth: int, at: int) -> Iterator[tuple[int, int, int]]:
        while len(open_frames) > depth:
            frame_id, opened = open_frames.pop()
            yield frame_id, opened, at

    for t, stack in zip(samples.times, samples.stacks, strict=True):
        path = table.code_path(stack)
        common = 0
        limit = min(len(open_frames), len(path))
        while common < limit and open_frames[common][0] == path[common]:
            common += 1
        yield from close(common, t)
        open_frames.extend((frame_id, t) for frame_id in path[common:])
    yield from close(0, end)


def _process_name(recording: Recording) -> str:
    command = recording.meta.get("command")
    if isinstance(command, list) and command:
        return " ".join(str(part) for part in command)
    return f"python {recording.meta.get('python', '')}".strip()


def export(
    trace: str | Path,
    fmt: str,
    output: str | Path,
    *,
    start: int | None = None,
    end: int | None = None,
) -> Path:
    """Write ``trace`` (or a window of it) as ``fmt`` (``speedscope`` or ``chrome``) to ``output``."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    with Recording(trace) as recording:
        data = (to_speedscope if fmt == "speedscope" else to_chrome_trace)(recording, start, end)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", encoding="utf-8") as stream:
        json.dump(data, stream, separators=(",", ":"))
    return output
