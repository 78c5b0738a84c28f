"""Histograms by scenario and size — the drill-down detail — and the summaries pooled from them.

A docs build shows every slice's median and p90 and every API's pooled figures, read in one go:
tens of thousands of histograms. So a slice keeps the rows the database returned
(:class:`~apiprof.model.histogram_rows.HistogramRows`, figures computed from them as a
:class:`Histogram` would) and builds the full object only when asked; pooling adds the rows'
sums in plain lists, in the order :class:`Histogram` addition would, so the pooled histograms
are the very ones the per-API queries give.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from apiprof.model.buckets import SUB_SCALE
from apiprof.model.figures import Figures
from apiprof.model.histogram import Bucket, Histogram
from apiprof.model.histogram_rows import HistogramRows
from apiprof.model.pooling import pool_scenarios
from apiprof.model.records import NO_SIZE, Metric

if TYPE_CHECKING:
    from apiprof.db.schema import Readable

REFERENCE_SIZE = 100
"""The input size typical figures are given at, when an API was measured at sizes."""


def reference_size(sizes: Iterable[int]) -> int | None:
    """The measured size typical figures are given at: the one closest to
    :data:`REFERENCE_SIZE` on a log scale (the smaller on a tie); None without sized data."""
    sized = [s for s in sizes if s != NO_SIZE]
    if not sized:
        return None
    return min(sized, key=lambda s: (abs(math.log(max(s, 1) / REFERENCE_SIZE)), s))


@dataclass(slots=True)  # not frozen: a docs build makes ~15k, and frozen ones cost 5× to make
class ScenarioSlice:
    """One API's measurements of one metric in one scenario at one size (environments merged);
    ``rows`` answers the figures pages show — the bucket rows, or the figures stored from them
    (:mod:`apiprof.db.figures`) — and :attr:`histogram`, built from the rows on each access,
    the rest."""

    scenario_id: str
    source: str
    description: str
    size: int
    metric: Metric
    rows: HistogramRows | Figures = field(repr=False)

    @property
    def bucket_rows(self) -> HistogramRows:
        if isinstance(self.rows, Figures):
            raise TypeError("a slice read as stored figures has no buckets; read them instead")
        return self.rows

    @property
    def histogram(self) -> Histogram:
        return self.bucket_rows.histogram()


_SLICE = itemgetter(0, 1, 2, 3)  # qualname, scenario_id, size, metric
_KEYS = "qualname, metric, scenario_id, size"  # a slice: the primary key's first columns


def _rows_by_slice(
    db: Readable, table: str, columns: str, names: list[str] | None
) -> dict[tuple, list[tuple]]:
    """``table``'s rows of ``names`` (every API when None) per slice (qualname, scenario_id,
    size, metric), environments summed, each slice's rows in bucket order.

    With one environment (the usual file: one machine's scans) nothing needs summing, and the
    rows are read in primary-key order as bare numbers — no key strings per row, no sorting —
    and cut into slices by a count of rows per slice."""
    where = f"WHERE qualname IN ({','.join('?' * len(names))})" if names is not None else ""
    params = names or []
    plain = ", ".join(columns.split(", ")[:-3])  # bucket(, sub)
    environments = db.execute(f"SELECT DISTINCT environment_id FROM {table} LIMIT 2").fetchall()
    if len(environments) < 2:
        numbers = db.execute(
            f"SELECT {columns} FROM {table} {where} ORDER BY {_KEYS}, environment_id, {plain}",
            params,
        ).fetchall()
        out: dict[tuple, list[tuple]] = {}
        start = 0
        for qualname, scenario_id, size, metric, n in db.execute(
            f"SELECT qualname, scenario_id, size, metric, COUNT(*) FROM {table} {where} "
            f"GROUP BY {_KEYS} ORDER BY {_KEYS}",
            params,
        ):
            out[qualname, scenario_id, size, metric] = numbers[start : start + n]
            start += n
        if start == len(numbers):
            return out
        # a scan wrote between the two reads: read again, the general way
    rows = db.execute(
        f"SELECT qualname, scenario_id, size, metric, {plain}, SUM(count), SUM(sum), "
        f"SUM(sum_sq) FROM {table} {where} GROUP BY {_KEYS}, {plain} ORDER BY {_KEYS}, {plain}",
        params,
    )
    return {key: [row[4:] for row in group] for key, group in groupby(rows, _SLICE)}


def scenario_breakdowns(
    db: Readable, qualnames: Iterable[str] | None = None
) -> dict[str, list[ScenarioSlice]]:
    """:func:`scenario_breakdown` of many APIs (every API when ``qualnames`` is None): two
    queries, whatever the number of APIs — a docs build asks for all of them, one page each."""
    from apiprof.db.query import has_sub_buckets

    names = None if qualnames is None else list(qualnames)
    if names is not None and len(names) > 500:  # SQLite's limit on bound parameters
        out: dict[str, list[ScenarioSlice]] = {}
        for start in range(0, len(names), 500):
            out.update(scenario_breakdowns(db, names[start : start + 500]))
        return out
    scenarios = scenario_sources(db, names)
    buckets = _rows_by_slice(db, "buckets", "bucket, count, sum, sum_sq", names)
    subs = (
        _rows_by_slice(db, "sub_buckets", "bucket, sub, count, sum, sum_sq", names)
        if has_sub_buckets(db)
        else {}
    )
    metrics = {str(m): m for m in Metric}
    found: dict[str, list[ScenarioSlice]] = {}
    for key in sorted(buckets):  # (qualname, scenario_id, size, metric as stored)
        qualname, scenario_id, size, metric = key
        source, description = scenarios.get(scenario_id, ("", ""))
        rows = HistogramRows(buckets[key], subs.get(key, ()))
        found.setdefault(qualname, []).append(
            ScenarioSlice(scenario_id, source, description, size, metrics[metric], rows)
        )
    return found


def scenario_sources(db: Readable, names: list[str] | None) -> dict[str, tuple[str, str]]:
    """(source, description) of every scenario measured for ``names`` (of all when None)."""
    if names is None:
        query, params = "SELECT id, source, description FROM scenarios", []
    else:
        marks = ",".join("?" * len(names))
        query = (
            "SELECT id, source, description FROM scenarios WHERE id IN "
            f"(SELECT DISTINCT scenario_id FROM buckets WHERE qualname IN ({marks}))"
        )
        params = names
    return {sid: (source, description) for sid, source, description in db.execute(query, params)}


def scenario_breakdown(db: Readable, qualname: str) -> list[ScenarioSlice]:
    """Histograms split by scenario and size (environments merged) — the drill-down detail."""
    return scenario_breakdowns(db, [qualname]).get(qualname, [])


# -- pooling slices into an API's summary histograms ---------------------------------------------


def _add_sums(into: dict[int, list[Any]], rows: Iterable[tuple[int, int, float, float]]) -> None:
    """Add (key, count, sum, sum of squares) rows into ``into``'s [count, sum, sum of squares]
    per key, current + added as :class:`Bucket` addition does."""
    for key, count, total, total_sq in rows:
        cell = into.get(key)
        if cell is None:
            into[key] = [count, total, total_sq]
        else:
            cell[0] += count
            cell[1] += total
            cell[2] += total_sq


class _Pool:
    """The sum of some slices' rows per bucket and sub-bucket, as ``Histogram`` addition would
    make it (``current + added``, in the order added); one member is kept as it is. Sub-bucket
    ``(i, j)`` is filed under ``8 * i + j``: no key tuple per row."""

    __slots__ = ("buckets", "first", "subs")

    def __init__(self, first: HistogramRows | None = None) -> None:
        self.first = first
        self.buckets: dict[int, list[Any]] = {}
        self.subs: dict[int, list[Any]] = {}

    def _unshare(self) -> None:
        if self.first is not None:
            first, self.first = self.first, None
            self.add(first)

    def add(self, rows: HistogramRows) -> None:
        self._unshare()
        _add_sums(self.buckets, rows.rows)
        _add_sums(self.subs, [((i << SUB_SCALE) + j, c, s, sq) for i, j, c, s, sq in rows.sub_rows])

    def add_pool(self, other: _Pool) -> None:
        if other.first is not None:
            self.add(other.first)
            return
        self._unshare()
        for mine, theirs in ((self.buckets, other.buckets), (self.subs, other.subs)):
            _add_sums(mine, [(key, *sums) for key, sums in theirs.items()])

    def copy(self) -> _Pool:
        copy = _Pool(self.first)
        copy.buckets = {key: list(cell) for key, cell in self.buckets.items()}
        copy.subs = {key: list(cell) for key, cell in self.subs.items()}
        return copy

    def histogram(self) -> Histogram:
        if self.first is not None:
            return self.first.histogram()
        mask = (1 << SUB_SCALE) - 1
        return Histogram(
            {index: Bucket(*cell) for index, cell in self.buckets.items()},
            {(key >> SUB_SCALE, key & mask): Bucket(*cell) for key, cell in self.subs.items()},
        )


def pooled_histograms(
    slices: list[ScenarioSlice],
) -> tuple[int | None, dict[Metric, Histogram], dict[Metric, Histogram]]:
    """(reference size, typical histograms, pooled histograms) of one API's slices (in
    :func:`scenario_breakdowns` order), as the per-API query gives them: scenarios pooled per
    size, then sizes pooled; typical are the unsized figures overlaid with the reference size's,
    its scenarios weighing the same (:func:`~apiprof.model.pooling.pool_scenarios`); the pooled
    ones are the exact sum of everything."""
    by_size: dict[int, dict[Metric, _Pool]] = {}
    parts: dict[tuple[int, Metric], list[HistogramRows]] = {}
    for piece in slices:
        per_metric = by_size.setdefault(piece.size, {})
        pool = per_metric.get(piece.metric)
        if pool is None:
            per_metric[piece.metric] = _Pool(piece.bucket_rows)
        else:
            pool.add(piece.bucket_rows)
        parts.setdefault((piece.size, piece.metric), []).append(piece.bucket_rows)
    everything: dict[Metric, _Pool] = {}
    copies: set[int] = set()  # pools made here (the others belong to one size)
    for per_metric in by_size.values():
        for metric, pool in per_metric.items():
            found = everything.get(metric)
            if found is None:
                everything[metric] = pool
                continue
            if id(found) not in copies:
                found = everything[metric] = found.copy()
                copies.add(id(found))
            found.add_pool(pool)
    size = reference_size(by_size)
    typical = {**by_size.get(NO_SIZE, {}), **(by_size[size] if size is not None else {})}
    made: dict[int, Histogram] = {}

    def histogram(pool: _Pool) -> Histogram:
        if id(pool) not in made:
            made[id(pool)] = pool.histogram()
        return made[id(pool)]

    def scenarios_pooled(metric: Metric, pool: _Pool) -> Histogram:
        """One size's scenarios, each weighing the same (:func:`pool_scenarios`)."""
        at = size if size is not None and metric in by_size[size] else NO_SIZE
        found = parts[at, metric]
        if len(found) == 1:
            return histogram(pool)
        return pool_scenarios(rows.histogram() for rows in found)

    return (
        size,
        {metric: scenarios_pooled(metric, pool) for metric, pool in typical.items()},
        {metric: histogram(pool) for metric, pool in everything.items()},
    )
