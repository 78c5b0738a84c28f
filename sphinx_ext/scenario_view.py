"""A drill-down page's scenario table: one row per scenario and size, one column per metric,
the medians side by side (p90 and calls in each cell's tooltip).

A build writes ~10k of these cells, so the rows are written directly, as
:func:`~apiprof.sphinx_ext.rows.rows` writes them, without its per-cell checks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from markupsafe import Markup

from apiprof.format import value_formatter, worth_showing
from apiprof.model.figures import STORED_PERCENTILES, Figures
from apiprof.model.records import NO_SIZE, Metric, ScenarioSource
from apiprof.sphinx_ext.i18n import _
from apiprof.sphinx_ext.rows import text
from apiprof.sphinx_ext.views import metric_label, source_label

if TYPE_CHECKING:
    from apiprof.db.query import ScenarioSlice

_MEDIAN, _P90 = STORED_PERCENTILES.index(50), STORED_PERCENTILES.index(90)
_IO = frozenset(m for m in Metric if m.is_io)
_FORMATTERS = {m: value_formatter(m) for m in Metric}
_METRICS = {str(m): m for m in Metric}


class SliceFigures:
    """The median and p90 of scenario slices, each computed once (on first use) for a page's
    scenario table and growth charts."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[ScenarioSlice, tuple[float, ...]]] = {}

    def __call__(self, piece: ScenarioSlice) -> tuple[float, ...]:
        """(median, p90) of ``piece``'s histogram (stored figures are read, not remembered)."""
        if type(piece.rows) is Figures:  # stored: read by position (~10k cells a build)
            quantiles = piece.rows.quantiles
            return quantiles[_MEDIAN], quantiles[_P90]
        found = self._known.get(id(piece))
        if found is None or found[0] is not piece:
            found = self._known[id(piece)] = (piece, piece.rows.percentiles((50, 90)))
        return found[1]


@dataclass(frozen=True)
class ScenarioTable:
    """One row per scenario and size, one column per metric: the medians side by side."""

    columns: tuple[str, ...]
    body: Markup  # "" when there is no scenario


Grouped = dict[tuple[str, int], tuple[str, str, dict[Metric, str]]]
"""(scenario id, size) → the scenario's source and description, and the row's cells by metric."""


def _tip() -> str:
    """A cell's tooltip, translated and escaped once per table, not once per cell (what it is
    filled with, formatted numbers and counts, holds no character HTML escapes)."""
    return text(_("p90 %(p90)s · %(n)s calls"))


def scenario_table(
    slices: list[ScenarioSlice], figures: SliceFigures | None = None
) -> ScenarioTable:
    """Pivot the per-(scenario, size, metric) slices into rows per scenario and size. The rows
    are written as :func:`~apiprof.sphinx_ext.rows.rows` writes them, without its per-cell
    checks: a build writes ~10k of these cells."""
    figures = figures or SliceFigures()
    grouped: Grouped = {}
    tip, formatters = _tip(), _FORMATTERS
    for piece in slices:
        metric, rows = piece.metric, piece.rows
        key = (piece.scenario_id, piece.size)
        entry = grouped.get(key)
        if entry is None:  # the first slice names the row's source
            entry = grouped[key] = (piece.source, piece.description, {})
        if type(rows) is Figures:  # stored figures (~15k a build): worth_showing, in line
            if not rows.count or (rows.total == 0 and metric in _IO):
                continue
            median, p90 = rows.quantiles[_MEDIAN], rows.quantiles[_P90]
        elif worth_showing(metric, rows):
            median, p90 = figures(piece)
        else:
            continue
        # the median, with p90 and the number of calls as its tooltip; a formatted number
        # holds no character HTML escapes (digits, units, "—")
        formatted = formatters[metric]
        title = tip % {"p90": formatted(p90), "n": rows.count}
        entry[2][metric] = f'<td title="{title}">{formatted(median)}</td>'
    return _table(grouped)


def stored_scenario_table(
    cells: list[tuple], scenarios: dict[str, tuple[str, str]]
) -> ScenarioTable:
    """:func:`scenario_table` of an API's stored cells (:class:`~apiprof.db.figures.StoredCells`:
    rows of qualname, scenario id, size, metric, calls, total, median, p90 in slice order), the
    same bytes without a slice object per row."""
    grouped: Grouped = {}
    tip, formatters, metrics = _tip(), _FORMATTERS, _METRICS
    for _qualname, scenario_id, size, metric_name, count, total, median, p90 in cells:
        key = (scenario_id, size)
        entry = grouped.get(key)
        if entry is None:
            entry = grouped[key] = (*scenarios.get(scenario_id, ("", "")), {})
        metric = metrics[metric_name]
        if not count or (total == 0 and metric in _IO):  # worth_showing, in line
            continue
        formatted = formatters[metric]
        title = tip % {"p90": formatted(p90), "n": count}
        entry[2][metric] = f'<td title="{title}">{formatted(median)}</td>'
    return _table(grouped)


def _table(grouped: Grouped) -> ScenarioTable:
    present = {metric for _source, _about, cells in grouped.values() for metric in cells}
    metrics = [m for m in Metric if m in present]
    spans = Counter(scenario_id for scenario_id, _size in grouped)
    missing = "<td>—</td>"
    body, seen = [], set()
    for (scenario_id, size), (source, about, cells) in grouped.items():
        head = ""
        if scenario_id not in seen:  # the scenario's name and source span its sizes' rows
            span = spans[scenario_id]
            described = text(about)
            titled, small = (f' title="{described}"', f"<br><small>{described}</small>")
            if not about:
                titled = small = ""
            head = (
                f'<td rowspan="{span}"{titled}><code>{text(scenario_id)}</code>{small}</td>'
                f'<td rowspan="{span}">{text(source_label(source, scenario_id))}</td>'
            )
        collected = ScenarioSource.COLLECTED in (source, scenario_id)
        attrs = ' class="apiprof-source-collected"' if collected else ""
        measured = "".join([cells.get(m, missing) for m in metrics])
        size_cell = "<td></td>" if size == NO_SIZE else f"<td>{size}</td>"
        body.append(f"<tr{attrs}>{head}{size_cell}{measured}</tr>")
        seen.add(scenario_id)
    return ScenarioTable(tuple(metric_label(m) for m in metrics), Markup("\n".join(body)))
