"""Stored growth charts: every charted fit drawn once, when the figures it plots are stored.

A drill-down page charts, per scenario, the time and allocation fits against the medians
measured at each size. Drawing them (a 41-point curve, ticks, dots, a table of sizes) was the
largest share of a docs build's drill-down pages, and every part of a chart but its title and
axis name is numbers. So every writer stores them (:func:`apiprof.db.store.refresh_derived`,
after the growth fits and the slice figures they are drawn from) and a build reads them.

They are made by the readers' own function (:func:`apiprof.growth_plot.plot_growth`) from the
stored slice medians, which are the ones a reader works out from the buckets
(:mod:`apiprof.db.figures`), so a page is the same bytes either way. :data:`CHARTS_VERSION`
says which drawing made them: a file whose charts an older drawing (or figures an older
computation) made is redrawn when opened read-write (:func:`refresh_if_stale`), and drawn at
build time until then (:func:`has_current_charts`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from apiprof.db.figures import FIGURES_VERSION, has_current_figures
from apiprof.growth_plot import ChartKey, GrowthPlot, charted, plot_growth
from apiprof.model.records import NO_SIZE, Metric

if TYPE_CHECKING:
    import sqlite_utils

    from apiprof.db.schema import Readable

CHARTS_VERSION = "1"
"""Which drawing made the stored charts; change it whenever :func:`plot_growth` or
:func:`apiprof.svg.growth_parts` draws differently (a test holds a known chart's bytes to catch
a forgotten change)."""
_MADE_BY = f"{CHARTS_VERSION}/{FIGURES_VERSION}"  # figures made another way: medians differ
_KEY = ("qualname", "scenario_id", "metric")
_PARTS = ("axes", "marks", "rows", "worst_gap", "worst_size")

StoredPlots = dict[str, dict[ChartKey, GrowthPlot]]
"""qualname → (scenario id, metric) → the chart of that fit."""


def create_table(db: sqlite_utils.Database) -> None:
    """The table (schema migration), empty: :func:`refresh_if_stale` fills it once every
    migration has run."""
    db.execute(
        "CREATE TABLE growth_charts (qualname TEXT NOT NULL, scenario_id TEXT NOT NULL, "
        "metric TEXT NOT NULL, axes TEXT NOT NULL, marks TEXT NOT NULL, rows TEXT NOT NULL, "
        f"worst_gap REAL, worst_size REAL NOT NULL, PRIMARY KEY ({', '.join(_KEY)})) WITHOUT ROWID"
    )


def refresh_charts(db: sqlite_utils.Database, qualnames: Iterable[str] | None = None) -> None:
    """Draw again the charts of ``qualnames`` (every API when None) from their stored fits and
    slice figures; the caller owns the transaction, after the figures are refreshed. Only a
    refresh of every API marks the charts as made by this drawing."""
    from apiprof.db.query import growths

    names = None if qualnames is None else sorted(set(qualnames))
    if names == [] or "growth_charts" not in db.table_names():
        return
    if names is None:
        db.execute("DELETE FROM growth_charts")
    for start in range(0, len(names or []), 500):
        chunk = (names or [])[start : start + 500]
        marks = ",".join("?" * len(chunk))
        db.execute(f"DELETE FROM growth_charts WHERE qualname IN ({marks})", chunk)
    fits = growths(db, names)
    medians = _sized_medians(db, names)
    rows = []
    for qualname, found in fits.items():
        keys = charted(found)
        for fit in found:
            if (fit.scenario_id, fit.metric) in keys:
                points = sorted(medians.get((qualname, fit.scenario_id, fit.metric), []))
                plot = plot_growth(fit, points)
                parts = (getattr(plot, part) for part in _PARTS)
                rows.append((qualname, fit.scenario_id, str(fit.metric), *parts))
    columns = (*_KEY, *_PARTS)
    db.conn.executemany(
        f"INSERT INTO growth_charts ({', '.join(columns)}) "
        f"VALUES ({', '.join('?' * len(columns))})",
        rows,
    )
    if names is None:
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('charts_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [_MADE_BY],
        )


def _sized_medians(
    db: sqlite_utils.Database, names: list[str] | None
) -> dict[tuple[str, str, Metric], list[tuple[float, float]]]:
    """(size, median) of every measured size of every (API, scenario, metric), as a reader's
    slices give them: sized slices with calls, a NULL (NaN) median kept as NaN."""
    where, params = "size != ? AND count > 0", [NO_SIZE]  # type: str, list[object]
    if names is not None:
        where += f" AND qualname IN ({','.join('?' * len(names))})"
        params += names
    out: dict[tuple[str, str, Metric], list[tuple[float, float]]] = defaultdict(list)
    for qualname, scenario_id, metric, size, median in db.execute(
        f"SELECT qualname, scenario_id, metric, size, p50 FROM slice_figures WHERE {where}", params
    ):
        point = (float(size), math.nan if median is None else median)
        out[(qualname, scenario_id, Metric(metric))].append(point)
    return out


def has_current_charts(db: Readable) -> bool:
    """Whether the file holds charts this apiprof draws, from figures it computes (else draw
    them from the slices)."""
    if "growth_charts" not in db.table_names() or not has_current_figures(db):
        return False
    row = db.execute("SELECT value FROM meta WHERE key = 'charts_version'").fetchone()
    return row is not None and row[0] == _MADE_BY


def refresh_if_stale(db: sqlite_utils.Database) -> None:
    """Draw every chart when the table is new or another drawing made them (read-write opens,
    after the figures are current)."""
    from apiprof.db.schema import immediate

    if "growth_charts" in db.table_names() and not has_current_charts(db):
        with immediate(db):
            if not has_current_charts(db):  # another process may have done it meanwhile
                refresh_charts(db)


def stored_plots(db: Readable) -> StoredPlots:
    """Every stored chart, by API and fit."""
    out: StoredPlots = defaultdict(dict)
    metrics = {str(m): m for m in Metric}
    for qualname, scenario_id, metric, *parts in db.execute(
        f"SELECT {', '.join(_KEY)}, {', '.join(_PARTS)} FROM growth_charts"
    ):
        out[qualname][(scenario_id, metrics[metric])] = GrowthPlot(*parts)
    return dict(out)
