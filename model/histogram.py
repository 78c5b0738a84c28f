"""Additive log2 histograms: the unit every apiprof measurement is stored in.

A value ``n >= 1`` lands in bucket ``floor(log2(n))`` — the position of its most significant bit,
so bucket ``i`` holds ``[2**i, 2**(i+1))``. Values below 1 (in the metric's native unit: ns,
bytes) land in the dedicated zero bucket, index ``ZERO_BUCKET``. Every bucket keeps count, sum
and sum of squares, so histograms from different runs, scenarios and machines merge by plain
addition and means/variances stay exact. Percentiles are *estimates*; see :meth:`percentile`.

Note the boundary differs from OpenTelemetry's base-2 exponential histogram (``(2**i,
2**(i+1)]``): exact powers of two land one bucket apart, so exports must convert.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

ZERO_BUCKET = -1
"""Index of the bucket for values below 1 (zero-cost calls, no allocation)."""


def bucket_index(value: float) -> int:
    """The log2 bucket a non-negative value falls into."""
    if value < 1:
        if value < 0 or math.isnan(value):
            raise ValueError(f"histogram values must be non-negative numbers, got {value!r}")
        return ZERO_BUCKET
    if isinstance(value, int):
        return value.bit_length() - 1
    return int(value).bit_length() - 1  # floor first: 3.9 -> 3 -> bucket 1, like the integer 3


MAX_BUCKET = 100
"""Highest bucket index a stored histogram may use (2**100 of any unit is beyond physical sense)."""


def check_bucket(index: int, count: int, total: float, total_sq: float) -> None:
    """Raise ``ValueError`` (saying why) unless the row can come from real values: a known
    bucket, a non-negative count, and sums inside what ``count`` values in the bucket can add up
    to. Rows from other processes and machines are checked with this before they are added."""
    if not ZERO_BUCKET <= index <= MAX_BUCKET:
        raise ValueError(f"bucket {index} is outside {ZERO_BUCKET}..{MAX_BUCKET}")
    if count < 0:
        raise ValueError(f"bucket {index} has a negative count ({count})")
    if not (math.isfinite(total) and math.isfinite(total_sq)):
        raise ValueError(f"bucket {index} has a sum that is not a finite number")
    low, high = bucket_bounds(index)
    slack = 1e-9 * max(1.0, high * count)
    if not low * count - slack <= total <= high * count + slack:
        raise ValueError(
            f"bucket {index} sums to {total:g} for {count} values, outside [{low * count:g}, {high * count:g}]"
        )
    if not low * low * count - slack * high <= total_sq <= high * high * count + slack * high:
        raise ValueError(f"bucket {index} has a sum of squares inconsistent with its bounds")


def bucket_bounds(index: int) -> tuple[float, float]:
    """Half-open value range ``[low, high)`` covered by a bucket."""
    if index == ZERO_BUCKET:
        return (0.0, 1.0)
    return (float(2**index), float(2 ** (index + 1)))


@dataclass(frozen=True, slots=True)
class Bucket:
    """Count, sum and sum of squares of the values in one bucket."""

    count: int = 0
    total: float = 0.0
    total_sq: float = 0.0

    def __add__(self, other: Bucket) -> Bucket:
        return Bucket(
            self.count + other.count, self.total + other.total, self.total_sq + other.total_sq
        )

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    @property
    def variance(self) -> float:
        if self.count < 2:
            return 0.0
        return max(0.0, self.total_sq / self.count - self.mean**2)


@dataclass(slots=True)
class Histogram:
    """A mutable log2 histogram; ``+`` and :meth:`merge` add, never overwrite."""

    buckets: dict[int, Bucket] = field(default_factory=dict)

    @classmethod
    def of(cls, values: Iterable[float]) -> Histogram:
        hist = cls()
        for value in values:
            hist.add(value)
        return hist

    @classmethod
    def from_buckets(cls, rows: Iterable[tuple[int, int, float, float]]) -> Histogram:
        """Build from ``(bucket, count, sum, sum_sq)`` rows, adding rows for the same bucket."""
        hist = cls()
        for index, count, total, total_sq in rows:
            hist._add_bucket(int(index), Bucket(int(count), float(total), float(total_sq)))
        return hist

    def to_data(self) -> list[list[float]]:
        """The wire and JSON form: ``[[bucket, count, sum, sum_sq], ...]`` in bucket order."""
        return [list(row) for row in self.rows()]

    @classmethod
    def from_data(cls, data: object) -> Histogram:
        """The inverse of :meth:`to_data`, refusing rows no real values could produce."""
        if not isinstance(data, list):
            raise ValueError("a histogram is a list of [bucket, count, sum, sum_sq] rows")
        rows = []
        for row in data:
            if not (isinstance(row, list) and len(row) == 4):
                raise ValueError("each histogram row is [bucket, count, sum, sum_sq]")
            index, count, total, total_sq = row
            if not (type(index) is int and type(count) is int):
                raise ValueError("bucket and count must be integers")
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in row[2:]):
                raise ValueError("sums must be numbers")
            check_bucket(index, count, float(total), float(total_sq))
            rows.append((index, count, float(total), float(total_sq)))
        return cls.from_buckets(rows)

    def add(self, value: float, times: int = 1) -> None:
        """Record ``value`` (``times`` identical observations of it)."""
        index = bucket_index(value)
        self._add_bucket(
            index, Bucket(times, float(value) * times, float(value) * float(value) * times)
        )

    def _add_bucket(self, index: int, bucket: Bucket) -> None:
        current = self.buckets.get(index)
        self.buckets[index] = bucket if current is None else current + bucket

    def merge(self, other: Histogram) -> Histogram:
        """Add ``other`` into this histogram in place; returns self for chaining."""
        for index, bucket in other.buckets.items():
            self._add_bucket(index, bucket)
        return self

    def __add__(self, other: Histogram) -> Histogram:
        return Histogram(dict(self.buckets)).merge(other)

    def __bool__(self) -> bool:
        return self.count > 0

    def rows(self) -> Iterator[tuple[int, int, float, float]]:
        """``(bucket, count, sum, sum_sq)`` in bucket order — the storage form."""
        for index in sorted(self.buckets):
            b = self.buckets[index]
            yield index, b.count, b.total, b.total_sq

    def counts(self) -> dict[int, int]:
        return {index: b.count for index, b in sorted(self.buckets.items()) if b.count}

    # -- derived statistics ------------------------------------------------------------------
    @property
    def count(self) -> int:
        return sum(b.count for b in self.buckets.values())

    @property
    def total(self) -> float:
        return sum(b.total for b in self.buckets.values())

    @property
    def total_sq(self) -> float:
        return sum(b.total_sq for b in self.buckets.values())

    @property
    def mean(self) -> float:
        n = self.count
        return self.total / n if n else math.nan

    @property
    def stdev(self) -> float:
        """Population standard deviation (exact: derived from the sums, not the buckets)."""
        n = self.count
        if n == 0:
            return math.nan
        return math.sqrt(max(0.0, self.total_sq / n - (self.total / n) ** 2))

    def percentile(self, q: float) -> float:
        """Estimate the ``q``-th percentile (0..100) from the buckets.

        Inside the bucket that holds the rank, values are assumed uniform over the range that has
        the bucket's exact mean and variance (``mean ± sqrt(3)·sd``), clipped to the bucket's
        bounds. A bucket whose values are all equal therefore answers exactly; otherwise the
        error is bounded by the bucket's width (a factor of two) and is usually far smaller.
        """
        if not 0 <= q <= 100:
            raise ValueError("percentile q must be within 0..100")
        n = self.count
        if n == 0:
            return math.nan
        rank = q / 100 * n
        seen = 0
        ordered = sorted((i, b) for i, b in self.buckets.items() if b.count)
        for index, b in ordered:
            if seen + b.count >= rank or index == ordered[-1][0]:
                low, high = value_range(index, b)
                if b.count == 1 or high <= low:
                    return b.mean
                within = min(1.0, max(0.0, (rank - seen) / b.count))
                return low + (high - low) * within
            seen += b.count
        raise AssertionError("unreachable: the last bucket always answers")

    @property
    def median(self) -> float:
        return self.percentile(50)

    def scaled(self, factor: float) -> Histogram:
        """Histogram of ``value * factor`` for every value: re-bucketed from bucket means.

        Used to convert units (e.g. cycles to ns); each bucket moves as a whole, so this is
        exact for count, sum and sum of squares and approximate only in bucket placement.
        """
        out = Histogram()
        for b in self.buckets.values():
            if b.count:
                out._add_bucket(
                    bucket_index(b.mean * factor),
                    Bucket(b.count, b.total * factor, b.total_sq * factor * factor),
                )
        return out


class IntTally:
    """Count, sum and sum of squares per log2 bucket for non-negative integers, in plain lists:
    the hot-loop form of a :class:`Histogram` (no objects per value, exact integer sums), made
    into one by :meth:`histogram` when the loop is done."""

    __slots__ = ("cells",)

    def __init__(self) -> None:
        self.cells: dict[int, list[int]] = {}

    def add(self, value: int) -> None:
        index = value.bit_length() - 1  # 0 -> -1, which is ZERO_BUCKET
        cell = self.cells.get(index)
        if cell is None:
            self.cells[index] = [1, value, value * value]
        else:
            cell[0] += 1
            cell[1] += value
            cell[2] += value * value

    def histogram(self) -> Histogram:
        return Histogram.from_buckets((index, c, s, sq) for index, (c, s, sq) in self.cells.items())


def value_range(index: int, b: Bucket) -> tuple[float, float]:
    """The range the values of bucket ``index`` are taken to span: uniform around their mean
    with their variance (``mean ± sqrt(3·variance)``), clipped to the bucket's bounds."""
    low, high = bucket_bounds(index)
    spread = math.sqrt(3 * b.variance)
    return max(low, b.mean - spread), min(high, b.mean + spread)


def merge_all(histograms: Iterable[Histogram]) -> Histogram:
    """Sum of any number of histograms (the empty sum is an empty histogram)."""
    out = Histogram()
    for hist in histograms:
        out.merge(hist)
    return out


def from_counts(counts: Mapping[int, int]) -> Histogram:
    """A histogram with only counts (sums at bucket midpoints) — for tests and synthetic data."""
    hist = Histogram()
    for index, count in counts.items():
        low, high = bucket_bounds(index)
        mid = (low + high) / 2 if index != ZERO_BUCKET else 0.0
        hist._add_bucket(index, Bucket(count, mid * count, mid * mid * count))
    return hist
