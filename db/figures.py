"""Stored figures: every slice's and every API's printed numbers, kept beside the buckets.

Readers print medians, p90s and counts of tens of thousands of (API, metric, scenario, size)
slices, environments merged, and each API's pooled summary. Working them out from ~100k bucket
and sub-bucket rows at every docs build cost more than the rest of the Sphinx extension, so
every writer (:func:`apiprof.db.store.refresh_derived`: scans, ``apiprof merge``, collection
ingest and sync) refreshes the figures of the APIs it touched, in its own transaction, and a
reader reads a few thousand small rows.

The figures are made only by the readers' own functions — :func:`~apiprof.db.query.summaries`
over :func:`~apiprof.db.breakdowns.scenario_breakdowns` (the pooling every docs build did), and
:func:`~apiprof.model.figures.figures_of` (each figure by the histogram's own method) — so they
are the numbers a reader computing from the buckets prints. :data:`FIGURES_VERSION` says which
computation made them: a file whose figures an older computation made is refreshed when opened
read-write (:func:`refresh_if_stale`) and read from its buckets until then
(:func:`has_current_figures`).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING

from apiprof.model.figures import COLUMNS, Figures, figures_of
from apiprof.model.records import Metric

if TYPE_CHECKING:
    import sqlite_utils

    from apiprof.db.breakdowns import ScenarioSlice
    from apiprof.db.schema import Readable

FIGURES_VERSION = "2"  # 2: typical figures weigh scenarios the same (model/pooling.py)
"""Which computation made the stored figures; change it whenever :func:`figures_of`, the
percentile estimate or the pooling of summaries changes (a test holds known figures of a fixed
histogram to catch a forgotten change)."""

SLICE_KEY = ("qualname", "scenario_id", "size", "metric")  # the order readers list slices in
API_KEY = ("qualname", "pool", "metric")
ALL, TYPICAL = "all", "typical"
"""``api_figures.pool``: every scenario and size pooled, or the typical (reference-size) pool."""

Pooled = tuple[int | None, dict[Metric, Figures], dict[Metric, Figures]]
"""(reference size, typical figures, figures of everything pooled) — as
:func:`~apiprof.db.breakdowns.pooled_histograms` answers with histograms."""

_FIGURE_SQL = (
    "count INTEGER NOT NULL, total REAL NOT NULL, mean REAL, stdev REAL, "
    + "".join(f"{name} REAL, " for name in COLUMNS[4:-1])
    + "buckets TEXT NOT NULL"
)


def create_tables(db: sqlite_utils.Database) -> None:
    """The two tables (schema migration), empty: :func:`refresh_if_stale` fills them once
    every migration has run, so the figures are made by code that knows the whole schema."""
    db.execute(
        "CREATE TABLE slice_figures (qualname TEXT NOT NULL, scenario_id TEXT NOT NULL, "
        f"size INTEGER NOT NULL, metric TEXT NOT NULL, {_FIGURE_SQL}, "
        f"PRIMARY KEY ({', '.join(SLICE_KEY)})) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE api_figures (qualname TEXT NOT NULL, pool TEXT NOT NULL, "
        f"metric TEXT NOT NULL, position INTEGER NOT NULL, reference_size INTEGER, {_FIGURE_SQL}, "
        f"PRIMARY KEY ({', '.join(API_KEY)})) WITHOUT ROWID"
    )


def refresh_figures(db: sqlite_utils.Database, qualnames: Iterable[str] | None = None) -> None:
    """Work out again the figures of ``qualnames`` (every API when None) from their buckets;
    the caller owns the transaction. APIs left without buckets lose their figures. Only a
    refresh of every API marks the figures as made by this computation."""
    from apiprof.db.query import scenario_breakdowns, summaries

    names = None if qualnames is None else sorted(set(qualnames))
    if names == [] or "slice_figures" not in db.table_names():
        return
    for table in ("slice_figures", "api_figures"):
        if names is None:
            db.execute(f"DELETE FROM {table}")
        for start in range(0, len(names or []), 500):
            chunk = (names or [])[start : start + 500]
            db.execute(
                f"DELETE FROM {table} WHERE qualname IN ({','.join('?' * len(chunk))})", chunk
            )
    breakdowns = scenario_breakdowns(db, names)
    slice_rows = [
        (
            qualname,
            piece.scenario_id,
            piece.size,
            str(piece.metric),
            *figures_of(piece.histogram).columns(),
        )
        for qualname, slices in breakdowns.items()
        for piece in slices
    ]
    api_rows = [  # position: the order of the summary's metrics, which pages keep
        (qualname, pool, str(metric), position, summary.reference_size, *figures_of(hist).columns())
        for qualname, summary in summaries(db, list(breakdowns), breakdowns).items()
        for pool, pooled in ((ALL, summary.histograms), (TYPICAL, summary.typical))
        for position, (metric, hist) in enumerate(pooled.items())
    ]
    for table, key, rows in (
        ("slice_figures", SLICE_KEY, slice_rows),
        ("api_figures", (*API_KEY, "position", "reference_size"), api_rows),
    ):
        columns = (*key, *COLUMNS)
        db.conn.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            rows,
        )
    if names is None:
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('figures_version', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [FIGURES_VERSION],
        )


def has_current_figures(db: Readable) -> bool:
    """Whether the file holds figures this apiprof's computation made (else read the buckets)."""
    if "api_figures" not in db.table_names():
        return False
    row = db.execute("SELECT value FROM meta WHERE key = 'figures_version'").fetchone()
    return row is not None and row[0] == FIGURES_VERSION


def refresh_if_stale(db: sqlite_utils.Database) -> None:
    """Work out every figure when the tables are new or an older computation made them
    (read-write opens, after the migrations)."""
    from apiprof.db.schema import immediate

    if "api_figures" in db.table_names() and not has_current_figures(db):
        with immediate(db):
            if not has_current_figures(db):  # another process may have done it meanwhile
                refresh_figures(db)


class StoredSlices:
    """Every API's stored slice figures, held as the rows read and made into
    :class:`~apiprof.db.breakdowns.ScenarioSlice` records — as
    :func:`~apiprof.db.breakdowns.scenario_breakdowns` gives them, in the same order — when an
    API's are asked for. A docs build holds every slice for the whole build, and as ~30k
    records they lengthened each of the build's full cycle collections by a quarter; rows of
    plain values are tuples the collector stops tracking."""

    def __init__(self, db: Readable) -> None:
        from apiprof.db.breakdowns import scenario_sources

        self.scenarios = scenario_sources(db, None)
        rows = db.execute(
            f"SELECT {', '.join(SLICE_KEY)}, {', '.join(COLUMNS)} FROM slice_figures "
            f"ORDER BY {', '.join(SLICE_KEY)}"  # the primary key's order: no sorting
        )
        # grouped by qualname, which the rows arrive sorted by (groupby: no Python per row)
        self.rows: dict[str, list[tuple]] = {
            qualname: list(group) for qualname, group in groupby(rows, itemgetter(0))
        }

    def __contains__(self, qualname: str) -> bool:
        return qualname in self.rows

    def slices(self, qualname: str) -> list[ScenarioSlice]:
        from apiprof.db.breakdowns import ScenarioSlice

        out = []
        scenarios, metrics = self.scenarios, _METRICS
        for row in self.rows.get(qualname, ()):
            # the usual row (one with calls: no NULLs) by position, without _figures' unpacking
            figures = (
                Figures(row[_K], row[_K + 1], row[_K + 2], row[_K + 3], row[_K + 4 : -1], row[-1])
                if row[_K]
                else Figures.from_columns(row[_K:])
            )
            source, description = scenarios.get(row[1], ("", ""))
            out.append(ScenarioSlice(row[1], source, description, row[2], metrics[row[3]], figures))
        return out


class StoredCells:
    """Every API's stored slice medians and p90s as rows of plain values — qualname, scenario
    id, size, metric, calls, total, median, p90, in :class:`StoredSlices` order — and every
    scenario's (source, description): all a drill-down page reads of its slices when its growth
    charts are stored too (:mod:`apiprof.db.charts`). Reading five columns fewer per slice, and
    making no object per row, is a third of what reading the slices costs."""

    def __init__(self, db: Readable) -> None:
        from apiprof.db.breakdowns import scenario_sources

        self.scenarios = scenario_sources(db, None)
        rows = db.execute(
            f"SELECT {', '.join(SLICE_KEY)}, count, total, p50, p90 FROM slice_figures "
            f"ORDER BY {', '.join(SLICE_KEY)}"
        )
        self.rows: dict[str, list[tuple]] = {
            qualname: list(group) for qualname, group in groupby(rows, itemgetter(0))
        }


_METRICS = {str(m): m for m in Metric}
_K = len(SLICE_KEY)  # a slice row: its key, then count, total, mean, stdev, quantiles, buckets


def _figures(columns: list) -> Figures:
    """:meth:`Figures.from_columns`, without its NULL checks for the usual row (one with
    calls: no NULLs) — a docs build reads thousands."""
    if not columns[0]:
        return Figures.from_columns(columns)
    count, total, mean, stdev, *quantiles, bucket_counts = columns
    return Figures(count, total, mean, stdev, tuple(quantiles), bucket_counts)


def stored_pooled(db: Readable) -> dict[str, Pooled]:
    """Every API's stored summary figures, as :func:`~apiprof.db.query.summaries` takes them."""
    out: dict[str, Pooled] = {}
    for qualname, pool, metric, size, *columns in db.execute(
        f"SELECT {', '.join(API_KEY)}, reference_size, {', '.join(COLUMNS)} FROM api_figures "
        "ORDER BY qualname, pool, position"
    ):
        _size, typical, everything = out.setdefault(qualname, (size, {}, {}))
        (typical if pool == TYPICAL else everything)[_METRICS[metric]] = _figures(columns)
    return out
