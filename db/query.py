"""Reading profiles back: the questions the docs and the editor ask, answered from SQL sums.

"Typical time" is the median of active wall time (elapsed minus the probe overhead and the
time the thread was preempted, docs/mechanisms.rst); the thread-CPU metric is a sample of the calls (its
clock is a system call) and is the fallback when no wall time was recorded. "Typical
allocation" is the median inclusive allocation. Medians and p90s come from the sub-buckets
(within a few percent of the exact sample percentiles).

**Which calls "typical" stands for.** Pooling every input size would let whichever size got the
most samples decide the figure (cheap small inputs are measured far more often in a fixed time
budget). So when an API was measured at sizes, the typical figures are those of one stated
*reference size*: the measured size closest to :data:`REFERENCE_SIZE` (on a log scale), all
scenarios measured at that size pooled with equal weight (a scenario that got many more
samples, being cheap, does not decide the figure: :func:`~apiprof.model.pooling.pool_scenarios`).
``ApiSummary.reference_size`` says which; it is None when the API has only unsized scenarios,
which are then pooled so. Per-size figures are one call away (:func:`size_figures`). ``ApiSummary.histograms`` keeps the merge of everything;
``ApiSummary.typical`` (or :meth:`ApiSummary.at_reference`) holds the figures at the reference size.

**Consumption.** For APIs that return an iterator or generator, calling costs almost nothing
and consuming costs everything: ``consume_wall_ns``/``consume_alloc_bytes`` measure the call
plus exhausting what it returned, and are labelled so (``Metric.label``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Generic, TypeVar

from apiprof.db.breakdowns import (
    REFERENCE_SIZE,
    ScenarioSlice,
    pooled_histograms,
    reference_size,
    scenario_breakdown,
    scenario_breakdowns,
)
from apiprof.model.figures import Summarised
from apiprof.model.histogram import Histogram
from apiprof.model.records import Metric

if TYPE_CHECKING:  # the queries only execute SQL: readers pass a light schema.Reader
    from apiprof.db.figures import Pooled
    from apiprof.db.schema import Readable

H = TypeVar("H", bound=Summarised)

TIME_METRICS = (Metric.WALL, Metric.CPU)
__all__ = [  # re-exported: readers ask this module
    "REFERENCE_SIZE",
    "ScenarioSlice",
    "reference_size",
    "scenario_breakdown",
    "scenario_breakdowns",
]


@dataclass(frozen=True)
class GrowthRow:
    metric: Metric
    scenario_id: str
    growth_class: str
    intercept: float
    coefficient: float
    rel_error: float
    r2: float
    points: int
    size_axis: str


@dataclass
class ApiSummary(Generic[H]):
    """What one line of docs or one completion item needs to know about an API: its
    distributions as histograms, or as their stored figures (:mod:`apiprof.db.figures`)."""

    qualname: str
    module: str = ""
    kind: str = ""
    signature: str = ""
    summary: str = ""
    coverage: str = ""  # Coverage value; "" when never scanned
    reason: str = ""
    # every scenario, size and environment merged
    histograms: dict[Metric, H] = field(default_factory=dict)
    scenarios: int = 0
    growth: GrowthRow | None = None
    reference_size: int | None = None  # the input size "typical" stands for; None: unsized
    size_axis: str = ""  # the size parameter's name ("n") when reference_size is set
    # the typical figures' histograms: at ``reference_size`` when the API was measured at sizes
    typical: dict[Metric, H] = field(default_factory=dict)

    def at_reference(self) -> ApiSummary[H]:
        """This summary with the typical histograms in place of the merge over all sizes: every
        property (``time_median_ns``, ``alloc_median_bytes``...) then gives the figure at
        :attr:`reference_size`, which :attr:`reference_label` names. A summary built without
        typical histograms (by hand, or merged from several databases) is its own typical."""
        return replace(self, histograms=self.typical) if self.typical else self

    @property
    def reference_label(self) -> str:
        """What the typical figures stand for, for people: "at n=100", or "" when unsized."""
        if self.reference_size is None:
            return ""
        return f"at {self.size_axis or 'n'}={self.reference_size}"

    @property
    def consume_median_ns(self) -> float | None:
        """Median time to call and exhaust the returned iterator (None: not an iterator API)."""
        hist = self.histograms.get(Metric.CONSUME_WALL)
        return hist.median if hist else None

    @property
    def consume_alloc_median_bytes(self) -> float | None:
        hist = self.histograms.get(Metric.CONSUME_ALLOC)
        return hist.median if hist else None

    @property
    def profiled(self) -> bool:
        return bool(self.time_histogram or self.alloc_histogram)

    @property
    def time_histogram(self) -> H | None:
        for metric in TIME_METRICS:
            if self.histograms.get(metric):
                return self.histograms[metric]
        return None

    @property
    def time_metric(self) -> Metric | None:
        return next((m for m in TIME_METRICS if self.histograms.get(m)), None)

    @property
    def alloc_histogram(self) -> H | None:
        return self.histograms.get(Metric.ALLOC_INCL) or None

    @property
    def samples(self) -> int:
        hist = self.time_histogram or self.alloc_histogram
        return hist.count if hist else 0

    @property
    def time_median_ns(self) -> float | None:
        hist = self.time_histogram
        return hist.median if hist else None

    @property
    def time_p90_ns(self) -> float | None:
        hist = self.time_histogram
        return hist.percentile(90) if hist else None

    @property
    def alloc_median_bytes(self) -> float | None:
        hist = self.alloc_histogram
        return hist.median if hist else None


def resolve_name(db: Readable, name: str) -> str:
    """Canonical qualified name for ``name`` (follows re-export aliases; unknown names pass)."""
    row = db.execute("SELECT qualname FROM aliases WHERE alias = ?", [name]).fetchone()
    return row[0] if row else name


def histograms(
    db: Readable,
    qualname: str,
    *,
    metric: Metric | None = None,
    scenario_id: str | None = None,
    size: int | None = None,
    environment_id: str | None = None,
) -> dict[Metric, Histogram]:
    """Merged histograms per metric for one API, optionally restricted to a slice."""
    where: list[str] = ["qualname = ?"]
    params: list[object] = [qualname]
    for column, value in (
        ("metric", metric),
        ("scenario_id", scenario_id),
        ("size", size),
        ("environment_id", environment_id),
    ):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(str(value) if column == "metric" else value)
    condition = " AND ".join(where)
    out: dict[Metric, Histogram] = defaultdict(Histogram)
    for metric, *row in db.execute(
        f"SELECT metric, bucket, SUM(count), SUM(sum), SUM(sum_sq) FROM buckets WHERE {condition} "
        "GROUP BY metric, bucket",
        params,
    ):
        out[Metric(metric)].merge(Histogram.from_buckets([row]))
    if has_sub_buckets(db):
        for metric, *row in db.execute(
            f"SELECT metric, bucket, sub, SUM(count), SUM(sum), SUM(sum_sq) FROM sub_buckets "
            f"WHERE {condition} GROUP BY metric, bucket, sub",
            params,
        ):
            if Metric(metric) in out:
                out[Metric(metric)].merge(Histogram.from_buckets((), [row]))
    return dict(out)


def has_sub_buckets(db: Readable) -> bool:
    """Whether the file has sub-buckets (a later migration); older files answer from buckets alone."""
    return (
        db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sub_buckets'"
        ).fetchone()
        is not None
    )


def summary(db: Readable, name: str) -> ApiSummary | None:
    """Summary of one API by (possibly aliased) qualified name; None if the name is unknown."""
    qualname = resolve_name(db, name)
    found = summaries(db, [qualname])
    return found.get(qualname)


def module_summaries(db: Readable, module: str) -> dict[str, ApiSummary]:
    """All entry points whose canonical home is ``module`` (not its submodules)."""
    names = [
        r[0] for r in db.execute("SELECT qualname FROM entry_points WHERE module = ?", [module])
    ]
    return summaries(db, names)


def all_summaries(
    db: Readable,
    package: str | None = None,
    breakdowns: dict[str, list[ScenarioSlice]] | None = None,
    pooled: dict[str, Pooled] | None = None,
) -> dict[str, ApiSummary]:
    """Every known API (entry points and anything with buckets), optionally for one package;
    ``breakdowns`` and ``pooled`` as in :func:`summaries`."""
    if package is None:
        measured = "api_figures" if pooled is not None else "buckets"  # the smaller one
        names = [
            r[0]
            for r in db.execute(
                f"SELECT qualname FROM entry_points UNION SELECT DISTINCT qualname FROM {measured}"
            )
        ]
    else:
        names = [
            r[0]
            for r in db.execute("SELECT qualname FROM entry_points WHERE package = ?", [package])
        ]
    return summaries(db, names, breakdowns, pooled)


def summaries(
    db: Readable,
    qualnames: Iterable[str],
    breakdowns: dict[str, list[ScenarioSlice]] | None = None,
    pooled: dict[str, Pooled] | None = None,
) -> dict[str, ApiSummary]:
    """Batch form of :func:`summary` for canonical names: a handful of queries, not one per name.

    ``breakdowns`` (from :func:`scenario_breakdowns`, covering these names) are merged into the
    histograms instead of reading the buckets again: a reader that needs both reads once.
    ``pooled`` (:func:`~apiprof.db.figures.stored_pooled`) gives the stored figures instead."""
    qualnames = list(dict.fromkeys(qualnames))
    out: dict[str, ApiSummary] = {}
    for chunk_start in range(0, len(qualnames), 500):
        chunk = qualnames[chunk_start : chunk_start + 500]
        marks = ",".join("?" * len(chunk))
        for row in db.execute(
            f"SELECT qualname, module, kind, signature, summary FROM entry_points WHERE qualname IN ({marks})",
            chunk,
        ):
            out[row[0]] = ApiSummary(*row)
        for qualname, status, reason in db.execute(
            f"SELECT qualname, status, reason FROM coverage WHERE qualname IN ({marks})", chunk
        ):
            s = out.setdefault(qualname, ApiSummary(qualname))
            s.coverage, s.reason = status, reason
        read = breakdowns
        if pooled is None and read is None:
            read = scenario_breakdowns(db, chunk)
        axes = _size_axes(db, chunk)
        for qualname in chunk:
            figures: tuple[int | None, dict, dict]
            if pooled is not None:
                if qualname not in pooled:
                    continue
                figures = pooled[qualname]
            elif read is not None and read.get(qualname):
                figures = pooled_histograms(read[qualname])
            else:
                continue
            found = out.setdefault(qualname, ApiSummary(qualname))
            found.reference_size, found.typical, found.histograms = figures
            found.size_axis = axes.get(qualname, "") if found.reference_size is not None else ""
        slices = "slice_figures" if pooled is not None else "buckets"  # the same slices
        for qualname, n in db.execute(
            f"SELECT qualname, COUNT(DISTINCT scenario_id) FROM {slices} "
            f"WHERE qualname IN ({marks}) GROUP BY qualname",
            chunk,
        ):
            out[qualname].scenarios = n
        for qualname, fit in headline_growth(db, chunk).items():
            if qualname in out:
                out[qualname].growth = fit
    return out


def headline_growth(db: Readable, qualnames: Iterable[str]) -> dict[str, GrowthRow]:
    """The growth fit each API's summary shows (APIs without a fit are left out)."""
    qualnames = list(qualnames)
    out: dict[str, GrowthRow] = {}
    for start in range(0, len(qualnames), 500):
        for qualname, fits in _growth_rows(db, qualnames[start : start + 500]).items():
            if fit := _headline_growth(fits):
                out[qualname] = fit
    return out


def _size_axes(db: Readable, qualnames: list[str]) -> dict[str, str]:
    """The size parameter's name per API (from its sized scenarios; "n" when unnamed)."""
    marks = ",".join("?" * len(qualnames))
    return {
        qualname: axis or "n"
        for qualname, axis in db.execute(
            f"SELECT qualname, MAX(size_axis) FROM scenarios WHERE qualname IN ({marks}) "
            "AND size_axis != '' GROUP BY qualname",
            qualnames,
        )
    }


def _growth_rows(db: Readable, qualnames: list[str]) -> dict[str, list[GrowthRow]]:
    marks = ",".join("?" * len(qualnames))
    found: dict[str, list[GrowthRow]] = defaultdict(list)
    for row in db.execute(
        "SELECT qualname, metric, scenario_id, growth_class, intercept, coefficient, rel_error, r2, points, size_axis "
        f"FROM growth WHERE qualname IN ({marks})",
        qualnames,
    ):
        found[row[0]].append(GrowthRow(Metric(row[1]), *row[2:]))
    return found


def _headline_growth(fits: list[GrowthRow]) -> GrowthRow | None:
    """The fit a summary shows: time metrics first, then the most points, then the best fit."""
    order = {Metric.WALL: 0, Metric.CPU: 1, Metric.ALLOC_INCL: 2, Metric.ALLOC_EXCL: 3}
    return min(fits, key=lambda f: (order.get(f.metric, 9), -f.points, f.rel_error), default=None)


def growth(db: Readable, qualname: str) -> list[GrowthRow]:
    """Every growth fit stored for an API (one per metric and sized scenario), time first: metrics
    in their display order, then by scenario."""
    return growths(db, [qualname]).get(qualname, [])


def growths(db: Readable, qualnames: Iterable[str] | None = None) -> dict[str, list[GrowthRow]]:
    """:func:`growth` of many APIs (every API when None), one query per 500 names."""
    if qualnames is None:
        qualnames = [row[0] for row in db.execute("SELECT DISTINCT qualname FROM growth")]
    names = list(qualnames)
    order = {metric: position for position, metric in enumerate(Metric)}
    out: dict[str, list[GrowthRow]] = {}
    for start in range(0, len(names), 500):
        for qualname, fits in _growth_rows(db, names[start : start + 500]).items():
            out[qualname] = sorted(fits, key=lambda g: (order[g.metric], g.scenario_id))
    return out


@dataclass(frozen=True)
class SizeFigures:
    """One scenario at one size, one metric: the per-size figures behind "typical"."""

    scenario_id: str
    size: int  # NO_SIZE (-1) for unsized scenarios
    metric: Metric
    count: int
    median: float
    p90: float
    mean: float


def size_figures(
    db: Readable, qualname: str, metrics: Iterable[Metric] | None = None
) -> list[SizeFigures]:
    """Median, p90 and mean per scenario and size (sizes ascending), for the metrics asked for
    (default: all) — the figures one step away from the typical one."""
    wanted = set(metrics) if metrics is not None else set(Metric)
    out = []
    for piece in scenario_breakdown(db, qualname):
        if piece.metric not in wanted or not piece.rows:
            continue
        hist = piece.histogram
        median, p90 = hist.percentiles((50, 90))
        out.append(
            SizeFigures(
                piece.scenario_id, piece.size, piece.metric, hist.count, median, p90, hist.mean
            )
        )
    return out
