"""From database answers to display-ready values: formatted numbers, sentences and SVGs.

HTML templates, the plain-text fallback and the drill-down pages all read these views, so a
number looks the same wherever it appears. Formatting itself lives in :mod:`apiprof.format`;
the words go through :mod:`apiprof.sphinx_ext.i18n`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from markupsafe import Markup

from apiprof import svg
from apiprof.format import format_bucket_range, format_value, worth_showing
from apiprof.model.figures import Summarised
from apiprof.model.growth import GROWTH_CLASSES
from apiprof.model.histogram import Histogram
from apiprof.model.records import Coverage, Metric, ScenarioSource
from apiprof.sphinx_ext.i18n import _, graphic_words, ngettext
from apiprof.sphinx_ext.profiles import is_collected, merge_by_metric
from apiprof.sphinx_ext.rows import rows, text

if TYPE_CHECKING:
    from apiprof.db.query import ApiSummary, GrowthRow, ScenarioSlice

TIME = "time"
"""Pseudo-metric: the summary's typical time (``ApiSummary.time_metric``: active wall time when
measured, else CPU time)."""

DEFAULT_METRICS = [TIME, str(Metric.ALLOC_INCL)]
KNOWN_METRICS = {TIME, *(str(m) for m in Metric)}
PERCENTILES = (10, 50, 90, 99)


# The label functions translate only the words they return (a drill-down page asks for
# thousands of labels); each case keeps its literal ``_()`` call for message extraction.


def metric_label(metric: Metric) -> str:
    match metric:
        case Metric.WALL:
            return _("wall time")
        case Metric.CPU:
            return _("CPU time (sampled calls)")
        case Metric.ALLOC_INCL:
            return _("allocated (inclusive)")
        case Metric.ALLOC_EXCL:
            return _("allocated (exclusive)")
        case Metric.CALLS:
            return _("calls per run")
        case Metric.IO_READ:
            return _("I/O read")
        case Metric.IO_WRITE:
            return _("I/O written")
        case Metric.CONSUME_WALL:
            return _("wall time to call and consume the returned iterator")
        case Metric.CONSUME_ALLOC:
            return _("allocated to call and consume the returned iterator")
    raise KeyError(metric)


def coverage_text(coverage: str) -> str:
    match coverage:
        case Coverage.NO_ARGUMENTS:
            return _("needs arguments apiprof could not make up")
        case Coverage.IMPORT_FAILED:
            return _("its module could not be imported")
        case Coverage.BLOCKED:
            return _("the sandbox blocked an operation it tried")
        case Coverage.CRASHED:
            return _("every call crashed or raised")
        case Coverage.TIMED_OUT:
            return _("calls timed out")
        case Coverage.MEMORY:
            return _("calls exceeded the memory cap")
        case Coverage.SKIPPED:
            return _("skipped by policy")
    return coverage.replace("_", " ")


def source_label(source: str, scenario_id: str = "") -> str:
    """Where a scenario's numbers come from, in words: the lab's kinds of scenario, or real
    programs (in-the-wild collection)."""
    if ScenarioSource.COLLECTED in (source, scenario_id):
        return _("measured in real programs")
    match source:
        case ScenarioSource.FILE:
            return _("lab scan: scenario file")
        case ScenarioSource.DOCSTRING:
            return _("lab scan: docstring example")
        case ScenarioSource.SYNTHESIZED:
            return _("lab scan: made-up arguments")
        case ScenarioSource.TESTS:
            return _("lab scan: test suite")
    return _("lab scan")


def unprofiled_reason(summary: ApiSummary | None) -> str:
    """Why an API has no profile, in words ("" when nothing is known)."""
    if summary is None or not summary.coverage:
        return ""
    words = coverage_text(summary.coverage)
    return f"{words} ({summary.reason})" if summary.reason else words


def pick_histogram(summary: ApiSummary, name: str) -> tuple[Metric, Summarised] | None:
    """The histogram shown for a configured metric name ("time" or a :class:`Metric` value)."""
    metric = summary.time_metric if name == TIME else Metric(name)
    hist = summary.histograms.get(metric) if metric else None
    return (metric, hist) if metric and hist else None


def growth_phrase(row: GrowthRow | None) -> str:
    if row is None:
        return ""
    axis = f" ({row.size_axis})" if row.size_axis and row.size_axis != "n" else ""
    return f"{row.growth_class}{axis}"


def growth_rank(row: GrowthRow | None) -> int:
    """Sort key of a growth class by complexity (O(1) < O(log n) < … < O(2^n)); -1 for none."""
    if row is None or row.growth_class not in GROWTH_CLASSES:
        return -1
    return GROWTH_CLASSES.index(row.growth_class)


@dataclass(frozen=True)
class Figure:
    """One labelled number of the compact line: ``time ≈1.3 µs``."""

    label: str
    value: str


def summary_figures(summary: ApiSummary) -> tuple[Figure, ...]:
    """The typical time and allocation: at the reference size when the API was measured at
    sizes (the last figure says which), so no size's share of the samples decides the number."""
    typical = summary.at_reference()
    figures = []
    if typical.time_median_ns is not None:
        figures.append(Figure(_("time"), "≈" + format_value(Metric.WALL, typical.time_median_ns)))
    if typical.alloc_median_bytes is not None:
        figures.append(
            Figure(_("allocated"), format_value(Metric.ALLOC_INCL, typical.alloc_median_bytes))
        )
    if figures and summary.reference_size is not None and typical is not summary:
        where = _("at %(axis)s = %(size)s") % {
            "axis": summary.size_axis or "n",
            "size": summary.reference_size,
        }
        figures[-1] = Figure(figures[-1].label, f"{figures[-1].value} {where}")
    return tuple(figures)


def strip_description(metric: Metric, counts: Mapping[int, int], samples: int) -> str:
    """What a heat strip of ``counts`` shows, for screen readers and tooltips (its legend in
    words)."""
    low, high = min(counts), max(counts)
    return _(
        "%(metric)s of %(samples)s calls, from %(low)s to %(high)s; colour shows the cost "
        "(blue cheap, red expensive), strength the share of calls"
    ) % {
        "metric": metric_label(metric),
        "samples": samples,
        "low": format_bucket_range(metric, low).split(" – ")[0],
        "high": format_bucket_range(metric, high).split(" – ")[-1],
    }


def heat_strip(metric: Metric, hist: Summarised, width: int = 160) -> Markup:
    """A histogram's heat strip, described in words for screen readers and tooltips."""
    counts = hist.counts()  # parsed once: stored figures keep them as text
    title = strip_description(metric, counts, hist.count)
    return Markup(
        svg.heat_strip_svg(counts, metric, title=title, width=width, words=graphic_words())
    )


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
    hist: Summarised,
    *,
    histogram: bool = True,
    strip: bool = False,
    large: bool = False,
    figures: tuple[float, float, float] | None = None,
) -> MetricView:
    """``figures`` are the histogram's (p10, median, p90) when the caller has them already."""
    p10, median, p90 = figures or hist.percentiles((10, 50, 90))
    label = metric_label(metric)
    samples = hist.count
    median_text, p10_text, p90_text = (format_value(metric, v) for v in (median, p10, p90))
    title = _(
        "%(name)s: %(metric)s, %(samples)s calls, median %(median)s, p10–p90 %(p10)s – %(p90)s"
    ) % {
        "name": qualname,
        "metric": label,
        "samples": samples,
        "median": median_text,
        "p10": p10_text,
        "p90": p90_text,
    }
    size = {"width": 480, "height": 120} if large else {}
    counts = hist.counts()
    return MetricView(
        metric=metric,
        label=label,
        median=median_text,
        p10=p10_text,
        p90=p90_text,
        samples=samples,
        histogram_svg=Markup(
            svg.histogram_svg(
                counts, metric, title=title, marker=median, words=graphic_words(), **size
            )
            if histogram
            else ""
        ),
        strip_svg=heat_strip(metric, hist) if strip else Markup(""),
    )


@dataclass(frozen=True)
class SummaryView:
    """Everything a summary block shows for one API."""

    qualname: str
    profiled: bool
    reason: str
    figures: tuple[Figure, ...]  # time ≈3.2 µs · allocated 1.1 KiB
    growth: str  # "O(n)" or ""
    samples: int
    scenarios: int
    metrics: tuple[MetricView, ...]

    @property
    def hint(self) -> str:
        """``"time ≈3.2 µs · allocated 1.1 KiB"``."""
        return " · ".join(f"{f.label} {f.value}" for f in self.figures)

    @property
    def samples_text(self) -> str:
        return ngettext("%(n)s call measured", "%(n)s calls measured", self.samples) % {
            "n": self.samples
        }

    @property
    def compact_text(self) -> str:
        """``"time ≈3.2 µs · allocated 1.1 KiB, O(n)"`` — the text fallback of the compact form."""
        if not self.profiled:
            return self.not_profiled_text
        return f"{self.hint}, {self.growth}" if self.growth else self.hint

    @property
    def not_profiled_text(self) -> str:
        if self.reason:
            return _("not profiled: %(reason)s") % {"reason": self.reason}
        return _("not profiled")

    def full_text(self) -> str:
        """One sentence for non-HTML builders."""
        if not self.profiled:
            return _("Cost") + f": {self.not_profiled_text}."
        parts = [
            _("%(metric)s ≈%(median)s (p10–p90 %(p10)s – %(p90)s)")
            % {"metric": m.label, "median": m.median, "p10": m.p10, "p90": m.p90}
            for m in self.metrics
        ]
        if self.growth:
            parts.append(_("grows %(growth)s") % {"growth": self.growth})
        if self.scenarios:
            parts.append(
                ngettext(
                    "%(calls)s calls measured in %(n)s scenario",
                    "%(calls)s calls measured in %(n)s scenarios",
                    self.scenarios,
                )
                % {"calls": self.samples, "n": self.scenarios}
            )
        else:
            parts.append(self.samples_text)
        return _("Cost") + ": " + " · ".join(parts) + "."


def view_summary(
    qualname: str, summary: ApiSummary | None, metric_names: list[str], *, compact: bool = False
) -> SummaryView:
    """The summary block's values; ``compact`` draws one heat strip, full draws a histogram per metric."""
    if summary is None or not summary.profiled:
        return SummaryView(qualname, False, unprofiled_reason(summary), (), "", 0, 0, ())
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
        figures=summary_figures(summary),
        growth=growth_phrase(summary.growth),
        samples=summary.samples,
        scenarios=summary.scenarios,
        metrics=metrics,
    )


# -- drill-down detail ---------------------------------------------------------------------


@dataclass(frozen=True)
class MetricDetail:
    view: MetricView
    mean: str
    stdev: str
    percentile_rows: Markup  # p10 … p99
    bucket_rows: Markup  # range of cost (with its colour), calls, share; data-bucket for machines


def detail_metric(qualname: str, metric: Metric, hist: Summarised) -> MetricDetail:
    total = hist.count
    counts = hist.counts()
    at = dict(zip(PERCENTILES, hist.percentiles(PERCENTILES), strict=True))
    return MetricDetail(
        view=view_metric(qualname, metric, hist, large=True, figures=(at[10], at[50], at[90])),
        mean=format_value(metric, hist.mean),
        stdev=format_value(metric, hist.stdev),
        percentile_rows=Markup(  # as rows() writes them: formatted numbers need no escaping
            "\n".join(
                f"<tr><td>p{q}</td><td>{format_value(metric, at[q])}</td></tr>" for q in PERCENTILES
            )
        ),
        bucket_rows=Markup(  # as rows() writes them, without its per-cell checks
            "\n".join(
                f'<tr data-bucket="{index}" data-count="{n}"><td><span class="apiprof-swatch" '
                f'style="background: {svg.bucket_colour(metric, index)}"></span>'
                f"{text(format_bucket_range(metric, index))}</td><td>{n}</td>"
                f"<td>{n / total:.1%}</td></tr>"
                for index, n in counts.items()
            )
        ),
    )


def other_metrics(histograms: dict[Metric, Summarised]) -> Markup:
    """Rows for the measurements a page does not draw (sampled CPU time next to wall time,
    exclusive allocation, calls per run, I/O): label, median, p10–p90, calls."""
    body = []
    for metric, hist in histograms.items():
        p10, median, p90 = (format_value(metric, v) for v in hist.percentiles((10, 50, 90)))
        body.append(
            (
                {"data-metric": str(metric)},
                (metric_label(metric), f"≈{median}", f"{p10} – {p90}", hist.count),
            )
        )
    return rows(body)


# -- lab scan next to real programs ------------------------------------------------------------


@dataclass(frozen=True)
class SideCell:
    median: str
    p90: str
    samples: int
    strip_svg: Markup


@dataclass(frozen=True)
class SideBySideRow:
    label: str
    lab: SideCell | None
    collected: SideCell | None


def _side_cell(metric: Metric, hist: Histogram | None) -> SideCell | None:
    if not worth_showing(metric, hist):
        return None
    assert hist is not None
    median, p90 = hist.percentiles((50, 90))
    return SideCell(
        format_value(metric, median),
        format_value(metric, p90),
        hist.count,
        heat_strip(metric, hist, width=120),
    )


def lab_and_collected(slices: list[ScenarioSlice]) -> tuple[SideBySideRow, ...]:
    """Per metric, the lab's figures next to those measured in real programs; empty unless the
    API has both."""
    collected = merge_by_metric([s for s in slices if is_collected(s)])
    if not collected:  # most APIs: no need to merge the lab's slices
        return ()
    lab = merge_by_metric([s for s in slices if not is_collected(s)])
    if not lab:
        return ()
    return tuple(
        SideBySideRow(metric_label(m), _side_cell(m, lab.get(m)), _side_cell(m, collected.get(m)))
        for m in Metric
        if worth_showing(m, lab.get(m)) or worth_showing(m, collected.get(m))
    )
