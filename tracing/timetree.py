"""The time tree: counts per stack for any time window without re-reading every sample.

The root spans the whole recording. A node with fewer than M samples is a leaf and keeps its
raw samples (an index range into the time-ordered samples). A node with at least M samples
keeps the counts of its top stacks — the most frequent ones, until they cover at least P % of
its samples — and is split into N children of equal duration. A window report skips nodes
outside the window, takes the kept counts of nodes inside it, descends into partly covered
inner nodes and enumerates the samples of partly covered leaves, so it touches O(N · depth)
nodes instead of every sample. With P = 100 % the counts are exact; below, each merged inner
node may leave some samples unattributed, and every answer says how many.

Built with the recording's stack table, each inner node also keeps the *function totals* of its
kept stacks (inclusive and exclusive samples per function). A report's per-function roll-up then
adds a few hundred numbers per merged node instead of walking every distinct stack of the window
frame by frame: the roll-up's cost no longer grows with the window. Kept counts and totals
are int64 arrays (:mod:`.counts`), added up with a few NumPy calls per query rather than a
Python loop over thousands of stacks per merged node.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, Protocol

from apiprof.errors import UsageError
from apiprof.tracing.counts import (
    Counts,
    FunctionTotals,
    IntArray,
    add_counts,
    add_indexed,
    add_totals,
    as_dict,
    ints,
    pack_totals,
    roll_up,
)
from apiprof.tracing.stacks import StackTable

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
    stacks, most frequent first. ``functions`` holds the function totals of those kept stacks
    (None for leaves, and for inner nodes of a tree built without a stack table). A node read
    from a file leaves both out (None) until a query merges it: see ``TreeSource.contents``.
    """

    id: int
    parent: int
    start: int
    end: int
    first: int
    stop: int
    kept: Counts | None
    functions: FunctionTotals | None = None
    inner: bool = False

    @property
    def samples(self) -> int:
        return self.stop - self.first

    @property
    def leaf(self) -> bool:
        return not self.inner

    @property
    def kept_samples(self) -> int:
        return 0 if self.kept is None else int(self.kept[1].sum())


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


_Subtree = tuple[Counter[int], Counter[int], Counter[int]]  # stack counts, inclusive, exclusive


class _Builder:
    def __init__(
        self,
        times: Sequence[int],
        stacks: Sequence[int],
        shape: TreeShape,
        emit: Callable[[Node], None],
        table: StackTable | None,
    ) -> None:
        self.times, self.stacks, self.shape, self.emit = times, stacks, shape, emit
        self.table = table
        self.next_id = 0

    def _totals(self, counts: Mapping[int, int]) -> tuple[Counter[int], Counter[int]]:
        if self.table is None:
            return Counter(), Counter()
        inclusive, exclusive = self.table.function_totals(counts)
        return Counter(inclusive), Counter(exclusive)

    def build(self, parent: int, start: int, end: int, first: int, stop: int) -> _Subtree:
        """Emit the subtree's nodes (children before parents); return its full stack counts
        and (with a stack table) its function totals."""
        node_id = self.next_id
        self.next_id += 1
        count = stop - first
        m, n = self.shape.leaf_size, self.shape.fanout
        if count < m or end - start < n:
            self.emit(Node(node_id, parent, start, end, first, stop, None))
            full = Counter(self.stacks[first:stop])
            return (full, *self._totals(full))
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
        if 2 * sum(len(child[0]) for child in children) < count:
            full = children[0][0]
            for child in children[1:]:
                full.update(child[0])
        else:
            full = Counter(self.stacks[first:stop])
        # Function totals add up over children; a node that keeps only some stacks (P < 100)
        # takes the totals of those, so they agree with its kept counts.
        inclusive, exclusive = children[0][1], children[0][2]
        for child in children[1:]:
            inclusive.update(child[1])
            exclusive.update(child[2])
        top_stacks, top_counts = keep_top(full, count, self.shape.keep_percent)
        kept = ints(top_stacks), ints(top_counts)
        functions = None
        if self.table is not None:
            functions = pack_totals(
                *(
                    (inclusive, exclusive)
                    if len(top_stacks) == len(full)
                    else self._totals(dict(zip(top_stacks, top_counts, strict=True)))
                )
            )
        self.emit(Node(node_id, parent, start, end, first, stop, kept, functions, inner=True))
        return full, inclusive, exclusive


def build_tree(
    times: Sequence[int],
    stacks: Sequence[int],
    shape: TreeShape,
    emit: Callable[[Node], None],
    *,
    start: int = 0,
    end: int | None = None,
    table: StackTable | None = None,
) -> int:
    """Build the tree over time-ordered samples, handing each node to ``emit``.

    The root spans ``[start, end)`` (``end`` defaults to just after the last sample). Children
    are emitted before their parent; ids are assigned parent first, so the root is id 0. With
    the samples' stack ``table``, inner nodes carry function totals. Returns the number of nodes.
    """
    if len(times) != len(stacks):
        raise ValueError("times and stacks differ in length")
    if end is None:
        end = (times[-1] + 1) if len(times) else start + 1
    if len(times) and (times[0] < start or times[-1] >= end):
        raise ValueError("samples outside the root span")
    builder = _Builder(times, stacks, shape, emit, table)
    builder.build(-1, start, end, 0, len(times))
    return builder.next_id


class TreeSource(Protocol):
    """Where a query reads nodes and leaf samples from: memory or a recording file."""

    def root(self) -> Node: ...

    def children(self, node: Node) -> Sequence[Node]: ...

    def contents(self, node: Node) -> tuple[Counts, FunctionTotals | None]:
        """An inner node's kept counts and function totals (read only for merged nodes); with
        a ``stack_index``, the kept stacks are given as positions in it."""
        ...

    def stack_index(self) -> IntArray | None:
        """The distinct stack ids of all samples, ascending, when the source knows them: a
        query then adds counts by position in it (one ``bincount`` over a few thousand sampled
        stacks instead of a sort, or a ``bincount`` over every prefix's id)."""
        ...

    def leaf_samples(self, node: Node) -> tuple[Sequence[int], Sequence[int] | IntArray]:
        """A leaf's sample times and stacks (in time order)."""
        ...


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
    ``functions`` holds the function totals of ``stacks`` (frame ids ascending), filled when
    the query was given the stack table.
    """

    start: int
    end: int
    counts: Counts = field(default_factory=lambda: (ints(()), ints(())))
    samples: int = 0
    unattributed: int = 0
    visits: list[Visit] = field(default_factory=list)
    functions: FunctionTotals | None = None

    @property
    def exact(self) -> bool:
        return self.unattributed == 0

    @cached_property
    def stacks(self) -> dict[int, int]:
        """Samples per stack id (built on first use from the ``counts`` arrays)."""
        return as_dict(*self.counts)


def query(
    source: TreeSource, start: int, end: int, table: StackTable | None = None
) -> WindowCounts:
    """Counts per stack of the samples with ``start <= t < end``, answered from the tree; with
    the stack ``table``, also the function totals of those counts (from the nodes' totals where
    they have them, from their stacks where not: leaves, trees of older trace files)."""
    import numpy as np

    result = WindowCounts(start, end)
    parts: list[Counts] = []  # (stacks, counts) to add up
    inclusive: list[Counts] = []  # (frame ids, samples) to add up
    exclusive: list[Counts] = []
    leaves: list[Sequence[int] | IntArray] = []  # the stacks of the samples read from leaves
    merged = 0  # samples in merged inner nodes
    visits = result.visits
    index = source.stack_index()

    pending: list[Node] = [source.root()]
    while pending:
        node = pending.pop()
        samples = node.stop - node.first
        if node.end <= start or node.start >= end or samples == 0:
            visits.append(Visit(node.start, node.end, samples, "skipped"))
            continue
        inside = start <= node.start and node.end <= end
        if node.inner and inside:
            kept, functions = source.contents(node)
            parts.append(kept)
            if table is not None:
                if functions is None:  # a tree of an older trace file
                    ids = kept[0] if index is None else index[kept[0]]
                    inner, own = roll_up(ids, kept[1], table)
                else:
                    inner, own = functions[:2], (functions[0], functions[2])
                inclusive.append(inner)
                exclusive.append(own)
            merged += samples
            visits.append(Visit(node.start, node.end, samples, "merged"))
        elif node.inner:
            visits.append(Visit(node.start, node.end, samples, "descended"))
            pending.extend(reversed(source.children(node)))  # visit in time order
        else:
            times, stacks = source.leaf_samples(node)
            if not inside:
                lo = bisect.bisect_left(times, start)
                stacks = stacks[lo : bisect.bisect_left(times, end, lo)]
            if len(stacks):
                leaves.append(stacks)
                result.samples += len(stacks)
            action: Action = "merged" if inside else "enumerated"
            visits.append(Visit(node.start, node.end, samples, action))
    if leaves:  # counted and rolled up together: one part, whatever the number of leaves
        ids, numbers = np.unique(np.concatenate(leaves), return_counts=True)
        parts.append((ids if index is None else np.searchsorted(index, ids), numbers))
        if table is not None:
            inner, own = roll_up(ids, numbers, table)
            inclusive.append(inner)
            exclusive.append(own)
    result.counts = add_counts(parts) if index is None else add_indexed(parts, index)
    # what merged nodes did not keep: the window's samples less every sample counted
    result.unattributed = merged + result.samples - int(result.counts[1].sum())
    result.samples += merged
    if table is not None:
        result.functions = add_totals(inclusive, exclusive)
    return result


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
        table: StackTable | None = None,
    ) -> None:
        import numpy as np

        self.times, self.stacks, self.shape, self.table = times, stacks, shape, table
        # leaves hand out views of the stacks as an array (no copy of an int64 ``array``): a
        # query counts all its leaves' samples in one NumPy call
        self._stack_array = (
            np.frombuffer(stacks, dtype=np.int64)
            if isinstance(stacks, array) and stacks.itemsize == 8
            else np.asarray(stacks, dtype=np.int64)
        )
        self._index = np.flatnonzero(np.bincount(self._stack_array)) if len(stacks) else ints(())
        self._positions: dict[int, IntArray] = {}  # per inner node: its kept stacks' positions
        self.nodes: dict[int, Node] = {}
        self._children: dict[int, list[Node]] = {}
        build_tree(times, stacks, shape, self._add, start=start, end=end, table=table)
        for children in self._children.values():
            children.sort(key=lambda node: node.start)

    def _add(self, node: Node) -> None:
        import numpy as np

        if node.kept is not None:
            self._positions[node.id] = np.searchsorted(self._index, node.kept[0]).astype(np.int32)
        self.nodes[node.id] = node
        self._children.setdefault(node.parent, []).append(node)

    def root(self) -> Node:
        return self.nodes[0]

    def children(self, node: Node) -> Sequence[Node]:
        return self._children.get(node.id, [])

    def contents(self, node: Node) -> tuple[Counts, FunctionTotals | None]:
        assert node.kept is not None
        return (self._positions[node.id], node.kept[1]), node.functions

    def stack_index(self) -> IntArray:
        return self._index

    def leaf_samples(self, node: Node) -> tuple[Sequence[int], IntArray]:
        return self.times[node.first : node.stop], self._stack_array[node.first : node.stop]

    def walk(self) -> Iterator[Node]:
        """Nodes parent first, children in time order."""
        pending = [self.root()]
        while pending:
            node = pending.pop()
            yield node
            pending.extend(reversed(self.children(node)))

    def window(self, start: int, end: int) -> WindowCounts:
        """The window's counts, with function totals when the tree has a stack table."""
        return query(self, start, end, self.table)


def int_array(values: Iterable[int] = ()) -> array[int]:
    """A compact signed 64-bit array (sample times and ids at 8 bytes each, not ~36)."""
    return array("q", values)
