"""A distribution's printed figures, worked out once: what a reader shows without the buckets.

A docs build prints the median and p90 of tens of thousands of scenario slices and draws a few
hundred histograms; working every figure out from the buckets at each build cost more than the
rest of the Sphinx extension. So the writers store each slice's and each API's figures when they
write its buckets (:mod:`apiprof.db.figures`), and readers get them back as :class:`Figures`.

:func:`figures_of` is the only way figures are made — from a :class:`Histogram`, by its own
methods — so the stored figures are the ones a reader computing from the buckets prints.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from apiprof.model.histogram import Histogram

STORED_PERCENTILES = (10, 50, 90, 99)
"""The percentiles readers print (p10–p90 ranges, medians, the drill-down's p99), stored."""


_POSITION: dict[float, int] = {q: i for i, q in enumerate(STORED_PERCENTILES)}


class Distribution(Protocol):
    """What a reader asks of a slice's measurements: a :class:`Histogram`, its rows
    (:class:`~apiprof.model.histogram_rows.HistogramRows`) or its stored :class:`Figures`."""

    @property
    def count(self) -> int: ...

    @property
    def total(self) -> float: ...

    def percentiles(self, qs: Iterable[float]) -> tuple[float, ...]: ...

    def __bool__(self) -> bool: ...


class Summarised(Distribution, Protocol):
    """What a summary shows of a distribution: :class:`Histogram` or :class:`Figures`."""

    @property
    def mean(self) -> float: ...

    @property
    def stdev(self) -> float: ...

    @property
    def median(self) -> float: ...

    def percentile(self, q: float) -> float: ...

    def counts(self) -> dict[int, int]: ...


@dataclass(slots=True)
class Figures:
    """A histogram's count, sums-derived statistics, :data:`STORED_PERCENTILES` and calls per
    log2 bucket (``"bucket:count"`` pairs, read on demand: most readers never draw). Treat it
    as read-only; it is not a frozen dataclass because a docs build makes one per slice, ~15k,
    and a frozen one's checked attribute setting took five times as long."""

    count: int
    total: float
    mean: float
    stdev: float
    quantiles: tuple[float, ...]  # at STORED_PERCENTILES
    bucket_counts: str = ""

    def percentiles(self, qs: Iterable[float]) -> tuple[float, ...]:
        """The stored percentiles asked for; ValueError for any other (compute those from the
        histogram)."""
        try:
            return tuple([self.quantiles[_POSITION[q]] for q in qs])
        except KeyError as missing:
            raise ValueError(
                f"p{missing} is not stored (only {STORED_PERCENTILES}); read the histogram"
            ) from None

    def percentile(self, q: float) -> float:
        return self.percentiles((q,))[0]

    @property
    def median(self) -> float:
        return self.percentile(50)

    def counts(self) -> dict[int, int]:
        """Calls per log2 bucket, in bucket order (as :meth:`Histogram.counts`)."""
        pairs = (pair.split(":") for pair in self.bucket_counts.split(",") if pair)
        return {int(index): int(n) for index, n in pairs}

    def __bool__(self) -> bool:
        return self.count > 0

    def columns(self) -> tuple[object, ...]:
        """The storage form, in :data:`COLUMNS` order (NaN, which SQLite keeps as NULL, as
        None); :meth:`from_columns` reverses it."""
        numbers = (self.mean, self.stdev, *self.quantiles)
        return (
            self.count,
            self.total,
            *(None if math.isnan(x) else x for x in numbers),
            self.bucket_counts,
        )

    @classmethod
    def from_columns(cls, row: Sequence[Any]) -> Figures:
        count, total, mean, stdev, *quantiles, bucket_counts = row
        mean, stdev, *quantiles = (math.nan if x is None else x for x in (mean, stdev, *quantiles))
        return cls(count, total, mean, stdev, tuple(quantiles), bucket_counts)


COLUMNS = ("count", "total", "mean", "stdev", *(f"p{q}" for q in STORED_PERCENTILES), "buckets")
"""The columns :meth:`Figures.columns` fills, in order."""


def figures_of(hist: Histogram) -> Figures:
    """The figures of ``hist``, each from the histogram's own method."""
    counts = ",".join(f"{index}:{n}" for index, n in hist.counts().items())
    return Figures(
        hist.count, hist.total, hist.mean, hist.stdev, hist.percentiles(STORED_PERCENTILES), counts
    )
