"""Growth with input size on a drill-down page: per stored fit, its formula and quality in
words, and for the time and allocation fits a chart of the measured medians against the fitted
curve (log–log) with a table of both."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from markupsafe import Markup

from apiprof import svg
from apiprof.format import value_formatter
from apiprof.model.growth import GrowthFit
from apiprof.model.records import NO_SIZE, Metric
from apiprof.sphinx_ext.i18n import _, graphic_words, ngettext
from apiprof.sphinx_ext.scenario_view import SliceFigures
from apiprof.sphinx_ext.views import metric_label

if TYPE_CHECKING:
    from apiprof.db.query import GrowthRow, ScenarioSlice


@dataclass(frozen=True)
class GrowthView:
    metric: str
    scenario_id: str
    size_axis: str
    growth_class: str
    formula: str
    quality: str
    point_rows: Markup  # size, measured median, fitted value, difference ("" without a chart)
    chart_svg: Markup


def growth_formula(row: GrowthRow) -> str:
    formatted = value_formatter(row.metric)  # fitted numbers: all different, no memo
    a, b = formatted(row.intercept), row.coefficient
    per_unit = formatted(b) if b >= 1 else f"{b:.3g} {row.metric.unit}"
    n = row.size_axis or "n"
    if row.growth_class == "O(1)":
        return f"≈ {a}"
    if row.growth_class == "O(2^n)":
        return f"≈ {a} · e^({b:.3g}·{n})"
    term = {"O(log n)": f"ln {n}", "O(n)": n, "O(n log n)": f"{n}·ln {n}", "O(n^2)": f"{n}²"}[
        row.growth_class
    ]
    return f"≈ {a} + {per_unit} · {term}"


def _gap(measured: float, fitted: float) -> float:
    return measured / fitted - 1 if fitted > 0 else math.inf


CHARTED = (Metric.WALL, Metric.CPU, Metric.ALLOC_INCL)
"""Metrics whose growth fits get a chart; the other fits are listed in words."""


def view_growth(
    qualname: str,
    rows: list[GrowthRow],
    slices: list[ScenarioSlice],
    figures: SliceFigures | None = None,
) -> list[GrowthView]:
    """One view per fit (in ``rows`` order). Per scenario, the time fit (wall time, else CPU
    time) and the allocation fit get a chart — the median cost at each measured size, which is
    what the fit was made from, with the fitted curve on log–log axes — and a table of both."""
    figures = figures or SliceFigures()
    charted: set[tuple[str, Metric]] = set()
    timed: set[str] = set()  # scenarios whose time chart is taken
    for row in rows:
        if row.metric in CHARTED and not (row.metric.is_time and row.scenario_id in timed):
            charted.add((row.scenario_id, row.metric))
            if row.metric.is_time:
                timed.add(row.scenario_id)
    sized: dict[tuple[str, Metric], list[ScenarioSlice]] = {}  # the slices each chart plots
    for s in slices:
        if s.size != NO_SIZE and s.rows:
            sized.setdefault((s.scenario_id, s.metric), []).append(s)
    return [
        _growth_view(
            qualname,
            row,
            sized.get((row.scenario_id, row.metric), []),
            figures,
            (row.scenario_id, row.metric) in charted,
        )
        for row in rows
    ]


def _growth_view(
    qualname: str, row: GrowthRow, slices: list[ScenarioSlice], figures: SliceFigures, chart: bool
) -> GrowthView:
    """``slices``: the fit's scenario and metric at each measured size."""
    axis = row.size_axis or "n"
    label = metric_label(row.metric)
    quality = ngettext(
        "fitted to the medians at %(n)s size", "fitted to the medians at %(n)s sizes", row.points
    ) % {"n": row.points}
    if not chart:
        return GrowthView(
            label,
            row.scenario_id,
            axis,
            row.growth_class,
            growth_formula(row),
            quality,
            Markup(""),
            Markup(""),
        )
    fit = GrowthFit(  # only charts predict (most fits are listed in words)
        row.growth_class, row.intercept, row.coefficient, row.rel_error, row.r2, row.points
    )
    points = sorted((float(s.size), figures(s)[0]) for s in slices)
    title = _("%(name)s: %(metric)s by %(axis)s in %(scenario)s, fitted %(growth)s") % {
        "name": qualname,
        "metric": label,
        "axis": axis,
        "scenario": row.scenario_id,
        "growth": row.growth_class,
    }
    table: list[str] = []  # rows as rows() writes them: every cell is a formatted number,
    worst = (0.0, 0.0)  # which holds no character HTML escapes
    formatted = value_formatter(row.metric)  # medians and fitted values: all different
    for n, y in points:
        predicted = fit.predict(n)
        gap = _gap(y, predicted)
        worst = max(worst, (abs(gap), n))
        table.append(
            f"<tr><td>{n:g}</td><td>{formatted(y)}</td><td>{formatted(predicted)}</td>"
            f"<td>{f'{gap:+.0%}' if math.isfinite(gap) else '—'}</td></tr>"
        )
    if points and math.isfinite(worst[0]):
        quality += "; " + _(
            "the measured medians differ from the curve by up to %(gap)s (at %(axis)s = %(size)s)"
        ) % {"gap": f"{worst[0]:.0%}", "axis": axis, "size": f"{worst[1]:g}"}
    return GrowthView(
        metric=label,
        scenario_id=row.scenario_id,
        size_axis=axis,
        growth_class=row.growth_class,
        formula=growth_formula(row),
        quality=quality,
        point_rows=Markup("\n".join(table)),
        chart_svg=Markup(
            svg.growth_svg(
                points, fit, row.metric, title=title, size_axis=axis, words=graphic_words()
            )
        ),
    )
