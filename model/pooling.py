"""Pooling scenarios into one "typical" figure: every scenario weighs the same.

A scan measures each scenario for a time budget, so a cheap scenario gets many more samples than
an expensive one (1,534 samples of one at 5.7 µs beside 285 and 130 of two others at 32 and
69 µs). Adding their histograms would let the cheap one decide the median. The typical figures
are therefore those of the *equal-weight mixture*: each scenario's distribution scaled to the
same total weight, then percentiles, mean and spread taken of the sum. The stored histograms
stay exact and additive; the weighting is applied only when a figure is read, here, by
:func:`pool_scenarios` — the one definition every reader uses (show, the docs, the editor,
compare, report).

The weights are whole numbers (each scenario's values counted ``w`` times, as a 1-in-``w``
sample stands for ``w`` calls), so the mixture is an ordinary histogram and its percentiles are
computed exactly as every other percentile is (:func:`~apiprof.model.histogram.percentiles_of_cells`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from apiprof.model.histogram import Bucket, Histogram

Key = TypeVar("Key")

_EXACT_LIMIT = 1 << 48
"""Largest common multiple of the scenarios' counts used as is; beyond it weights are rounded."""
_ROUNDED_SCALE = 1 << 20
"""Weight of the most-sampled scenario when rounding (weights off by at most 0.5 in 2**20)."""


def scenario_weights(counts: Iterable[int]) -> tuple[int, ...]:
    """Whole-number weights making every count weigh the same: ``w_i · count_i`` equal (exactly
    when the counts' least common multiple is small, else within one part in 2**21)."""
    counts = tuple(counts)
    if not counts:
        return ()
    common = math.lcm(*counts)
    if common <= _EXACT_LIMIT:
        return tuple(common // count for count in counts)
    scale = _ROUNDED_SCALE * max(counts)
    return tuple(max(1, round(scale / count)) for count in counts)


def _add_weighted(into: dict[Key, Bucket], cells: Mapping[Key, Bucket], weight: int) -> None:
    for key, b in cells.items():
        scaled = Bucket(b.count * weight, b.total * weight, b.total_sq * weight)
        current = into.get(key)
        into[key] = scaled if current is None else current + scaled


def _weighted(parts: tuple[Histogram, ...]) -> Histogram:
    """The sum of ``parts`` with each one's values counted by its :func:`scenario_weights`."""
    mixture = Histogram()
    for part, weight in zip(parts, scenario_weights(part.count for part in parts), strict=True):
        _add_weighted(mixture.buckets, part.buckets, weight)
        _add_weighted(mixture.subs, part.subs, weight)
    return mixture


@dataclass(slots=True)
class PooledHistogram(Histogram):
    """The exact sum of some scenarios' histograms (``count``, the rows: what was measured)
    whose figures — percentiles, mean, spread — are those of the equal-weight mixture of
    ``parts``. Adding to it adds a part."""

    parts: tuple[Histogram, ...] = ()
    _mixture: Histogram | None = field(default=None, repr=False, compare=False)

    def mixture(self) -> Histogram:
        """The parts weighted to equal totals, summed: the histogram the figures come from."""
        if self._mixture is None:
            self._mixture = _weighted(self.parts)
        return self._mixture

    def percentiles(self, qs: Iterable[float]) -> tuple[float, ...]:
        return self.mixture().percentiles(qs)

    @property
    def mean(self) -> float:
        return self.mixture().mean

    @property
    def stdev(self) -> float:
        return self.mixture().stdev

    def merge(self, other: Histogram) -> Histogram:
        """Add ``other`` as one more part (a pool's parts when it is one)."""
        Histogram.merge(self, other)
        added = other.parts if isinstance(other, PooledHistogram) else (other,)
        self.parts = (*self.parts, *(part for part in added if part))
        self._mixture = None
        return self

    def __add__(self, other: Histogram) -> Histogram:
        return pool_scenarios(self.parts).merge(other)


def pool_scenarios(parts: Iterable[Histogram]) -> Histogram:
    """One figure for several scenarios (or slices), each weighing the same however many
    samples it has: a lone non-empty part is returned as it is, several as a
    :class:`PooledHistogram` (their exact sum, figures of their equal-weight mixture)."""
    found = tuple(
        piece
        for part in parts
        for piece in (part.parts if isinstance(part, PooledHistogram) else (part,))
        if piece
    )
    if len(found) < 2:
        return found[0] if found else Histogram()
    pooled = PooledHistogram()
    for part in found:
        Histogram.merge(pooled, part)
    pooled.parts = found
    return pooled
