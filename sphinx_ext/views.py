"""From database answers to display-ready values: formatted numbers, sentences and SVGs.

HTML templates, the plain-text fallback and the drill-down pages all read these views, so a
number looks the same wherever it appears. Formatting itself lives in :mod:`apiprof.format`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from markupsafe import Markup

from apiprof.db.query import ApiSummary, GrowthRow, ScenarioSlice
from apiprof.format import cost_hint, format_bucket_range, format_value, worth_showing
from apiprof.model.growth import GrowthFit
from apiprof.model.histogram import Histogram
from apiprof.model.records import NO_SIZE, Coverage, Metric
from apiprof.sphinx_ext import svg

TIME = "time"
"""Pseudo-metric: the summary's typical time (``ApiSummary.time_metric``: active wall time when
measured, else CPU time)."""

DEFAULT_METRICS = [TIME, str(Metric.ALLOC_INCL)]
KNOWN_METRICS = {TIME, *(str(m) for m in Metric)}
PERCENTILES = (10, 50, 90, 99)

_COVERAGE_TEXT = {
    Coverage.NO_ARGUMENTS: "needs arguments apiprof could not make up",
    Coverage.IMPORT_FAILED: "its module could not be imported",
    Coverage.BLOCKED: "the sandbox blocked an operation it tried",
    Coverage.CRASHED: "every call crashed or raised",
    Coverage.TIMED_OUT: "calls timed out",
    Coverage.MEMORY: "calls exceeded the memory cap",
    Coverage.SKIPPED: "skipped by policy",
}


def unprofiled_reason(summary: ApiSummary | None) -> str:
    """Why an API has no profile, in words ("" when nothing is known)."""
    if summary is None or not summary.coverage:
        return ""
    words = _COVERAGE_TEXT.get(summary.coverage, summary.coverage.replace("_", " "))
    return f"{words} ({summary.reason})" if summary.reason else words


def pick_histogram(summary: ApiSummary, name: str) -> tuple[Metric, Histogram] | None:
    """The histogram shown for a configured metric name ("time" or a :class:`Metric` value)."""
    if name == TIME:
        metric = summary.time_metric
    else:
        metric = Metric(name)
    hist = summary.histograms.get(metric) if metric else None
    return (metric, hist) if hist else None


def growth_phrase(row: GrowthRow | None) -> str:
    if row is None:
        return ""
    axis = f" in {row.size_axis}" if row.size_axis and row.size_axis != "n" else ""
    return f"{row.growth_class}{axis}"


@dataclass(frozen=True)
class MetricView:
    metric: Metric
    label: str
    median: str
    p10: str
    p90: str
    samples: int
    histogram_svg: Markup  # empty unless asked for (drawing is most of a summary's cost)
    strip_svg: Markup


def view_metric(
    qualname: str,
    metric: Metric,
    hist: Histogram,
    *,
    histogram: bool = True,
    strip: bool = False,
    large: bool = False,
) -> MetricView:
    median = hist.median
    p10, p90 = hist.percentile(10), hist.percentile(90)
    title = (
        f"{qualname}: {metric.label}, {hist.count} samples, median {format_value(metric, median)}, "
        f"p10–p90 {format_value(metric, p10)} – {format_value(metric, p90)}"
    )
    size = {"width": 480, "height": 120} if large else {}
    counts = hist.counts()
    return MetricView(
        metric=metric,
        label=metric.label,
        median=format_value(metric, median),
        p10=format_value(metric, p10),
        p90=format_value(metric, p90),
        samples=hist.count,
        histogram_svg=Markup(
            svg.histogram_svg(counts, metric, title=title, marker=median, **size)
            if histogram
            else ""
        ),
        strip_svg=Markup(svg.heat_strip_svg(counts, metric, title=title) if strip else ""),
    )


@dataclass(frozen=True)
class SummaryView:
    """Everything a summary block shows for one API."""

    qualname: str
    profiled: bool
    reason: str
    hint: str  # "≈3.2 µs · 1.1 KiB"
    growth: str  # "O(n)" or ""
    samples: int
    scenarios: int
    metrics: tuple[MetricView, ...]

    @property
    def compact_text(self) -> str:
        """``"≈3.2 µs · 1.1 KiB, O(n)"`` — the text fallback of the compact form."""
        if not self.profiled:
            return self.not_profiled_text
        return f"{self.hint}, {self.growth}" if self.growth else self.hint

    @property
    def not_profiled_text(self) -> str:
        return f"not profiled: {self.reason}" if self.reason else "not profiled"

    def full_text(self) -> str:
        """One sentence for non-HTML builders."""
        if not self.profiled:
            return f"Cost: {self.not_profiled_text}."
        parts = [f"{m.label} ≈{m.median} (p10–p90 {m.p10} – {m.p90})" for m in self.metrics]
        if self.growth:
            parts.append(f"grows {self.growth}")
        scenarios = (
            f" from {self.scenarios} scenario{'s' if self.scenarios != 1 else ''}"
            if self.scenarios
            else ""
        )
        parts.append(f"{self.samples} samples{scenarios}")
        return "Cost: " + " · ".join(parts) + "."


def view_summary(
    qualname: str, summary: ApiSummary | None, metric_names: list[str], *, compact: bool = False
) -> SummaryView:
    """The summary block's values; ``compact`` draws one heat strip, full draws a histogram per metric."""
    if summary is None or not summary.profiled:
        return SummaryView(
            qualname, False, unprofiled_reason(summary), "not profiled", "", 0, 0, ()
        )
    found = [f for name in metric_names if (f := pick_histogram(summary, name))]
    if compact:
        found = found[:1]
    metrics = tuple(
        view_metric(summary.qualname, metric, hist, histogram=not compact, strip=compact)
        for metric, hist in found
    )
    return SummaryView(
        qualname=summary.qualname,
        profiled=True,
        reason="",
        hint=cost_hint(summary.time_median_ns, summary.alloc_median_bytes),
        growth=growth_phrase(summary.growth),
        samples=summary.samples,
        scenarios=summary.scenarios,
        metrics=metrics,
    )


# -- drill-down detail ---------------------------------------------------------------------


@dataclass(frozen=True)
class BucketRow:
    index: int
    range: str
    count: int
    share: str
    colour: str


@dataclass(frozen=True)
class MetricDetail:
    view: MetricView
    mean: str
    stdev: str
    percentiles: tuple[tuple[int, str], ...]
    buckets: tuple[BucketRow, ...]


def detail_metric(qualname: str, metric: Metric, hist: Histogram) -> MetricDetail:
    total = hist.count
    return MetricDetail(
        view=view_metric(qualname, metric, hist, large=True),
        mean=format_value(metric, hist.mean),
        stdev=format_value(metric, hist.stdev),
        percentiles=tuple((q, format_value(metric, hist.percentile(q))) for q in PERCENTILES),
        buckets=tuple(
            BucketRow(
                index,
                format_bucket_range(metric, index),
                n,
                f"{n / total:.1%}",
                svg.bucket_colour(metric, index),
            )
            for index, n in hist.counts().items()
        ),
    )


@dataclass(frozen=True)
class ScenarioCell:
    median: str  # "" when the metric has no samples in this slice
    detail: str  # tooltip: p90 and sample count


@dataclass(frozen=True)
class ScenarioRow:
    scenario_id: str
    source: str
    description: str
    size: str
    span: int  # rows of this scenario (its sizes); 0 on all but its first row
    cells: tuple[ScenarioCell, ...]  # one per column of the table
    strip_svg: Markup


@dataclass(frozen=True)
class ScenarioTable:
    """One row per scenario and size, one column per metric: the medians side by side."""

    columns: tuple[str, ...]
    rows: tuple[ScenarioRow, ...]
    strips: bool  # a last column of time heat strips (several rows to compare)


def scenario_table(slices: list[ScenarioSlice]) -> ScenarioTable:
    """Pivot the per-(scenario, size, metric) slices into rows per scenario and size. A time
    heat strip closes each row when there are several rows to compare."""
    metrics = [
        m for m in Metric if any(s.metric is m and worth_showing(m, s.histogram) for s in slices)
    ]
    grouped: dict[tuple[str, int], dict[Metric, ScenarioSlice]] = {}
    for piece in slices:
        grouped.setdefault((piece.scenario_id, piece.size), {})[piece.metric] = piece
    spans = Counter(scenario_id for scenario_id, _ in grouped)
    time_metric = next((m for m in (Metric.WALL, Metric.CPU) if m in metrics), None)
    strips = time_metric is not None and len(grouped) > 1
    rows, seen = [], set()
    for (scenario_id, size), by_metric in grouped.items():
        first = next(iter(by_metric.values()))
        timed = by_metric.get(time_metric) if time_metric else None
        rows.append(
            ScenarioRow(
                scenario_id,
                first.source,
                first.description,
                "" if size == NO_SIZE else str(size),
                0 if scenario_id in seen else spans[scenario_id],
                tuple(_scenario_cell(m, by_metric.get(m)) for m in metrics),
                Markup(
                    svg.heat_strip_svg(
                        timed.histogram.counts(),
                        time_metric,
                        title=f"{scenario_id} {time_metric.label}",
                        width=120,
                    )
                    if strips and timed and timed.histogram
                    else ""
                ),
            )
        )
        seen.add(scenario_id)
    return ScenarioTable(tuple(m.label for m in metrics), tuple(rows), strips)


def _scenario_cell(metric: Metric, piece: ScenarioSlice | None) -> ScenarioCell:
    if piece is None or not worth_showing(metric, piece.histogram):
        return ScenarioCell("", "")
    hist = piece.histogram
    return ScenarioCell(
        format_value(metric, hist.median),
        f"p90 {format_value(metric, hist.percentile(90))} · {hist.count} samples",
    )


@dataclass(frozen=True)
class GrowthView:
    metric: str
    scenario_id: str
    growth_class: str
    formula: str
    quality: str
    chart_svg: Markup


def growth_formula(row: GrowthRow) -> str:
    a, b = format_value(row.metric, row.intercept), row.coefficient
    per_unit = format_value(row.metric, b) if b >= 1 else f"{b:.3g} {row.metric.unit}"
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
    qualname: str, rows: list[GrowthRow], slices: list[ScenarioSlice]
) -> list[GrowthView]:
    """One chart per fit (in ``rows`` order): median cost at each measured size (what the fit uses)
    with the fitted curve over it."""
    out = []
    for row in rows:
        points = sorted(
            (float(s.size), s.histogram.median)
            for s in slices
            if s.scenario_id == row.scenario_id
            and s.metric == row.metric
            and s.size != NO_SIZE
            and s.histogram
        )
        fit = GrowthFit(
            row.growth_class, row.intercept, row.coefficient, row.rel_error, row.r2, row.points
        )
        title = f"{qualname}: {row.metric.label} by {row.size_axis or 'n'} in {row.scenario_id}, fitted {row.growth_class}"
        out.append(
            GrowthView(
                metric=row.metric.label,
                scenario_id=row.scenario_id,
                growth_class=row.growth_class,
                formula=growth_formula(row),
                quality=f"±{row.rel_error:.0%} over {row.points} sizes, R² {row.r2:.2f}",
                chart_svg=Markup(
                    svg.growth_svg(
                        points, fit, row.metric, title=title, size_axis=row.size_axis or "n"
                    )
                ),
            )
        )
    return out
