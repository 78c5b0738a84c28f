"""Additive log2 histograms: the unit every apiprof measurement is stored in.

A value ``n >= 1`` lands in bucket ``floor(log2(n))`` — the position of its most significant bit,
so bucket ``i`` holds ``[2**i, 2**(i+1))``. Values below 1 (in the metric's native unit: ns,
bytes) land in the dedicated zero bucket, index ``ZERO_BUCKET``. Every bucket keeps count, sum
and sum of squares, so histograms from different runs, scenarios and machines merge by plain
addition and means/variances stay exact. The log2 buckets are the display and merge unit.

**Sub-buckets.** Beside each log2 bucket a histogram keeps ``SUB_BUCKETS`` (8) finer buckets,
equally wide on a log scale: sub-bucket ``j`` of bucket ``i`` holds ``[2**(i + j/8), 2**(i +
(j+1)/8))`` — each about 9% wide — with the same count, sum and sum of squares, so they add
exactly like the buckets. Percentiles are estimated from them (see :meth:`Histogram.percentile`),
which keeps medians and p90s within a few percent of the exact sample percentiles. A bucket
whose sub-buckets do not account for all its values (data from before sub-buckets existed,
merged with newer data) answers from the bucket alone.

Note the boundary differs from OpenTelemetry's exponential histograms: OTel's bucket ``i`` at
scale 0 holds ``(2**i, 2**(i+1)]`` and at scale 3 ``(2**(i/8), 2**((i+1)/8)]`` — upper bounds
inclusive — while ours include the lower bound. Exact powers of two (common for byte counts)
land one bucket apart, so an export must convert values, not relabel indices. Our sub-bucket
``(i, j)`` corresponds to OTel scale-3 index ``8*i + j`` up to that boundary.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from apiprof.model.buckets import (
    SUB_EDGES,
    ZERO_BUCKET,
    SubKey,
    bucket_bounds,
    bucket_index,
    cells_of,
    check_bucket,
    check_sub_bucket,
    sub_bucket_index,
)


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
    """A mutable log2 histogram with sub-buckets; ``+`` and :meth:`merge` add, never overwrite.

    ``buckets`` maps a log2 bucket to its sums; ``subs`` maps (bucket, sub-bucket) to the sums
    of the finer buckets (empty for data recorded without them).
    """

    buckets: dict[int, Bucket] = field(default_factory=dict)
    subs: dict[SubKey, Bucket] = field(default_factory=dict)

    @classmethod
    def of(cls, values: Iterable[float], weight: int = 1) -> Histogram:
        """The histogram of ``values``, each counted ``weight`` times (a 1-in-``weight`` sample
        stands for ``weight`` observations)."""
        hist = cls()
        for (index, sub), (count, total, total_sq) in cells_of(values, weight):
            bucket = Bucket(int(count), total, total_sq)
            hist._add_bucket(index, bucket)
            hist._add_sub((index, sub), bucket)
        return hist

    @classmethod
    def from_buckets(
        cls,
        rows: Iterable[tuple[int, int, float, float]],
        sub_rows: Iterable[tuple[int, int, int, float, float]] = (),
    ) -> Histogram:
        """Build from ``(bucket, count, sum, sum_sq)`` rows and optional ``(bucket, sub, count,
        sum, sum_sq)`` sub-bucket rows, adding rows for the same (sub-)bucket."""
        hist = cls()
        buckets, subs = hist.buckets, hist.subs  # _add_bucket and _add_sub, inlined: databases
        for index, count, total, total_sq in rows:  # hand over thousands of rows at once
            bucket = Bucket(int(count), float(total), float(total_sq))
            current = buckets.get(index := int(index))
            buckets[index] = bucket if current is None else current + bucket
        for index, sub, count, total, total_sq in sub_rows:
            bucket = Bucket(int(count), float(total), float(total_sq))
            current = subs.get(key := (int(index), int(sub)))
            subs[key] = bucket if current is None else current + bucket
        return hist

    def to_data(self) -> list[list[float]]:
        """The wire and JSON form: ``[[bucket, count, sum, sum_sq], ...]`` in bucket order, then
        one ``[bucket, count, sum, sum_sq, sub]`` row per sub-bucket (data without sub-buckets is
        exactly the older form)."""
        rows = [list(row) for row in self.rows()]
        rows += [[i, c, s, sq, j] for i, j, c, s, sq in self.sub_rows()]
        return rows

    @classmethod
    def from_data(cls, data: object) -> Histogram:
        """The inverse of :meth:`to_data`, refusing rows no real values could produce."""
        if not isinstance(data, list):
            raise ValueError("a histogram is a list of [bucket, count, sum, sum_sq(, sub)] rows")
        rows, sub_rows = [], []
        for row in data:
            if not (isinstance(row, list) and len(row) in (4, 5)):
                raise ValueError("each histogram row is [bucket, count, sum, sum_sq(, sub)]")
            index, count, total, total_sq = row[:4]
            if not all(type(x) is int for x in (index, count, *row[4:])):
                raise ValueError("bucket, count and sub-bucket must be integers")
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in row[2:4]):
                raise ValueError("sums must be numbers")
            if len(row) == 5:
                check_sub_bucket(index, row[4], count, float(total), float(total_sq))
                sub_rows.append((index, row[4], count, float(total), float(total_sq)))
            else:
                check_bucket(index, count, float(total), float(total_sq))
                rows.append((index, count, float(total), float(total_sq)))
        hist = cls.from_buckets(rows, sub_rows)
        hist.check_subs()
        return hist

    def check_subs(self) -> None:
        """Raise ``ValueError`` unless every bucket's sub-buckets hold at most its values."""
        held: dict[int, int] = {}
        for (index, _), b in self.subs.items():
            held[index] = held.get(index, 0) + b.count
        for index, n in held.items():
            if n > self.buckets.get(index, Bucket()).count:
                raise ValueError(f"the sub-buckets of bucket {index} hold more values than it does")

    def add(self, value: float, times: int = 1) -> None:
        """Record ``value`` (``times`` identical observations of it)."""
        index, sub = sub_bucket_index(value)
        value = float(value)
        bucket = Bucket(times, value * times, value * value * times)
        self._add_bucket(index, bucket)
        self._add_sub((index, sub), bucket)

    def _add_bucket(self, index: int, bucket: Bucket) -> None:
        current = self.buckets.get(index)
        self.buckets[index] = bucket if current is None else current + bucket

    def _add_sub(self, key: SubKey, bucket: Bucket) -> None:
        current = self.subs.get(key)
        self.subs[key] = bucket if current is None else current + bucket

    def merge(self, other: Histogram) -> Histogram:
        """Add ``other`` into this histogram in place; returns self for chaining."""
        buckets, subs = self.buckets, self.subs  # _add_bucket and _add_sub, inlined: readers
        for index, bucket in other.buckets.items():  # pool thousands of histograms
            current = buckets.get(index)
            buckets[index] = bucket if current is None else current + bucket
        for key, bucket in other.subs.items():
            current = subs.get(key)
            subs[key] = bucket if current is None else current + bucket
        return self

    def __add__(self, other: Histogram) -> Histogram:
        return Histogram(dict(self.buckets), dict(self.subs)).merge(other)

    def __bool__(self) -> bool:
        return any(b.count for b in self.buckets.values())

    def rows(self) -> Iterator[tuple[int, int, float, float]]:
        """``(bucket, count, sum, sum_sq)`` in bucket order — the storage form."""
        for index in sorted(self.buckets):
            b = self.buckets[index]
            yield index, b.count, b.total, b.total_sq

    def sub_rows(self) -> Iterator[tuple[int, int, int, float, float]]:
        """``(bucket, sub, count, sum, sum_sq)`` in value order — the sub-buckets' storage form."""
        for key in sorted(self.subs):
            b = self.subs[key]
            yield key[0], key[1], b.count, b.total, b.total_sq

    def counts(self) -> dict[int, int]:
        return {index: b.count for index, b in sorted(self.buckets.items()) if b.count}

    # -- derived statistics ------------------------------------------------------------------
    @property
    def count(self) -> int:
        return sum(b.count for b in self.buckets.values())

    @property
    def total(self) -> float:
        return math.fsum(b.total for b in self.buckets.values())  # any order, any Python

    @property
    def total_sq(self) -> float:
        return math.fsum(b.total_sq for b in self.buckets.values())

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

    @property
    def has_subs(self) -> bool:
        """Whether every bucket's values are accounted for by sub-buckets."""
        return bool(self.buckets) and all(
            self._sub_count(index) == b.count for index, b in self.buckets.items() if b.count
        )

    def _sub_count(self, index: int) -> int:
        return sum(b.count for (i, _), b in self.subs.items() if i == index)

    def _cells(self) -> list[Cell]:
        """The finest complete cells in value order: a bucket's sub-buckets where they hold
        all its values, else the bucket itself (sub-bucket -1) — see :data:`Cell`."""
        by_bucket: dict[int, list[tuple[int, Bucket]]] = {}
        for (index, sub), b in self.subs.items():
            if b.count:
                by_bucket.setdefault(index, []).append((sub, b))
        cells: list[Cell] = []
        for index in sorted(self.buckets):
            bucket = self.buckets[index]
            if not bucket.count:
                continue
            subs = by_bucket.get(index)
            if subs and sum(b.count for _, b in subs) == bucket.count:
                subs.sort()  # sub-bucket numbers are unique: buckets are never compared
                cells += [(b.count, b.total, b.total_sq, index, sub) for sub, b in subs]
            else:
                cells.append((bucket.count, bucket.total, bucket.total_sq, index, -1))
        return cells

    def percentile(self, q: float) -> float:
        """Estimate the ``q``-th percentile (0..100) as exact sample percentiles are computed
        (linear interpolation between the order statistics at ``q/100 · (n − 1)``).

        Each order statistic is estimated inside the finest cell that holds it (a sub-bucket,
        else a bucket): the cell's ``count`` values are taken as evenly spaced around the cell's
        exact mean with the cell's exact variance, clipped to its bounds. A cell whose values are
        all equal (or that holds one value) therefore answers exactly, and any answer lies in the
        right cell: within one sub-bucket (±9%) of the truth, usually far closer.
        """
        return self.percentiles((q,))[0]

    def percentiles(self, qs: Iterable[float]) -> tuple[float, ...]:
        """:meth:`percentile` of each of ``qs`` (same answers), ordering the cells once: a
        display showing a median, p10, p90 and p99 pays for one pass, not four."""
        return percentiles_of_cells(self._cells(), qs)

    @property
    def median(self) -> float:
        return self.percentile(50)

    def scaled(self, factor: float) -> Histogram:
        """Histogram of ``value * factor`` for every value: re-bucketed from bucket means.

        Used to convert units (e.g. cycles to ns); each (sub-)bucket moves as a whole, so this is
        exact for count, sum and sum of squares and approximate only in bucket placement.
        """
        out = Histogram()
        for b in self.buckets.values():
            if b.count:
                out._add_bucket(
                    bucket_index(b.mean * factor),
                    Bucket(b.count, b.total * factor, b.total_sq * factor * factor),
                )
        for b in self.subs.values():
            if b.count:
                out._add_sub(
                    sub_bucket_index(b.mean * factor),
                    Bucket(b.count, b.total * factor, b.total_sq * factor * factor),
                )
        return out


Cell = tuple[int, float, float, int, int]
"""One cell an order statistic can fall in: (count, sum, sum of squares, bucket, sub-bucket or
-1 for a whole bucket); cells are listed in value order and hold at least one value each. Its
bounds are worked out only for the few cells an order statistic falls in."""


def percentiles_of_cells(cells: list[Cell], qs: Iterable[float]) -> tuple[float, ...]:
    """:meth:`Histogram.percentiles` of the histogram whose complete cells are ``cells``: the
    one computation behind every percentile apiprof shows, whatever form the histogram is held
    in (a docs build asks it for tens of thousands, hence the inlined order statistics)."""
    qs = tuple(qs)
    for q in qs:
        if not 0 <= q <= 100:
            raise ValueError("percentile q must be within 0..100")
    ends = list(itertools.accumulate([cell[0] for cell in cells]))
    n = ends[-1] if ends else 0  # every value is in exactly one cell
    if n == 0:
        return tuple(math.nan for _ in qs)
    last = len(cells) - 1
    out = []
    for q in qs:
        position = q / 100 * (n - 1)
        lower = math.floor(position)
        values = []
        for k in (lower, lower + 1) if position != lower else (lower,):
            # the k-th smallest value (0-based), estimated in the cell that holds it
            at = min(bisect.bisect_right(ends, k), last)
            count, total, total_sq, index, sub = cells[at]  # cells hold at least one value
            mean = total / count
            if count == 1:
                values.append(mean)
                continue
            j = min(k - (ends[at] - count), count - 1)
            variance = max(0.0, total_sq / count - mean**2)  # Bucket.variance, inlined
            spacing = math.sqrt(12 * variance / (count * count - 1))
            value = mean + spacing * (j - (count - 1) / 2)
            if sub < 0 or index == ZERO_BUCKET:
                low, high = bucket_bounds(index)
            else:  # sub_bucket_bounds, inlined
                low, high = (
                    math.ldexp(SUB_EDGES[sub], index),
                    math.ldexp(SUB_EDGES[sub + 1], index),
                )
            values.append(min(max(value, low), high))
        low_value = values[0]
        if len(values) == 2:
            low_value += (position - lower) * (values[1] - low_value)
        out.append(low_value)
    return tuple(out)


class IntTally:
    """Count, sum and sum of squares per sub-bucket for non-negative integers, in plain lists:
    the hot-loop form of a :class:`Histogram` (no objects per value, exact integer sums), made
    into one by :meth:`histogram` when the loop is done."""

    __slots__ = ("cells",)

    def __init__(self) -> None:
        self.cells: dict[SubKey, list[int]] = {}

    def add(self, value: int) -> None:
        key = sub_bucket_index(value)
        cell = self.cells.get(key)
        if cell is None:
            self.cells[key] = [1, value, value * value]
        else:
            cell[0] += 1
            cell[1] += value
            cell[2] += value * value

    def histogram(self) -> Histogram:
        hist = Histogram()
        for (index, sub), (c, s, sq) in self.cells.items():
            bucket = Bucket(c, float(s), float(sq))
            hist._add_bucket(index, bucket)
            hist._add_sub((index, sub), bucket)
        return hist


def exact_percentile(values: Iterable[float], q: float) -> float:
    """The exact sample percentile :meth:`Histogram.percentile` estimates: linear interpolation
    between the order statistics at ``q/100 · (n − 1)`` (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = q / 100 * (len(ordered) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (position - lower) * (ordered[upper] - ordered[lower])


def value_range(index: int, b: Bucket) -> tuple[float, float]:
    """The range a log2 bucket's values are taken to spread over (mean ± √3·stdev, clipped to
    the bucket): the uniform spread with the bucket's exact mean and variance."""
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
