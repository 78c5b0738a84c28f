"""Where a value lands: the log2 buckets and their sub-buckets, and the check every stored row
passes (:mod:`apiprof.model.histogram` explains the scheme). Kept apart from the histogram so
the hot paths that sort raw figures into buckets need nothing else.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable

ZERO_BUCKET = -1
"""Index of the bucket for values below 1 (zero-cost calls, no allocation)."""

SUB_SCALE = 3
SUB_BUCKETS = 1 << SUB_SCALE
"""Sub-buckets per log2 bucket (the zero bucket has one, sub-bucket 0)."""
SUB_EDGES = (*(2.0 ** (j / SUB_BUCKETS) for j in range(SUB_BUCKETS)), 2.0)
"""Lower edges of the sub-buckets of bucket 0 (``[1, 2)``); bucket ``i`` scales them by 2**i."""


def bucket_index(value: float) -> int:
    """The log2 bucket a non-negative value falls into."""
    if value < 1:
        if value < 0 or math.isnan(value):
            raise ValueError(f"histogram values must be non-negative numbers, got {value!r}")
        return ZERO_BUCKET
    if isinstance(value, int):
        return value.bit_length() - 1
    return int(value).bit_length() - 1  # floor first: 3.9 -> 3 -> bucket 1, like the integer 3


def sub_bucket_index(value: float) -> tuple[int, int]:
    """The (log2 bucket, sub-bucket) a non-negative value falls into."""
    index = bucket_index(value)
    if index == ZERO_BUCKET:
        return index, 0
    within = value / (1 << index) if isinstance(value, int) else math.ldexp(value, -index)
    return index, min(SUB_BUCKETS - 1, bisect.bisect_right(SUB_EDGES, within) - 1)


MAX_BUCKET = 100
"""Highest bucket index a stored histogram may use (2**100 of any unit is beyond physical sense)."""


def check_bucket(index: int, count: int, total: float, total_sq: float) -> None:
    """Raise ``ValueError`` (saying why) unless the row can come from real values: a known
    bucket, a non-negative count, and sums inside what ``count`` values in the bucket can add up
    to. Rows from other processes and machines are checked with this before they are added."""
    if not ZERO_BUCKET <= index <= MAX_BUCKET:
        raise ValueError(f"bucket {index} is outside {ZERO_BUCKET}..{MAX_BUCKET}")
    _check_sums(f"bucket {index}", bucket_bounds(index), count, total, total_sq)


def check_sub_bucket(index: int, sub: int, count: int, total: float, total_sq: float) -> None:
    """:func:`check_bucket` for a sub-bucket row: a known (bucket, sub-bucket) and sums its
    ``count`` values can reach."""
    if not ZERO_BUCKET <= index <= MAX_BUCKET:
        raise ValueError(f"bucket {index} is outside {ZERO_BUCKET}..{MAX_BUCKET}")
    subs = 1 if index == ZERO_BUCKET else SUB_BUCKETS
    if not 0 <= sub < subs:
        raise ValueError(f"sub-bucket {sub} of bucket {index} is outside 0..{subs - 1}")
    _check_sums(f"sub-bucket {index}.{sub}", sub_bucket_bounds(index, sub), count, total, total_sq)


def _check_sums(
    name: str, bounds: tuple[float, float], count: int, total: float, total_sq: float
) -> None:
    if count < 0:
        raise ValueError(f"{name} has a negative count ({count})")
    if not (math.isfinite(total) and math.isfinite(total_sq)):
        raise ValueError(f"{name} has a sum that is not a finite number")
    low, high = bounds
    slack = 1e-9 * max(1.0, high * count)
    if not low * count - slack <= total <= high * count + slack:
        raise ValueError(
            f"{name} sums to {total:g} for {count} values, outside [{low * count:g}, {high * count:g}]"
        )
    if not low * low * count - slack * high <= total_sq <= high * high * count + slack * high:
        raise ValueError(f"{name} has a sum of squares inconsistent with its bounds")


def bucket_bounds(index: int) -> tuple[float, float]:
    """Half-open value range ``[low, high)`` covered by a bucket."""
    if index == ZERO_BUCKET:
        return (0.0, 1.0)
    return (float(2**index), float(2 ** (index + 1)))


def sub_bucket_bounds(index: int, sub: int) -> tuple[float, float]:
    """Half-open value range ``[low, high)`` covered by a sub-bucket."""
    if index == ZERO_BUCKET:
        return (0.0, 1.0)
    return (math.ldexp(SUB_EDGES[sub], index), math.ldexp(SUB_EDGES[sub + 1], index))


SubKey = tuple[int, int]  # (log2 bucket, sub-bucket)


def cells_of(values: Iterable[float], weight: int) -> list[tuple[SubKey, tuple[int, float, float]]]:
    """(sub-bucket, (count, sum, sum of squares)) of ``values``, each counted ``weight`` times.

    A timing pass hands over tens of thousands of figures: they are sorted once and each
    sub-bucket's run of values is found by bisection and summed in C, instead of looking up
    each value's sub-bucket. Values no sorted walk can take (NaN, which does not order) go the
    one-value-at-a-time way, which also raises for them."""
    ordered = sorted(values)
    cells: list[tuple[SubKey, tuple[int, float, float]]] = []
    pos, n = 0, len(ordered)
    while pos < n:
        index, sub = key = sub_bucket_index(ordered[pos])
        upper = 1.0 if index == ZERO_BUCKET else math.ldexp(SUB_EDGES[sub + 1], index)
        end = bisect.bisect_left(ordered, upper, pos + 1)
        run = ordered[pos:end]
        total = math.fsum(run)
        if total != total or sub_bucket_index(run[-1]) != key:  # NaN inside, or a value whose
            return cells_one_by_one(ordered, weight)  # key its size alone decides (huge ints)
        cells.append(
            (key, (len(run) * weight, total * weight, math.fsum(map(_square, run)) * weight))
        )
        pos = end
    return cells


def _square(value: float) -> float:
    value = float(value)
    return value * value


def cells_one_by_one(
    values: Iterable[float], weight: int
) -> list[tuple[SubKey, tuple[int, float, float]]]:
    cells: dict[SubKey, list[float]] = {}
    for value in values:
        key = sub_bucket_index(value)
        value = float(value)
        cell = cells.get(key)
        if cell is None:
            cells[key] = [weight, value * weight, value * value * weight]
        else:
            cell[0] += weight
            cell[1] += value * weight
            cell[2] += value * value * weight
    return [(key, (int(c), t, sq)) for key, (c, t, sq) in cells.items()]
