"""Window reports: where the time went between two moments of a recording.

Answered from the recording's time tree (:mod:`.timetree`), so a report over any window of a
long recording reads a few dozen nodes, not every sample. Each report lists the top stacks and
the top functions — *inclusive* (samples with the function anywhere on the stack) and
*exclusive* (samples where it was the innermost frame, i.e. running its own code or a C call) —
and states how exact its counts are.
"""

from __future__ import annotations

import heapq
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apiprof.errors import UsageError
from apiprof.format import format_ns
from apiprof.tracing.counts import IntArray, top_positions
from apiprof.tracing.recording import Marker, Recording
from apiprof.tracing.stacks import Frame, StackTable
from apiprof.tracing.timetree import DEFAULT_SHAPE, TreeShape, WindowCounts, query

DEFAULT_TOP = 10

_TIME = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|min)?\s*$")
_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    None: 1_000_000_000,
    "min": 60_000_000_000,
}


def parse_time(text: str) -> int:
    """``"1.5"`` (seconds), ``"250ms"``, ``"2s"``, ``"40us"`` → nanoseconds from the start."""
    match = _TIME.match(text)
    if not match:
        raise UsageError(
            f"cannot read the time {text!r}: give seconds from the start of the trace (1.5) or a"
            " number with a unit (250ms, 2s, 40us)"
        )
    return round(float(match.group(1)) * _UNIT_NS[match.group(2)])


@dataclass(frozen=True)
class StackRow:
    samples: int
    thread: str | None  # the sampled thread, None for a stack without a thread frame
    frames: tuple[Frame, ...]  # the code, outermost call first


@dataclass(frozen=True)
class FunctionRow:
    frame: Frame
    inclusive: int  # samples with the function anywhere on the stack (once per sample)
    exclusive: int  # samples with the function as the innermost frame


@dataclass(frozen=True)
class WindowReport:
    """Top stacks and functions of one window, with the accuracy of their counts."""

    trace: str
    start_ns: int
    end_ns: int
    recording_ns: int
    interval_ns: int
    shape: TreeShape
    samples: int
    unattributed: int
    nodes: dict[str, int]
    stacks: tuple[StackRow, ...]
    by_inclusive: tuple[FunctionRow, ...]
    by_exclusive: tuple[FunctionRow, ...]
    markers: tuple[Marker, ...]
    thread_names: dict[int, str]
    by_thread: tuple[tuple[str, int], ...] = ()  # (thread name, samples), most first
    threads: tuple[str, ...] = ()  # the threads the report is limited to; () = all
    trigger: dict[str, Any] | None = None  # a delay trace's trigger (from its metadata)

    @property
    def exact(self) -> bool:
        return self.unattributed == 0

    def accuracy(self) -> str:
        """One sentence on how far the counts can be off."""
        merged, enumerated = self.nodes.get("merged", 0), self.nodes.get("enumerated", 0)
        how = (
            f"tree {self.shape.describe()}: {merged} node{'s' * (merged != 1)} merged whole,"
            f" {enumerated} lea{'ves' if enumerated != 1 else 'f'} enumerated"
        )
        if self.exact:
            return f"Exact: every sample in the window is counted; {how}."
        share = 100 * self.unattributed / self.samples if self.samples else 0.0
        return (
            f"Approximate: {self.unattributed:,} of {self.samples:,} samples ({share:.1f}%) lie in"
            f" stacks too rare for the tree to keep (P={self.shape.keep_percent:g}%); every count"
            f" below may be low by up to {self.unattributed:,} (a tree with P=100 is exact); {how}."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "window": {
                "from_ns": self.start_ns,
                "to_ns": self.end_ns,
                "from_s": self.start_ns / 1e9,
                "to_s": self.end_ns / 1e9,
            },
            "recording_ns": self.recording_ns,
            "interval_ns": self.interval_ns,
            "tree": {
                "leaf_size": self.shape.leaf_size,
                "fanout": self.shape.fanout,
                "keep_percent": self.shape.keep_percent,
            },
            "samples": self.samples,
            "exact": self.exact,
            "unattributed": self.unattributed,
            "accuracy": self.accuracy(),
            "nodes": self.nodes,
            "threads": list(self.threads),
            "by_thread": [{"thread": name, "samples": count} for name, count in self.by_thread],
            "stacks": [
                {
                    "samples": row.samples,
                    "thread": row.thread,
                    "frames": [_frame_json(f) for f in row.frames],
                }
                for row in self.stacks
            ],
            "functions_by_inclusive": [_function_json(row) for row in self.by_inclusive],
            "functions_by_exclusive": [_function_json(row) for row in self.by_exclusive],
            "trigger": self.trigger,
            "markers": [
                {
                    "event": m.event,
                    "thread": self.thread_names.get(m.thread, str(m.thread)),
                    "start_ns": m.start_ns,
                    "end_ns": m.end_ns,
                    "duration_ns": m.duration_ns,
                    "threshold_ns": m.threshold_ns,
                    "slow": m.slow,
                }
                for m in self.markers
            ],
        }

    def render(self) -> str:
        """The report as text for a terminal."""
        lines = [
            f"{self.trace}: window {self.start_ns / 1e9:.3f}–{self.end_ns / 1e9:.3f} s of"
            f" {self.recording_ns / 1e9:.3f} s, {self.samples:,} samples"
            + (
                f" (≈ {format_ns(self.samples * self.interval_ns)} of thread time at"
                f" {format_ns(self.interval_ns)} per sample)"
                if self.interval_ns
                else ""
            ),
            self.accuracy(),
        ]
        if self.threads:
            lines.append(f"Threads: {', '.join(self.threads)} only.")
        if self.trigger:
            lines.append(self._trigger_text(self.trigger))
        if not self.samples:
            lines.append("No samples in this window.")
            return "\n".join(lines) + "\n"
        lines += ["", "Where the time went (exclusive: the function's own code and its C calls)"]
        lines += self._function_table(self.by_exclusive)
        lines += ["", "Top functions by inclusive samples (the function or anything it called)"]
        lines += self._function_table(self.by_inclusive)
        lines += ["", "Top stacks (innermost call last)"]
        for row in self.stacks:
            where = f"[{row.thread}] " if row.thread else ""
            lines.append(
                f"  {row.samples:>9,}  {self._share(row.samples)}  {where}{_stack_text(row.frames)}"
            )
        if len(self.by_thread) > 1:
            lines += ["", "Samples per thread (--thread NAME limits the report to one)"]
            for name, count in self.by_thread:
                lines.append(f"  {count:>9,}  {self._share(count)}  {name}")
        if self.markers:
            lines += ["", "Marked events in the window"]
            for m in self.markers:
                took = "still running" if m.duration_ns is None else format_ns(m.duration_ns)
                limit = (
                    "" if m.threshold_ns is None else f" (threshold {format_ns(m.threshold_ns)})"
                )
                slow = "  SLOW" if m.slow or m.duration_ns is None else ""
                lines.append(
                    f"  {m.start_ns / 1e9:>9.3f} s  {m.event}: {took}{limit}"
                    f" on {self.thread_names.get(m.thread, m.thread)}{slow}"
                )
        return "\n".join(lines) + "\n"

    def _trigger_text(self, trigger: dict[str, Any]) -> str:
        started, at = trigger.get("event_start_ns", 0) / 1e9, trigger.get("at_ns", 0) / 1e9
        threshold = trigger.get("threshold_ns")
        limit = f" its threshold of {format_ns(threshold)}" if threshold else " its threshold"
        return (
            f"Delay trace: {trigger.get('event')} (started at {started:.3f} s) passed{limit}"
            f" at {at:.3f} s; samples before that come from the pre-trigger ring."
        )

    def _share(self, count: int) -> str:
        return f"{100 * count / self.samples:5.1f}%" if self.samples else "    —"

    def _function_table(self, rows: Sequence[FunctionRow]) -> list[str]:
        out = [f"  {'exclusive':>9}  {'%':>6}  {'inclusive':>9}  {'%':>6}  function"]
        for row in rows:
            out.append(
                f"  {row.exclusive:>9,}  {self._share(row.exclusive)}"
                f"  {row.inclusive:>9,}  {self._share(row.inclusive)}  {frame_text(row.frame)}"
            )
        return out


_LIBRARY = re.compile(r"[/\\]lib[/\\]python3\.\d+t?[/\\](?:(?:site|dist)-packages[/\\])?")


def short_file(path: str) -> str:
    """Library paths from the module down, paths below the working directory relative.

    ``/usr/lib/python3.12/threading.py`` → ``threading.py``;
    ``…/site-packages/jedi/api/__init__.py`` → ``jedi/api/__init__.py``.
    """
    library = _LIBRARY.search(path)
    if library:
        return path[library.end() :]
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative


def frame_text(frame: Frame) -> str:
    if frame.file.startswith("<"):
        return f"{frame.function} {frame.file}"
    return f"{frame.function} ({short_file(frame.file)}:{frame.line})"


def _stack_text(frames: tuple[Frame, ...], keep: int = 6) -> str:
    names = [frame_text(f) for f in frames[-keep:]]
    return ("… → " if len(frames) > keep else "") + " → ".join(names)


def _frame_json(frame: Frame) -> dict[str, Any]:
    return {"function": frame.function, "file": frame.file, "line": frame.line}


def _function_json(row: FunctionRow) -> dict[str, Any]:
    return {**_frame_json(row.frame), "inclusive": row.inclusive, "exclusive": row.exclusive}


def top_items(counts: dict[int, int], top: int) -> list[tuple[int, int]]:
    """The ``top`` largest counts, ties to the smaller id. Finds the cut among the bare counts
    first (compared in C), so only the few items at or above it are sorted."""
    if len(counts) <= top:
        chosen = list(counts.items())
    else:
        cut = heapq.nlargest(top, counts.values())[-1]
        chosen = [item for item in counts.items() if item[1] >= cut]
    chosen.sort(key=lambda item: (-item[1], item[0]))
    return chosen[:top]


@dataclass(frozen=True)
class Summary:
    stacks: tuple[StackRow, ...]
    by_inclusive: tuple[FunctionRow, ...]
    by_exclusive: tuple[FunctionRow, ...]
    by_thread: tuple[tuple[str, int], ...]


FunctionTriple = tuple[int, int, int]  # (frame id, inclusive samples, exclusive samples)


def summarize(counts: dict[int, int], stacks: StackTable, top: int = DEFAULT_TOP) -> Summary:
    """Top stacks, top functions (by inclusive and by exclusive samples) and samples per thread
    of window counts, rolled up from their stacks."""
    inclusive, exclusive = stacks.function_totals(counts)
    threads = {f: inclusive.pop(f) for f in stacks.thread_frames() if f in inclusive}

    def function_rows(by: dict[int, int]) -> list[FunctionTriple]:
        return [(f, inclusive.get(f, 0), exclusive.get(f, 0)) for f, _ in top_items(by, top)]

    return _summary(
        top_items(counts, top),
        function_rows(inclusive),
        function_rows(exclusive),
        [(f, n) for f, n in top_items(threads, top) if n],
        stacks,
    )


def summarize_window(counts: WindowCounts, stacks: StackTable, top: int = DEFAULT_TOP) -> Summary:
    """The same summary of a tree query's answer, from the function totals the tree added up
    (when the query had the stack table): the top rows are picked from its arrays, so only
    they become Python objects."""
    if counts.functions is None:
        return summarize(counts.stacks, stacks, top)
    import numpy as np

    ids, numbers = counts.counts
    ranked = top_positions(ids, numbers, top)
    frames, inclusive, exclusive = counts.functions
    is_thread = np.zeros(len(stacks.frames), dtype=bool)
    is_thread[stacks.thread_frames()] = True
    threads = is_thread[frames]
    code = np.where(threads, 0, inclusive)  # a thread frame is no function of the program

    def function_rows(by: IntArray) -> list[FunctionTriple]:
        return _rows(top_positions(frames, by, top), frames, code, exclusive)

    by_thread = top_positions(frames, np.where(threads, inclusive, 0), top)
    return _summary(
        _rows(ranked, ids, numbers),
        function_rows(code),
        function_rows(exclusive),
        _rows(by_thread, frames, inclusive),
        stacks,
    )


def _rows(chosen: IntArray, *columns: IntArray) -> list[Any]:
    """The tuples of the ``chosen`` positions of parallel arrays, as Python ints."""
    return list(zip(*(column[chosen].tolist() for column in columns), strict=True))


def _summary(
    ranked: list[tuple[int, int]],
    by_inclusive: list[FunctionTriple],
    by_exclusive: list[FunctionTriple],
    by_thread: list[tuple[int, int]],
    stacks: StackTable,
) -> Summary:
    """The summary's rows from the chosen ids: stacks and frames resolved for these only."""
    frames = stacks.frames

    def stack_row(stack: int, count: int) -> StackRow:
        path = stacks.resolve(stack)
        if path and path[0].is_thread:
            return StackRow(count, path[0].function, path[1:])
        return StackRow(count, None, path)

    return Summary(
        stacks=tuple(stack_row(stack, count) for stack, count in ranked),
        by_inclusive=tuple(FunctionRow(frames[f], i, e) for f, i, e in by_inclusive),
        by_exclusive=tuple(FunctionRow(frames[f], i, e) for f, i, e in by_exclusive),
        by_thread=tuple((frames[f].function, n) for f, n in by_thread),
    )


def select_threads(
    counts: dict[int, int], stacks: StackTable, wanted: Sequence[str]
) -> tuple[dict[int, int], tuple[str, ...]]:
    """The counts of the stacks of the threads named (or numbered) in ``wanted``."""
    threads = {i: f for i, f in enumerate(stacks.frames) if f.is_thread}
    chosen = {
        i for i, frame in threads.items() if frame.function in wanted or str(frame.line) in wanted
    }
    if not chosen:
        known = ", ".join(sorted({f.function for f in threads.values()})) or "none"
        raise UsageError(f"no thread {', '.join(wanted)} in this trace (its threads: {known})")
    roots, table = stacks.roots(), stacks.stacks
    selected = {stack: count for stack, count in counts.items() if table[roots[stack]][1] in chosen}
    return selected, tuple(sorted({threads[i].function for i in chosen}))


def window_report(
    trace: str | Path | Recording,
    start_ns: int | None = None,
    end_ns: int | None = None,
    *,
    shape: TreeShape = DEFAULT_SHAPE,
    top: int = DEFAULT_TOP,
    threads: Sequence[str] = (),
) -> WindowReport:
    """The report for ``[start_ns, end_ns)`` (default: the whole recording), of all threads or
    of the threads named (or numbered) in ``threads``."""
    if isinstance(trace, Recording):
        return _report(trace, start_ns, end_ns, shape, top, threads)
    with Recording(trace) as recording:
        return _report(recording, start_ns, end_ns, shape, top, threads)


def _report(
    recording: Recording,
    start_ns: int | None,
    end_ns: int | None,
    shape: TreeShape,
    top: int,
    threads: Sequence[str],
) -> WindowReport:
    if top < 1:
        raise UsageError(f"--top must be at least 1, got {top}")
    duration = recording.duration_ns
    start = 0 if start_ns is None else start_ns
    end = duration if end_ns is None else end_ns
    if end <= start:
        raise UsageError(
            f"the window must end after it starts (from {start / 1e9:g} s to {end / 1e9:g} s);"
            f" this trace spans 0–{duration / 1e9:.3f} s"
        )
    counts = query(recording.tree(shape), start, end, recording.stacks)
    samples = counts.samples
    chosen: tuple[str, ...] = ()
    if threads:  # the tree's function totals are of all threads: sum the chosen ones' stacks
        stacks, chosen = select_threads(counts.stacks, recording.stacks, threads)
        summary = summarize(stacks, recording.stacks, top)
        samples = sum(stacks.values())
    else:
        summary = summarize_window(counts, recording.stacks, top)
    names = {t.number: t.name for t in recording.threads}
    markers = tuple(
        m
        for m in recording.markers
        if m.start_ns < end
        and (m.end_ns is None or m.end_ns > start)
        and (not chosen or names.get(m.thread) in chosen)
    )
    return WindowReport(
        trace=str(recording.path),
        start_ns=start,
        end_ns=end,
        recording_ns=duration,
        interval_ns=recording.interval_ns,
        shape=shape,
        samples=samples,
        unattributed=counts.unattributed,
        nodes=dict(Counter(visit.action for visit in counts.visits)),
        stacks=summary.stacks,
        by_inclusive=summary.by_inclusive,
        by_exclusive=summary.by_exclusive,
        markers=markers,
        thread_names=names,
        by_thread=summary.by_thread,
        threads=chosen,
        trigger=trigger if isinstance(trigger := recording.meta.get("trigger"), dict) else None,
    )
