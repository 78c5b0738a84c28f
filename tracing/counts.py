"""Counts by id as NumPy arrays: how the time tree stores and adds up samples per stack or frame.

A tree node keeps ``(stack ids, counts)`` and its function totals ``(frame ids, inclusive,
exclusive)`` as int64 arrays; a window's answer adds up a few dozen of them. Each helper makes
a fixed handful of NumPy calls whatever the number of parts, since at the sizes a window report
adds (a few thousand pairs) the calls' fixed costs, not the arithmetic, are what a report pays.

NumPy is imported inside the functions: the recorder imports the tree's module inside the
traced program, which should not load (or pay ~0.1-0.4 s for) NumPy while it runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from apiprof.tracing.stacks import EMPTY_STACK, StackTable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]
else:
    IntArray = Any
Counts = tuple[IntArray, IntArray]
"""(ids, counts): a node's kept stacks, or a window's stacks (ids distinct); a part to add may
repeat ids."""
FunctionTotals = tuple[IntArray, IntArray, IntArray]
"""Per function of some stacks: (frame ids, inclusive samples, exclusive samples); a frame that
is never innermost has exclusive 0. A node's ids are distinct; a part to add may repeat them."""


def ints(values: Iterable[int]) -> IntArray:
    import numpy as np

    return np.fromiter(values, dtype=np.int64)


def pack_totals(inclusive: Mapping[int, int], exclusive: Mapping[int, int]) -> FunctionTotals:
    """Function totals as three parallel arrays (every exclusive frame is also inclusive)."""
    return (
        ints(inclusive),
        ints(inclusive.values()),
        ints(exclusive.get(f, 0) for f in inclusive),
    )


def add_counts(parts: Sequence[Counts]) -> Counts:
    """Sum counts by id over parts (ids may repeat): ``(ids, sums)``, ids ascending, zero sums
    left out."""
    return sum_by_id(*_joined(parts)) if parts else (ints(()), ints(()))


def add_indexed(parts: Sequence[Counts], index: IntArray) -> Counts:
    """Sum counts over parts whose ids are positions in ``index`` (the distinct ids that occur,
    ascending): ``(ids, sums)`` as :func:`add_counts` gives them, from one dense ``bincount``."""
    import numpy as np

    if not parts:
        return ints(()), ints(())
    positions, weights = _joined(parts)
    sums = np.bincount(positions, weights=weights, minlength=len(index))
    found = np.flatnonzero(sums)
    return index[found].astype(np.int64), sums[found].astype(np.int64)


def add_totals(inclusive: Sequence[Counts], exclusive: Sequence[Counts]) -> FunctionTotals:
    """Function totals from parts of inclusive and of exclusive samples per frame id (ids may
    repeat): ``(frame ids, inclusive, exclusive)``, ids ascending. Every exclusive frame is
    also inclusive, so the exclusive sums are placed by the inclusive ids."""
    import numpy as np

    ids, weights = _joined(inclusive) if inclusive else (ints(()), ints(()))
    if not len(ids):
        return ids, weights, ints(())
    own_ids, own_weights = _joined(exclusive) if exclusive else (ints(()), ints(()))
    size = int(ids.max()) + 1
    if size <= DENSE_IDS_PER_PAIR * len(ids) + DENSE_IDS:  # frame ids are dense: the usual case
        sums = np.bincount(ids, weights=weights, minlength=size)
        frames = np.flatnonzero(sums)
        own = np.bincount(own_ids, weights=own_weights, minlength=size)
        return (
            frames.astype(np.int64),
            sums[frames].astype(np.int64),
            own[frames].astype(np.int64),
        )
    frames, inner = sum_by_id(ids, weights)
    where = np.searchsorted(frames, own_ids)
    by_rank = np.bincount(where, weights=own_weights, minlength=len(frames))
    return frames, inner, by_rank.astype(np.int64)


def _joined(parts: Sequence[Counts]) -> Counts:
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    return np.concatenate([i for i, _ in parts]), np.concatenate([n for _, n in parts])


def sum_by_id(ids: IntArray, numbers: IntArray) -> Counts:
    """``(distinct ids ascending, sums)`` without zero sums: one ``bincount`` (exact: its
    float64 weights hold whole numbers up to 2**53) over the ids themselves when they are dense
    (frames: a few thousand ids), else over their ranks after a sort (a ``bincount`` over tens
    of thousands of stack ids costs more than sorting a few thousand pairs)."""
    import numpy as np

    if not len(ids):
        return ints(()), ints(())
    if int(ids.max()) <= DENSE_IDS_PER_PAIR * len(ids) + DENSE_IDS:
        sums = np.bincount(ids, weights=numbers)
        found = np.flatnonzero(sums)
        return found.astype(np.int64), sums[found].astype(np.int64)
    distinct, rank = np.unique(ids, return_inverse=True)
    sums = np.bincount(rank, weights=numbers, minlength=len(distinct)).astype(np.int64)
    kept = sums != 0
    return distinct[kept].astype(np.int64), sums[kept]


DENSE_IDS, DENSE_IDS_PER_PAIR = 2048, 8
"""A ``bincount`` over every id up to the largest beats sorting the pairs while the largest id
is under ``DENSE_IDS + DENSE_IDS_PER_PAIR × pairs`` (measured: ~2 ns per id against ~15 ns per
sorted pair, and a sort's fixed cost)."""


def top_positions(ids: IntArray, numbers: IntArray, top: int) -> IntArray:
    """Positions of the ``top`` largest positive ``numbers``, most first, ties to the smaller
    id: the cut is found by a partial sort, so only the few items at or above it are sorted."""
    import numpy as np

    chosen = np.flatnonzero(numbers > 0)
    if len(chosen) > top:
        values = numbers[chosen]
        cut = np.partition(values, len(values) - top)[len(values) - top]
        chosen = chosen[values >= cut]
    order = np.lexsort((ids[chosen], -numbers[chosen]))[:top]
    return chosen[order]


def as_dict(ids: IntArray, numbers: IntArray) -> dict[int, int]:
    return dict(zip(ids.tolist(), numbers.tolist(), strict=True))


_PATHS: WeakKeyDictionary[StackTable, dict[int, tuple[IntArray, int, int]]] = WeakKeyDictionary()
"""Per stack table: stack id → (its function path as an array, the path's length, its innermost
frame id), built on first use."""


def roll_up(ids: IntArray, numbers: IntArray, table: StackTable) -> tuple[Counts, Counts]:
    """Inclusive and exclusive samples per frame of stack counts (a window's leaf samples, a
    node of a trace file that keeps no totals), as parts for :func:`add_totals` (their frame
    ids repeat): each stack's cached function path weighted by its count, and its innermost
    frame. A few NumPy calls whatever the number of stacks."""
    import numpy as np

    paths = _PATHS.get(table)
    if paths is None:
        paths = _PATHS[table] = {}
    rows = table.stacks
    arrays, lengths, innermost = [], [], []
    for stack in ids.tolist():
        found = paths.get(stack)
        if found is None:
            if stack == EMPTY_STACK:  # no frames: no function to count
                found = (ints(()), 0, -1)
            else:
                path = ints(table.function_path(stack))
                found = paths[stack] = (path, len(path), rows[stack][1])
        arrays.append(found[0])
        lengths.append(found[1])
        innermost.append(found[2])
    own_frames = ints(innermost)
    framed = own_frames >= 0
    return (
        (np.concatenate(arrays), np.repeat(numbers, lengths)),
        (own_frames[framed], numbers[framed]),
    )
