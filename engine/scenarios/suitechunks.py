"""The profiled runs of a ``--tests`` suite in chunks of tests planned to fit the time left.

Under the profiler a test runs many times as long as in the warm-up — the allocation pass alone
6–50× (every Python call is hooked), then one run per timing group — and which of those it is
shows only once it ran. Planned from the warm-up's time alone, one block of all the tests found
out at the cut that it did not fit. So the tests run in chunks, each profiled whole (its
allocation pass and timing passes) before the next starts: the first is small — the quickest
of the tests that reach each entry point first, as many as a share of the time left allows at
a pessimistic slow-down — and measures the real slow-down (profiled seconds per warm-up
second); each later chunk is sized by what the chunks so far measured, and a test that cannot
fit in the time left at all is skipped up front. What the chunks measured is merged per entry
point; a chunk cut off anyway keeps what its finished passes measured.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from apiprof.model.histogram import Histogram, merge_all
from apiprof.model.records import CallEdge, Measurement, Metric

GUESSED_SLOWDOWN = 60.0
"""Profiled seconds per warm-up second assumed for sizing the first chunk (the allocation pass
up to 50×, then a run per timing group): pessimistic, so the first chunk stays small."""

LEAST_SLOWDOWN = 6.0
"""The smallest slow-down the profiled runs were seen to have: before any chunk measured one, a
test is skipped as not fitting only when it would not fit even at this."""

FIRST_CHUNK_SHARE = 0.15
"""Share of the time left the first chunk may take at :data:`GUESSED_SLOWDOWN`."""

CHUNK_SHARE = 0.5
"""Share of the time left a later chunk may take at the slow-down measured so far: a chunk that
runs slower than foreseen still leaves time for the reply."""


@dataclass
class ChunkPlanner:
    """Hands out the next chunk of tests to profile, sized to fit before ``deadline``."""

    durations: Mapping[str, float]  # node id -> seconds in the warm-up
    deadline: float = 0.0  # time.monotonic() by which the profiled runs must be over; 0: none
    done: list[tuple[float, float]] = field(default_factory=list)  # (warm-up s, profiled s)
    skipped: list[str] = field(default_factory=list)  # node ids that could not fit

    def warm(self, node: str) -> float:
        """Seconds ``node`` took in the warm-up (one that did not run there: the mean)."""
        if node in self.durations:
            return self.durations[node]
        known = list(self.durations.values())
        return sum(known) / len(known) if known else 0.0

    def slowdown(self) -> float:
        """Profiled seconds per warm-up second: measured over the chunks done, else a guess."""
        if not self.done:
            return GUESSED_SLOWDOWN
        warm = sum(w for w, _ in self.done)
        profiled = sum(p for _, p in self.done)
        return max(1.0, profiled / max(warm, 1e-3))

    def next_chunk(self, pending: list[str]) -> list[str]:
        """The next chunk, taken off the front of ``pending`` (tests that cannot fit at all are
        taken off into :attr:`skipped`); empty when nothing is left that fits."""
        if not self.deadline:
            everything = list(pending)
            pending.clear()
            return everything
        left = self.deadline - time.monotonic()
        slowdown = self.slowdown()
        limit = left * (CHUNK_SHARE if self.done else FIRST_CHUNK_SHARE)
        at_least = slowdown if self.done else LEAST_SLOWDOWN
        chunk: list[str] = []
        warm = 0.0
        while pending:
            node = pending[0]
            seconds = self.warm(node)
            if (warm + seconds) * slowdown <= limit:
                chunk.append(pending.pop(0))
                warm += seconds
            elif chunk:
                break
            elif seconds * at_least <= left:  # alone over the chunk's share, but it may fit
                chunk.append(pending.pop(0))
                break
            else:
                self.skipped.append(pending.pop(0))
        return chunk

    def record(self, chunk: Sequence[str], profiled_seconds: float) -> None:
        """What profiling ``chunk`` took: the slow-down the next chunks are planned with."""
        self.done.append((sum(self.warm(node) for node in chunk), profiled_seconds))

    def skipped_seconds(self) -> float:
        return sum(self.warm(node) for node in self.skipped)


def chunk_order(
    nodes: Sequence[str], first: Iterable[str], durations: Mapping[str, float]
) -> list[str]:
    """``nodes`` with those in ``first`` (the quickest tests reaching each entry point) at the
    front, quickest first, the others after them in collection order: a suite whose time runs
    out has profiled something of every entry point it reaches before the rest."""
    leading = set(first)
    front = sorted(
        (node for node in nodes if node in leading),
        key=lambda node: durations.get(node, float("inf")),
    )
    return [*front, *(node for node in nodes if node not in leading)]


def merge_measurements(measurements: Iterable[Measurement]) -> list[Measurement]:
    """One measurement per entry point, scenario, metric and size out of the chunks' several:
    histograms of per-call figures summed; calls per run added up (the chunks together are one
    run of the tests)."""
    grouped: dict[tuple[str, str, Metric, int], list[Histogram]] = {}
    for m in measurements:
        grouped.setdefault((m.qualname, m.scenario_id, m.metric, m.size), []).append(m.histogram)
    merged = []
    for (qualname, scenario_id, metric, size), histograms in grouped.items():
        if metric == Metric.CALLS and len(histograms) > 1:
            histogram = Histogram.of([sum(h.total for h in histograms)])
        else:
            histogram = merge_all(histograms)
        merged.append(Measurement(qualname, scenario_id, metric, histogram, size))
    return merged


def merge_edges(edges: Iterable[CallEdge]) -> list[CallEdge]:
    """Call counts between entry points, added up over the chunks."""
    counts: dict[tuple[str, str], int] = {}
    for edge in edges:
        counts[edge.caller, edge.callee] = counts.get((edge.caller, edge.callee), 0) + edge.count
    return [CallEdge(caller, callee, count) for (caller, callee), count in counts.items()]
