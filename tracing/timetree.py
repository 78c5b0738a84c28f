"""The time tree: counts per stack for any time window without re-reading every sample.

The root spans the whole recording. A node with fewer than M samples is a leaf and keeps its
raw samples (an index range into the time-ordered samples). A node with at least M samples
keeps the counts of its top stacks — the most frequent ones, until they cover at least P % of
its samples — and is split into N children of equal duration. A window report skips nodes
outside the window, takes the kept counts of nodes inside it, descends into partly covered
inner nodes and enumerates the samples of partly covered leaves, so it touches O(N · depth)
nodes instead of every sample. With P = 100 % the counts are exact; below, each merged inner
node may leave some samples unattributed, and every answer says how many.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from apiprof.errors import UsageError

Action = Literal["skipped", "merged", "descended", "enumerated"]


@dataclass(frozen=True)
class TreeShape:
    """M (``leaf_size``), N (``fanout``) and P (``keep_percent``) of a time tree."""

    leaf_size: int = 512
    fanout: int = 2
    keep_percent: float = 100.0

    def __post_init__(self) -> None:
        if self.leaf_size < 1:
            raise UsageError(f"leaf size (M) must be at least 1, got {self.leaf_size}")
        if self.fanout < 2:
            raise UsageError(f"fan-out (N) must be at least 2, got {self.fanout}")
        if not 0 < self.keep_percent <= 100:
            raise UsageError(
                f"kept share (P) must be in (0, 100] percent, got {self.keep_percent:g}"
            )

    @property
    def exact(self) -> bool:
        return self.keep_percent >= 100

    def describe(self) -> str:
        return f"M={self.leaf_size}, N={self.fanout}, P={self.keep_percent:g}%"


DEFAULT_SHAPE = TreeShape()
"""Leaves under 512 samples, halves, exact counts: a window's report then merges at most two
nodes per level, which keeps large windows fast (bench/time_tree.py)."""


@dataclass(frozen=True)
class Node:
    """A node of the tree: its time span ``[start, end)`` and sample range ``[first, stop)``.

    ``kept`` is None for a leaf; for an inner node it holds ``(stack ids, counts)`` of the top
    stacks, most frequent first.
    """

    id: int
    parent: int
    start: int
    end: int
    first: int
    stop: int
    kept: tuple[Sequence[int], Sequence[int]] | None

    @property
    def samples(self) -> int:
        return self.stop - self.first

    @property
    def leaf(self) -> bool:
        return self.kept is None

    @property
    def kept_samples(self) -> int:
        return 0 if self.kept is None else sum(self.kept[1])


def split_points(start: int, end: int, fanout: int) -> list[int]:
    """Boundaries of ``fanout`` children of equal duration: ``[start, ..., end]``."""
    return [start + (end - start) * i // fanout for i in range(fanout + 1)]


def keep_top(
    counts: dict[int, int], total: int, keep_percent: float
) -> tuple[list[int], list[int]]:
    """The most frequent stacks until they cover at least ``keep_percent`` % of ``total``.

    Ties go to the smaller stack id, so the choice is deterministic.
    """
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    stacks: list[int] = []
    kept: list[int] = []
    covered = 0
    for stack, count in ranked:
        if covered * 100 >= keep_percent * total:
            break
        stacks.append(stack)
        kept.append(count)
        covered += count
    return stacks, kept


class _Builder:
    def __init__(
        self,
        times: Sequence[int],
        stacks: Sequence[int],
        shape: TreeShape,
        emit: Callable[[Node], None],
    ) -> None:
        self.times, self.stacks, self.shape, self.emit = times, stacks, shape, emit
        self.next_id = 0

    def build(self, parent: int, start: int, end: int, first: int, stop: int) -> Counter[int]:
        """Emit the subtree's nodes (children before parents); return its full stack counts."""
        node_id = self.next_id
        self.next_id += 1
        count = stop - first
        m, n = self.shape.leaf_size, self.shape.fanout
        if count < m or end - start < n:
            self.emit(Node(node_id, parent, start, end, first, stop, None))
            return Counter(self.stacks[first:stop])
        bounds = split_points(start, end, n)
        cuts = [first]
        for bound in bounds[1:-1]:
            cuts.append(bisect.bisect_left(self.times, bound, cuts[-1], stop))
        cuts.append(stop)
        children = [
            self.build(node_id, bounds[i], bounds[i + 1], cuts[i], cuts[i + 1]) for i in range(n)
        ]
        # Adding the children's counts beats recounting only when they are much shorter than
        # the node's sample list (stacks repeat within a short span: the usual case).
        if 2 * sum(map(len, children)) < count:
            full = children[0]
            for child in children[1:]:
                full.update(child)
        else:
            full = Counter(self.stacks[first:stop])
        self.emit(
            Node(
                node_id,
                parent,
                start,
                end,
                first,
                stop,
                keep_top(full, count, self.shape.keep_percent),
            )
        )
        return full


def build_tree(
    times: Sequence[int],
    stacks: Sequence[int],
    shape: TreeShape,
    emit: Callable[[Node], None],
    *,
    start: int = 0,
    end: int | None = None,
) -> int:
    """Build the tree over time-ordered samples, handing each node to ``emit``.

    The root spans ``[start, end)`` (``end`` defaults to just after the last sample). Children
    are emitted before their parent; ids are assigned parent first, so the root is id 0.
    Returns the number of nodes.
    """
    if len(times) != len(stacks):
        raise ValueError("times and stacks differ in length")
    if end is None:
        end = (times[-1] + 1) if len(times) else start + 1
    if len(times) and (times[0] < start or times[-1] >= end):
        raise ValueError("samples outside the root span")
    builder = _Builder(times, stacks, shape, emit)
    builder.build(-1, start, end, 0, len(times))
    return builder.next_id


class TreeSource(Protocol):
    """Where a query reads nodes and leaf samples from: memory or a recording file."""

    def root(self) -> Node: ...

    def children(self, node: Node) -> Sequence[Node]: ...

    def leaf_samples(self, node: Node) -> tuple[Sequence[int], Sequence[int]]: ...


@dataclass(frozen=True)
class Visit:
    """What a window query did with one node."""

    start: int
    end: int
    samples: int
    action: Action


@dataclass
class WindowCounts:
    """Samples per stack in ``[start, end)``, and how exact they are.

    ``samples`` is exact at any P. ``unattributed`` samples lie in merged inner nodes but in
    stacks those nodes did not keep: every count in ``stacks`` is low by at most that much.
    """

    start: int
    end: int
    stacks: dict[int, int] = field(default_factory=dict)
    samples: int = 0
    unattributed: int = 0
    visits: list[Visit] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return self.unattributed == 0


def query(source: TreeSource, start: int, end: int) -> WindowCounts:
    """Counts per stack of the samples with ``start <= t < end``, answered from the tree."""
    result = WindowCounts(start, end)
    parts: list[tuple[Sequence[int], Sequence[int]]] = []  # (stacks, counts) to add up
    pending: list[Node] = [source.root()]
    while pending:
        node = pending.pop()
        if node.end <= start or node.start >= end or node.samples == 0:
            result.visits.append(Visit(node.start, node.end, node.samples, "skipped"))
            continue
        inside = start <= node.start and node.end <= end
        if node.kept is not None and inside:
            parts.append(node.kept)
            result.samples += node.samples
            result.unattributed += node.samples - sum(node.kept[1])
            result.visits.append(Visit(node.start, node.end, node.samples, "merged"))
        elif node.kept is not None:
            result.visits.append(Visit(node.start, node.end, node.samples, "descended"))
            pending.extend(reversed(source.children(node)))  # visit in time order
        else:
            times, stacks = source.leaf_samples(node)
            if inside:
                chosen: Sequence[int] = stacks
            else:
                lo = bisect.bisect_left(times, start)
                hi = bisect.bisect_left(times, end, lo)
                chosen = stacks[lo:hi]
            counted = Counter(chosen)
            parts.append((list(counted), list(counted.values())))
            result.samples += len(chosen)
            action: Action = "merged" if inside else "enumerated"
            result.visits.append(Visit(node.start, node.end, node.samples, action))
    result.stacks = add_counts(parts)
    return result


def add_counts(parts: list[tuple[Sequence[int], Sequence[int]]]) -> dict[int, int]:
    """Sum ``(stack ids, counts)`` lists: the longest is copied whole, the rest added to it."""
    if not parts:
        return {}
    parts.sort(key=lambda part: len(part[0]), reverse=True)
    counts = dict(zip(*parts[0], strict=True))
    get = counts.get
    for stacks, numbers in parts[1:]:
        for stack, count in zip(stacks, numbers, strict=True):
            counts[stack] = get(stack, 0) + count
    return counts


def count_linearly(
    times: Sequence[int], stacks: Sequence[int], start: int, end: int
) -> dict[int, int]:
    """The reference answer: one pass over every sample (what the tree saves)."""
    counts: dict[int, int] = {}
    get = counts.get
    for t, stack in zip(times, stacks, strict=True):
        if start <= t < end:
            counts[stack] = get(stack, 0) + 1
    return counts


class MemoryTree:
    """A time tree held in memory, over sample arrays held in memory."""

    def __init__(
        self,
        times: Sequence[int],
        stacks: Sequence[int],
        shape: TreeShape = DEFAULT_SHAPE,
        *,
        start: int = 0,
        end: int | None = None,
    ) -> None:
        self.times, self.stacks, self.shape = times, stacks, shape
        self.nodes: dict[int, Node] = {}
        self._children: dict[int, list[Node]] = {}
        build_tree(times, stacks, shape, self._add, start=start, end=end)
        for children in self._children.values():
            children.sort(key=lambda node: node.start)

    def _add(self, node: Node) -> None:
        self.nodes[node.id] = node
        self._children.setdefault(node.parent, []).append(node)

    def root(self) -> Node:
        return self.nodes[0]

    def children(self, node: Node) -> Sequence[Node]:
        return self._children.get(node.id, [])

    def leaf_samples(self, node: Node) -> tuple[Sequence[int], Sequence[int]]:
        return self.times[node.first : node.stop], self.stacks[node.first : node.stop]

    def walk(self) -> Iterator[Node]:
        """Nodes parent first, children in time order."""
        pending = [self.root()]
        while pending:
            node = pending.pop()
            yield node
            pending.extend(reversed(self.children(node)))

    def window(self, start: int, end: int) -> WindowCounts:
        return query(self, start, end)


def int_array(values: Iterable[int] = ()) -> array[int]:
    """A compact signed 64-bit array (sample times and ids at 8 bytes each, not ~36)."""
    return array("q", values)
