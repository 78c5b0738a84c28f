"""What the editor shows about one API, read from a database: typical figures at a stated size.

A summary that pools every input size is not "typical" of anything: ``str.join`` over 10 items
and over 100,000 items land in one histogram, and its p90 is a hundred times its median. So the
histograms are kept per size, and the figures the editor shows are those of one representative
size (the measured size closest to 100, as ``apiprof show`` and the docs use), named beside
the numbers, its scenarios weighing the same however many samples each got (as everywhere:
:func:`~apiprof.model.pooling.pool_scenarios`). Measurements collected in real programs (scenario source ``collected``) are kept
apart from lab scans and shown on a line of their own.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

import sqlite_utils

from apiprof.db.query import TIME_METRICS, ApiSummary, has_sub_buckets, reference_size, summaries
from apiprof.model.histogram import Histogram
from apiprof.model.pooling import pool_scenarios
from apiprof.model.records import NO_SIZE, Metric, ScenarioSource

IO_METRICS = (Metric.IO_READ, Metric.IO_WRITE)
SHOWN_METRICS = (*TIME_METRICS, Metric.ALLOC_INCL, *IO_METRICS)
COLLECTED = str(ScenarioSource.COLLECTED)

CellKey = tuple[bool, Metric, int]  # (collected?, metric, size)


@dataclass(frozen=True)
class Figures:
    """The histograms behind one line of figures: lab or collected, at one size (or unsized)."""

    collected: bool
    size: int  # NO_SIZE when the figures are not for one input size
    time_metric: Metric | None
    time: Histogram | None
    alloc: Histogram | None
    io: tuple[tuple[Metric, Histogram], ...] = ()  # bytes read and written, where measured

    @cached_property
    def time_ns(self) -> float | None:
        return self.time.median if self.time else None

    @cached_property
    def alloc_bytes(self) -> float | None:
        return self.alloc.median if self.alloc else None

    @property
    def samples(self) -> int:
        hist = self.time or self.alloc
        return hist.count if hist else 0


@dataclass
class CostProfile:
    """Descriptive facts (:class:`ApiSummary`) plus histograms per (collected?, metric, size)."""

    summary: ApiSummary
    cells: dict[CellKey, Histogram] = field(default_factory=dict)

    @property
    def qualname(self) -> str:
        return self.summary.qualname

    @cached_property
    def lab(self) -> Figures | None:
        return self._figures(collected=False)

    @cached_property
    def collected(self) -> Figures | None:
        return self._figures(collected=True)

    @cached_property
    def headline(self) -> Figures | None:
        """The figures a one-word hint shows: the lab's, else the collected ones."""
        return self.lab or self.collected

    @property
    def profiled(self) -> bool:
        return self.headline is not None

    @property
    def size_axis(self) -> str:
        growth = self.summary.growth
        return growth.size_axis if growth and growth.size_axis else "n"

    def time_by_size(self) -> list[tuple[int, float]]:
        """Lab median time per input size, smallest size first (the growth line's ends)."""
        lab = self.lab
        if lab is None or lab.time_metric is None:
            return []
        return sorted(
            (size, hist.median)
            for (collected, metric, size), hist in self.cells.items()
            if not collected and metric is lab.time_metric and size != NO_SIZE and hist
        )

    def _figures(self, *, collected: bool) -> Figures | None:
        mine = {key: h for key, h in self.cells.items() if key[0] is collected and h}
        if not any(key[1] in (*TIME_METRICS, Metric.ALLOC_INCL) for key in mine):
            return None
        time_metric = next((m for m in TIME_METRICS if any(k[1] is m for k in mine)), None)
        sizes = sorted({k[2] for k in mine if k[2] != NO_SIZE and k[1] is time_metric})
        size = reference_size(sizes) if not collected else None  # as `show` and the docs

        def pooled(metric: Metric | None) -> Histogram | None:
            found = [h for (_, m, s), h in mine.items() if m is metric and size in (None, s)]
            return pool_scenarios(found) if found else None

        return Figures(
            collected,
            NO_SIZE if size is None else size,
            time_metric,
            pooled(time_metric),
            pooled(Metric.ALLOC_INCL),
            tuple((m, h) for m in IO_METRICS if (h := pooled(m)) is not None),
        )

    def add(self, other: CostProfile) -> CostProfile:
        """The profile of the same API from two databases (histograms are additive)."""
        cells = dict(self.cells)
        for key, hist in other.cells.items():
            cells[key] = pool_scenarios((cells[key], hist)) if key in cells else hist
        return CostProfile(_merge_summaries(self.summary, other.summary), cells)


def load_profiles(db: sqlite_utils.Database, qualnames: list[str]) -> dict[str, CostProfile]:
    """Profiles of canonical names that the database knows (a handful of queries per 500)."""
    out = {name: CostProfile(s) for name, s in summaries(db, qualnames).items()}
    metrics = [str(m) for m in SHOWN_METRICS]
    for start in range(0, len(qualnames), 500):
        chunk = [n for n in qualnames[start : start + 500] if n in out]
        if not chunk:
            continue
        rows: dict[tuple[str, CellKey, str], list[tuple]] = defaultdict(list)
        for qualname, metric, size, scenario, collected, *row in db.execute(
            "SELECT b.qualname, b.metric, b.size, b.scenario_id, "
            "(b.scenario_id = ? OR COALESCE(s.source, '') = ?) AS collected, "
            "b.bucket, SUM(b.count), SUM(b.sum), SUM(b.sum_sq) "
            "FROM buckets b LEFT JOIN scenarios s ON s.id = b.scenario_id "
            f"WHERE b.qualname IN ({','.join('?' * len(chunk))}) "
            f"AND b.metric IN ({','.join('?' * len(metrics))}) "
            "GROUP BY b.qualname, b.metric, b.size, b.scenario_id, collected, b.bucket",
            [COLLECTED, COLLECTED, *chunk, *metrics],
        ).fetchall():
            key = (bool(collected), Metric(metric), NO_SIZE if collected else int(size))
            rows[(qualname, key, scenario)].append(tuple(row))
        sub_rows: dict[tuple[str, CellKey, str], list[tuple]] = defaultdict(list)
        if has_sub_buckets(db):  # the fine cells behind accurate medians and p90s
            for qualname, metric, size, scenario, collected, *row in db.execute(
                "SELECT b.qualname, b.metric, b.size, b.scenario_id, "
                "(b.scenario_id = ? OR COALESCE(s.source, '') = ?) AS collected, "
                "b.bucket, b.sub, SUM(b.count), SUM(b.sum), SUM(b.sum_sq) "
                "FROM sub_buckets b LEFT JOIN scenarios s ON s.id = b.scenario_id "
                f"WHERE b.qualname IN ({','.join('?' * len(chunk))}) "
                f"AND b.metric IN ({','.join('?' * len(metrics))}) "
                "GROUP BY b.qualname, b.metric, b.size, b.scenario_id, collected, b.bucket, b.sub",
                [COLLECTED, COLLECTED, *chunk, *metrics],
            ).fetchall():
                key = (bool(collected), Metric(metric), NO_SIZE if collected else int(size))
                sub_rows[(qualname, key, scenario)].append(tuple(row))
        scenarios: dict[tuple[str, CellKey], list[Histogram]] = defaultdict(list)
        for (qualname, key, scenario), buckets in rows.items():
            scenarios[qualname, key].append(
                Histogram.from_buckets(buckets, sub_rows.get((qualname, key, scenario), ()))
            )
        for (qualname, key), parts in scenarios.items():
            out[qualname].cells[key] = pool_scenarios(parts)
    return out


def _merge_summaries(first: ApiSummary, other: ApiSummary) -> ApiSummary:
    """Descriptive fields from the first database that has them; counts added."""
    merged = ApiSummary(
        first.qualname,
        module=first.module or other.module,
        kind=first.kind or other.kind,
        signature=first.signature or other.signature,
        summary=first.summary or other.summary,
        coverage=first.coverage,
        reason=first.reason,
        histograms=dict(first.histograms),
        scenarios=first.scenarios + other.scenarios,
        growth=first.growth or other.growth,
    )
    for metric, hist in other.histograms.items():
        mine = merged.histograms.get(metric)
        merged.histograms[metric] = mine + hist if mine else hist
    if other.coverage == "profiled" or not merged.coverage:
        merged.coverage, merged.reason = other.coverage, other.reason
    return merged
