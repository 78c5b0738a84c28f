"""Growth with input size on a drill-down page: per stored fit, its formula and quality in
words, and for the time and allocation fits a chart of the measured medians against the fitted
curve (log–log) with a table of both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from markupsafe import Markup

from apiprof import svg
from apiprof.format import value_formatter
from apiprof.growth_plot import ChartKey, GrowthPlot, charted, plot_growth
from apiprof.model.records import NO_SIZE
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


def view_growth(
    qualname: str,
    rows: list[GrowthRow],
    slices: list[ScenarioSlice],
    figures: SliceFigures | None = None,
    plots: dict[ChartKey, GrowthPlot] | None = None,
) -> list[GrowthView]:
    """One view per fit (in ``rows`` order). Per scenario, the time fit (wall time, else CPU
    time) and the allocation fit get a chart — the median cost at each measured size, which is
    what the fit was made from, with the fitted curve on log–log axes — and a table of both.
    ``plots``: the API's charts as a scan stored them (None: work them out from ``slices``)."""
    if plots is None:
        plots = _plots(rows, slices, figures or SliceFigures())
    return [_growth_view(qualname, row, plots.get((row.scenario_id, row.metric))) for row in rows]


def _plots(
    rows: list[GrowthRow], slices: list[ScenarioSlice], figures: SliceFigures
) -> dict[ChartKey, GrowthPlot]:
    """The charts of the fits that get one, from the medians at each measured size."""
    keys = charted(rows)
    sized: dict[ChartKey, list[ScenarioSlice]] = {}  # the slices each chart plots
    for s in slices:
        if s.size != NO_SIZE and s.rows:
            sized.setdefault((s.scenario_id, s.metric), []).append(s)
    return {
        (row.scenario_id, row.metric): plot_growth(
            row, sorted((float(s.size), figures(s)[0]) for s in sized.get(key, []))
        )
        for row in rows
        if (key := (row.scenario_id, row.metric)) in keys
    }


def _growth_view(qualname: str, row: GrowthRow, plot: GrowthPlot | None) -> GrowthView:
    axis = row.size_axis or "n"
    label = metric_label(row.metric)
    quality = ngettext(
        "fitted to the medians at %(n)s size", "fitted to the medians at %(n)s sizes", row.points
    ) % {"n": row.points}
    if plot is None:
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
    title = _("%(name)s: %(metric)s by %(axis)s in %(scenario)s, fitted %(growth)s") % {
        "name": qualname,
        "metric": label,
        "axis": axis,
        "scenario": row.scenario_id,
        "growth": row.growth_class,
    }
    if plot.worst_gap is not None:
        quality += "; " + _(
            "the measured medians differ from the curve by up to %(gap)s (at %(axis)s = %(size)s)"
        ) % {"gap": f"{plot.worst_gap:.0%}", "axis": axis, "size": f"{plot.worst_size:g}"}
    return GrowthView(
        metric=label,
        scenario_id=row.scenario_id,
        size_axis=axis,
        growth_class=row.growth_class,
        formula=growth_formula(row),
        quality=quality,
        point_rows=Markup(plot.rows),
        chart_svg=Markup(
            svg.growth_chart(
                plot.axes, plot.marks, title=title, size_axis=axis, words=graphic_words()
            )
        ),
    )
