"""A histogram held as its stored rows: the read-only form for readers that show thousands.

A docs build shows the median and p90 of every API's every scenario, size and metric — tens of
thousands of histograms, read in one go. Building a :class:`~apiprof.model.histogram.Histogram`
(an object per bucket and sub-bucket) for each cost more than the rest of the extension, so a
reader keeps the rows the database returned and asks them for the few figures it shows: the
same computation (:func:`~apiprof.model.histogram.percentiles_of_cells`), so the same values.
:meth:`HistogramRows.histogram` gives the full object when something needs more.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from apiprof.model.histogram import Cell, Histogram, percentiles_of_cells

Row = tuple[int, int, float, float]
"""(bucket, count, sum, sum of squares) — :meth:`Histogram.rows`' form."""
SubRow = tuple[int, int, int, float, float]
"""(bucket, sub-bucket, count, sum, sum of squares) — :meth:`Histogram.sub_rows`' form."""


@dataclass(frozen=True, slots=True)
class HistogramRows:
    """One histogram as rows: at most one per bucket in bucket order, at most one per
    (bucket, sub-bucket) in that order — what a ``GROUP BY … ORDER BY`` query returns."""

    rows: Sequence[Row]
    sub_rows: Sequence[SubRow] = ()

    def histogram(self) -> Histogram:
        return Histogram.from_buckets(self.rows, self.sub_rows)

    @property
    def count(self) -> int:
        return sum(row[1] for row in self.rows)

    @property
    def total(self) -> float:
        return math.fsum(row[2] for row in self.rows)

    def __bool__(self) -> bool:
        return any(row[1] for row in self.rows)

    def cells(self) -> list[Cell]:
        """What :meth:`Histogram._cells` gives for the same rows, from one walk over them."""
        subs, taken, end = self.sub_rows, 0, len(self.sub_rows)
        cells: list[Cell] = []
        for index, count, total, total_sq in self.rows:
            start = taken
            while taken < end and subs[taken][0] < index:  # sub-buckets of an empty bucket
                start = taken = taken + 1
            held = 0
            while taken < end and subs[taken][0] == index:
                held += subs[taken][2]
                taken += 1
            if not count:
                continue
            if held == count:
                cells += [(c, s, sq, i, j) for i, j, c, s, sq in subs[start:taken] if c]
            else:
                cells.append((count, total, total_sq, index, -1))
        return cells

    def percentiles(self, qs: Iterable[float]) -> tuple[float, ...]:
        """:meth:`Histogram.percentiles` of these rows (the same values)."""
        return percentiles_of_cells(self.cells(), qs)


def rows_of(hist: Histogram) -> HistogramRows:
    """A histogram's rows (for tests and for callers holding a :class:`Histogram` already)."""
    return HistogramRows(tuple(hist.rows()), tuple(hist.sub_rows()))
