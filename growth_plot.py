"""A growth fit drawn: which fits get a chart, and each chart's language-free parts.

A drill-down page shows, per scenario, the time fit (wall time, else CPU time) and the
allocation fit as a chart of the measured medians against the fitted curve, with a table of
both. Everything in them but the title and the axis name is numbers, so a scan works them out
once and stores them (:mod:`apiprof.db.charts`); a docs build reads them, or — for a file
written before they were stored — works them out here, the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from apiprof import svg
from apiprof.format import value_formatter
from apiprof.model.growth import GrowthFit
from apiprof.model.records import Metric

CHARTED = (Metric.WALL, Metric.CPU, Metric.ALLOC_INCL)
"""Metrics whose growth fits get a chart; the other fits are listed in words."""

ChartKey = tuple[str, Metric]  # (scenario id, metric)


class Fit(Protocol):
    """What a stored growth fit (``apiprof.db.query.GrowthRow``) tells a chart."""

    @property
    def metric(self) -> Metric: ...
    @property
    def scenario_id(self) -> str: ...
    @property
    def growth_class(self) -> str: ...
    @property
    def intercept(self) -> float: ...
    @property
    def coefficient(self) -> float: ...
    @property
    def rel_error(self) -> float: ...
    @property
    def r2(self) -> float: ...
    @property
    def points(self) -> int: ...
    @property
    def size_axis(self) -> str: ...


@dataclass(frozen=True)
class GrowthPlot:
    """One charted fit, without words: the chart's axes and marks (:func:`svg.growth_parts`),
    the table rows (size, measured median, fitted value, difference) and the size where the
    medians stray furthest from the curve (``worst_gap`` None: no finite difference)."""

    axes: str
    marks: str
    rows: str  # "" when no size was measured
    worst_gap: float | None
    worst_size: float


def charted(fits: Iterable[Fit]) -> set[ChartKey]:
    """The fits that get a chart (``fits`` in page order): per scenario the first time fit and
    the allocation fit."""
    keys: set[ChartKey] = set()
    timed: set[str] = set()  # scenarios whose time chart is taken
    for fit in fits:
        if fit.metric in CHARTED and not (fit.metric.is_time and fit.scenario_id in timed):
            keys.add((fit.scenario_id, fit.metric))
            if fit.metric.is_time:
                timed.add(fit.scenario_id)
    return keys


def _gap(measured: float, fitted: float) -> float:
    return measured / fitted - 1 if fitted > 0 else math.inf


def plot_growth(row: Fit, points: Sequence[tuple[float, float]]) -> GrowthPlot:
    """The chart and table of one fit over ``points``: (size, median) pairs, sorted."""
    fit = GrowthFit(
        row.growth_class, row.intercept, row.coefficient, row.rel_error, row.r2, row.points
    )
    table: list[str] = []  # every cell is a formatted number, which holds no character
    worst = (0.0, 0.0)  # HTML escapes
    formatted = value_formatter(row.metric)  # medians and fitted values: all different
    for n, y in points:
        predicted = fit.predict(n)
        gap = _gap(y, predicted)
        worst = max(worst, (abs(gap), n))
        table.append(
            f"<tr><td>{n:g}</td><td>{formatted(y)}</td><td>{formatted(predicted)}</td>"
            f"<td>{f'{gap:+.0%}' if math.isfinite(gap) else '—'}</td></tr>"
        )
    axes, marks = svg.growth_parts(points, fit, row.metric, size_axis=row.size_axis or "n")
    finite = bool(points) and math.isfinite(worst[0])
    return GrowthPlot(axes, marks, "\n".join(table), worst[0] if finite else None, worst[1])
