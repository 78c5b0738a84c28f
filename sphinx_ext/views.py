"""From database answers to display-ready values: formatted numbers, sentences and SVGs.

HTML templates, the plain-text fallback and the drill-down pages all read these views, so a
number looks the same wherever it appears. Formatting itself lives in :mod:`apiprof.format`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from markupsafe import Markup

from apiprof.db.query import ApiSummary, GrowthRow, ScenarioSlice
from apiprof.engine.growth import GrowthFit
from apiprof.engine.histogram import Histogram
from apiprof.engine.records import NO_SIZE, Coverage, Metric
from apiprof.format import cost_hint, format_bucket_range, format_value, worth_showing
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
    qualname: str, metric: Metric, hist: Histogram, *, histogram: bool = True, strip: bool = False, large: bool = False
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
        histogram_svg=Markup(svg.histogram_svg(counts, metric, title=title, marker=median, **size) if histogram else ""),
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
        scenarios = f" from {self.scenarios} scenario{'s' if self.scenarios != 1 else ''}" if self.scenarios else ""
        parts.append(f"{self.samples} samples{scenarios}")
        return "Cost: " + " · ".join(parts) + "."


def view_summary(
    qualname: str, summary: ApiSummary | None, metric_names: list[str], *, compact: bool = False
) -> SummaryView:
    """The summary block's values; ``compact`` draws one heat strip, full draws a histogram per metric."""
    if summary is None or not summary.profiled:
        return SummaryView(qualname, False, unprofiled_reason(summary), "not profiled", "", 0, 0, ())
    found = [f for name in metric_names if (f := pick_histogram(summary, name))]
    if compact:
        found = found[:1]
    metrics = tuple(
        view_metric(summary.qualname, metric, hist, histogram=not compact, strip=compact) for metric, hist in found
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
class ScenarioRow:
    scenario_id: str
    source: str
    description: str
    size: str
    metric: str
    samples: int
    median: str
    p90: str
    strip_svg: Markup


def scenario_rows(slices: list[ScenarioSlice]) -> list[ScenarioRow]:
    """Table rows per scenario and size; a strip is drawn only where a metric has several slices
    (a lone slice would repeat the distribution shown above it)."""
    per_metric = Counter(s.metric for s in slices if s.histogram)
    return [
        ScenarioRow(
            s.scenario_id,
            s.source,
            s.description,
            "" if s.size == NO_SIZE else str(s.size),
            s.metric.label,
            s.histogram.count,
            format_value(s.metric, s.histogram.median),
            format_value(s.metric, s.histogram.percentile(90)),
            Markup(
                svg.heat_strip_svg(s.histogram.counts(), s.metric, title=f"{s.scenario_id} {s.metric.label}", width=120)
                if per_metric[s.metric] > 1
                else ""
            ),
        )
        for s in slices
        if worth_showing(s.metric, s.histogram)
    ]


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
    term = {"O(log n)": f"ln {n}", "O(n)": n, "O(n log n)": f"{n}·ln {n}", "O(n^2)": f"{n}²"}[row.growth_class]
    return f"≈ {a} + {per_unit} · {term}"


def view_growth(qualname: str, rows: list[GrowthRow], slices: list[ScenarioSlice]) -> list[GrowthView]:
    """One chart per fit: median cost at each measured size (what the fit uses) with the fitted curve over it."""
    out = []
    for row in rows:
        points = sorted(
            (float(s.size), s.histogram.median)
            for s in slices
            if s.scenario_id == row.scenario_id and s.metric == row.metric and s.size != NO_SIZE and s.histogram
        )
        fit = GrowthFit(row.growth_class, row.intercept, row.coefficient, row.rel_error, row.r2, row.points)
        title = f"{qualname}: {row.metric.label} by {row.size_axis or 'n'} in {row.scenario_id}, fitted {row.growth_class}"
        out.append(
            GrowthView(
                metric=row.metric.label,
                scenario_id=row.scenario_id,
                growth_class=row.growth_class,
                formula=growth_formula(row),
                quality=f"±{row.rel_error:.0%} over {row.points} sizes, R² {row.r2:.2f}",
                chart_svg=Markup(
                    svg.growth_svg(points, fit, row.metric, title=title, size_axis=row.size_axis or "n")
                ),
            )
        )
    return out
