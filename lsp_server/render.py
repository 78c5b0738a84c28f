"""Text the editor shows: short cost hints for completion items, markdown for hovers and docs.

Numbers are formatted by :mod:`apiprof.format` only, so the editor and the Sphinx pages agree
on how "3.2 µs" looks. Everything here is a pure function of an :class:`ApiSummary` and the
configuration.
"""

from __future__ import annotations

from apiprof.db.query import ApiSummary
from apiprof.format import (
    cost_hint,
    format_bytes,
    format_ns,
    format_value,
    sparkline,
    text_histogram,
    worth_showing,
)
from apiprof.lsp_server.config import ServerConfig
from apiprof.model.records import Metric

NOT_PROFILED = "not profiled"


def short_hint(summary: ApiSummary | None) -> str:
    """``"≈3.2 µs · 1.1 KiB"`` for a profiled API, ``"not profiled"`` otherwise."""
    if summary is None or not summary.profiled:
        return NOT_PROFILED
    typical = summary.at_reference()
    hint = cost_hint(typical.time_median_ns, typical.alloc_median_bytes)
    return f"{hint} {summary.reference_label}" if summary.reference_label else hint


def describe(summary: ApiSummary | None, config: ServerConfig, *, title: str = "") -> str:
    """Markdown cost profile (hover text and completion documentation)."""
    if summary is None:
        return (
            f"**{title}** — {NOT_PROFILED} (no apiprof database knows this name)"
            if title
            else NOT_PROFILED
        )
    parts = [_heading(summary)]
    if summary.summary:
        parts.append(summary.summary)
    if not summary.profiled:
        parts.append(_not_profiled_reason(summary))
    else:
        parts.append(_cost_table(summary.at_reference()))
        if summary.growth is not None:
            g = summary.growth
            parts.append(
                f"Growth: **{g.growth_class}** in `{g.size_axis}` ({g.metric.label}, {g.points} sizes, R² {g.r2:.2f})"
            )
        parts.append(_histogram_block(summary.at_reference(), config))
        parts.append(_counts_line(summary))
    link = config.docs_link(summary.qualname)
    if link:
        parts.append(f"[Cost profile of `{summary.qualname}`]({link})")
    return "\n\n".join(p for p in parts if p)


def _heading(summary: ApiSummary) -> str:
    signature = f"`{summary.signature}`" if summary.signature else ""
    return f"**{summary.qualname}** {signature}".rstrip()


def _not_profiled_reason(summary: ApiSummary) -> str:
    if summary.coverage and summary.coverage != "profiled":
        reason = f": {summary.reason}" if summary.reason else ""
        return f"*{NOT_PROFILED}* ({summary.coverage.replace('_', ' ')}{reason})"
    return f"*{NOT_PROFILED}* (scanned, but no measurements stored yet)"


def _cost_table(summary: ApiSummary) -> str:
    """Typical figures (at the reference size when the API was measured at sizes, so the
    heading says which), with the cost of consuming a returned iterator labelled as such."""
    where = f" {summary.reference_label}" if summary.reference_label else ""
    rows = [f"| | typical (median){where} | p90 |", "|---|---|---|"]
    if summary.time_histogram:
        label = summary.time_metric.label if summary.time_metric else "time"
        rows.append(
            f"| {label} | {format_ns(summary.time_median_ns)} | {format_ns(summary.time_p90_ns)} |"
        )
    alloc = summary.alloc_histogram
    if alloc:
        rows.append(
            f"| allocated | {format_bytes(alloc.median)} | {format_bytes(alloc.percentile(90))} |"
        )
    for metric in (Metric.CONSUME_WALL, Metric.CONSUME_ALLOC, Metric.IO_READ, Metric.IO_WRITE):
        hist = summary.histograms.get(metric)
        if hist is not None and worth_showing(metric, hist):
            rows.append(
                f"| {metric.label} | {format_value(metric, hist.median)} "
                f"| {format_value(metric, hist.percentile(90))} |"
            )
    return "\n".join(rows)


def _histogram_block(summary: ApiSummary, config: ServerConfig) -> str:
    hist, metric = summary.time_histogram, summary.time_metric
    if hist is None or metric is None:
        hist = summary.alloc_histogram
        metric = next(iter(m for m in summary.histograms if summary.histograms[m] is hist), None)
    if hist is None or metric is None:
        return ""
    if config.hover.histogram == "sparkline":
        lines = [f"{metric.label}: {sparkline(hist)}"]
    else:
        lines = [
            f"{metric.label} per call",
            *text_histogram(hist, metric, width=config.hover.histogram_width),
        ]
    return "```text\n" + "\n".join(lines) + "\n```"


def _counts_line(summary: ApiSummary) -> str:
    scenarios = (
        f" · {summary.scenarios} scenario{'s' if summary.scenarios != 1 else ''}"
        if summary.scenarios
        else ""
    )
    return f"{summary.samples:,} samples{scenarios}"
