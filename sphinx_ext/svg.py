"""Cost graphics as pure functions from data to an SVG string.

Three pictures: a histogram of the log2 buckets (bar height = samples, bar colour = how
expensive the bucket is), a heat strip (one cell per bucket, hot = expensive, cool = cheap,
opacity = share of samples) and a growth chart (median cost per input size with the fitted curve).
Text and axes use ``currentColor`` and the heat colours are mid-lightness, so the same SVG reads
on light and dark themes. Every graphic carries a ``<title>`` and ``aria-label``.

Elements are built as :class:`Element` trees and serialised with every attribute and text
escaped, so labels can never break the markup (it is ElementTree's idea at a fraction of the
cost: a docs build draws thousands of these).
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from apiprof.format import format_value
from apiprof.model.growth import GrowthFit
from apiprof.model.histogram import ZERO_BUCKET, bucket_bounds
from apiprof.model.records import Metric
from apiprof.sphinx_ext.i18n import _, ngettext

# Bucket index that counts as "cool" (0.0) and "hot" (1.0) per unit: a shared absolute scale, so
# colours compare across APIs (64 ns is cheap and 1 ms is expensive for any call).
_HEAT_SCALE = {"ns": (6, 20), "B": (4, 20), "calls": (0, 12)}
_HEAT_STOPS = [
    (0.00, (59, 130, 246)),  # blue
    (0.35, (20, 184, 166)),  # teal
    (0.60, (234, 179, 8)),  # amber
    (0.80, (249, 115, 22)),  # orange
    (1.00, (220, 38, 38)),  # red
]
FIT_COLOUR = "#f97316"
FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"
MIN_SPAN = 5
"""Buckets an axis shows at least: one filled bucket is a bar among empty neighbours, not a
full-width block."""


def heat_position(metric: Metric, index: int) -> float:
    """0.0 (cheap) … 1.0 (expensive) for a bucket of ``metric``."""
    if index == ZERO_BUCKET:
        return 0.0
    cool, hot = _HEAT_SCALE[metric.unit]
    return min(1.0, max(0.0, (index - cool) / (hot - cool)))


def heat_colour(position: float) -> str:
    """Hex colour on the cool→hot scale for a position in 0..1."""
    position = min(1.0, max(0.0, position))
    for (p0, c0), (p1, c1) in itertools.pairwise(_HEAT_STOPS):
        if position <= p1:
            t = (position - p0) / (p1 - p0)
            return "#" + "".join(
                f"{round(a + (b - a) * t):02x}" for a, b in zip(c0, c1, strict=True)
            )
    return "#{:02x}{:02x}{:02x}".format(*_HEAT_STOPS[-1][1])


_SPECIAL = re.compile(r'[&<>"\']')


def _escape(value: str) -> str:
    """XML-escape ``value``; most values are numbers, so check before copying."""
    return html.escape(value) if _SPECIAL.search(value) else value


@dataclass
class Element:
    """An SVG element: tag, attributes, optional text and children."""

    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)

    def serialise(self) -> str:
        attrs = "".join([f' {name}="{_escape(value)}"' for name, value in self.attrs.items()])
        if not self.text and not self.children:
            return f"<{self.tag}{attrs} />"
        inner = _escape(self.text) + "".join([child.serialise() for child in self.children])
        return f"<{self.tag}{attrs}>{inner}</{self.tag}>"


def _child(parent: Element, tag: str, attrs: dict[str, str]) -> Element:
    child = Element(tag, attrs)
    parent.children.append(child)
    return child


def _root(width: int, height: int, title: str, css_class: str) -> Element:
    svg = Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "class": css_class,
            "width": str(width),
            "height": str(height),
            "viewBox": f"0 0 {width} {height}",
            "role": "img",
            "aria-label": title,
            "font-family": FONT,
        },
    )
    _child(svg, "title", {}).text = title
    return svg


def _text(
    parent: Element, x: float, y: float, label: str, anchor: str = "start", size: int = 10
) -> None:
    node = _child(
        parent,
        "text",
        {
            "x": _num(x),
            "y": _num(y),
            "font-size": str(size),
            "fill": "currentColor",
            "text-anchor": anchor,
        },
    )
    node.text = label


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _to_string(svg: Element) -> str:
    return svg.serialise()


def _bucket_span(counts: Mapping[int, int]) -> list[int]:
    """Every bucket index from the cheapest to the most expensive non-empty one, widened
    evenly to :data:`MIN_SPAN` buckets (never below the zero bucket)."""
    filled = [i for i, n in counts.items() if n]
    if not filled:
        return []
    low, high = min(filled), max(filled)
    missing = MIN_SPAN - (high - low + 1)
    if missing > 0:
        low = max(ZERO_BUCKET, low - missing // 2)
        high = low + MIN_SPAN - 1 if high < low + MIN_SPAN - 1 else high
    return list(range(low, high + 1))


def _bucket_span_label(metric: Metric, index: int) -> str:
    if index == ZERO_BUCKET:
        return _("below %(value)s") % {"value": format_value(metric, 1.0)}
    return _range_text(metric, index)


@cache
def _range_text(metric: Metric, index: int) -> str:
    low, high = bucket_bounds(index)
    return f"{format_value(metric, low)} – {format_value(metric, high)}"


def _bucket_label(metric: Metric, index: int, count: int) -> str:
    calls = ngettext("%(n)s call", "%(n)s calls", count) % {"n": count}
    return f"{_bucket_span_label(metric, index)}: {calls}"


@cache
def bucket_colour(metric: Metric, index: int) -> str:
    """Heat colour of one bucket of ``metric`` (a handful of values, so cached)."""
    return heat_colour(heat_position(metric, index))


def histogram_svg(
    counts: Mapping[int, int],
    metric: Metric,
    *,
    title: str,
    width: int = 240,
    height: int = 72,
    marker: float | None = None,
) -> str:
    """Bar chart of bucket counts; each bar has ``data-bucket``/``data-count`` and a tooltip.

    ``marker`` (a value in the metric's unit, e.g. the median) draws a dashed vertical line.
    """
    svg = _root(width, height, title, "apiprof-chart apiprof-chart-histogram")
    span = _bucket_span(counts)
    label_h, top = 13, 3
    plot_h = height - label_h - top
    _child(
        svg,
        "line",
        {
            "x1": "0",
            "y1": _num(top + plot_h + 0.5),
            "x2": str(width),
            "y2": _num(top + plot_h + 0.5),
            "stroke": "currentColor",
            "stroke-opacity": "0.35",
        },
    )
    if not span:
        _text(svg, width / 2, top + plot_h / 2, _("no samples"), "middle")
        return _to_string(svg)
    peak = max(counts.values())
    slot = width / len(span)
    gap = min(2.0, slot * 0.15)
    bars = _child(svg, "g", {"class": "apiprof-bars"})
    for position, index in enumerate(span):
        n = counts.get(index, 0)
        if not n:
            continue
        bar_h = max(1.5, n / peak * plot_h)
        rect = _child(
            bars,
            "rect",
            {
                "class": "apiprof-bar",
                "data-bucket": str(index),
                "data-count": str(n),
                "x": _num(position * slot + gap / 2),
                "y": _num(top + plot_h - bar_h),
                "width": _num(slot - gap),
                "height": _num(bar_h),
                "rx": "1",
                "fill": bucket_colour(metric, index),
            },
        )
        _child(rect, "title", {}).text = _bucket_label(metric, index, n)
    if marker is not None and not math.isnan(marker):
        x = _value_x(marker, span, slot)
        _child(
            svg,
            "line",
            {
                "class": "apiprof-marker",
                "x1": _num(x),
                "y1": str(top),
                "x2": _num(x),
                "y2": _num(top + plot_h),
                "stroke": "currentColor",
                "stroke-dasharray": "3 2",
                "stroke-width": "1",
            },
        )
    low = bucket_bounds(span[0])[0]
    high = bucket_bounds(span[-1])[1]
    _text(svg, 0, height - 2, format_value(metric, low))
    _text(svg, width, height - 2, format_value(metric, high), "end")
    return _to_string(svg)


def _value_x(value: float, span: list[int], slot: float) -> float:
    """Horizontal position of a value on the bucket axis (log2 within a bucket).

    The zero bucket is index -1, so ``log2(value) - span[0]`` holds whether or not it is shown.
    """
    offset = (value if span[0] == ZERO_BUCKET else 0.0) if value < 1 else math.log2(value) - span[0]
    return min(max(offset, 0.0), float(len(span))) * slot


def heat_strip_svg(
    counts: Mapping[int, int],
    metric: Metric,
    *,
    title: str,
    width: int = 160,
    height: int = 14,
) -> str:
    """One cell per bucket: colour = cost of the bucket, opacity = its share of the samples."""
    svg = _root(width, height, title, "apiprof-chart apiprof-chart-strip")
    span = _bucket_span(counts)
    _child(
        svg,
        "rect",
        {
            "x": "0.5",
            "y": "0.5",
            "width": str(width - 1),
            "height": str(height - 1),
            "rx": "2",
            "fill": "none",
            "stroke": "currentColor",
            "stroke-opacity": "0.3",
        },
    )
    if not span:
        return _to_string(svg)
    peak = max(counts.values())
    slot = (width - 2) / len(span)
    for position, index in enumerate(span):
        n = counts.get(index, 0)
        if not n:
            continue
        cell = _child(
            svg,
            "rect",
            {
                "class": "apiprof-cell",
                "data-bucket": str(index),
                "data-count": str(n),
                "x": _num(1 + position * slot),
                "y": "1",
                "width": _num(slot),
                "height": str(height - 2),
                "fill": bucket_colour(metric, index),
                "fill-opacity": _num(0.2 + 0.8 * n / peak),
            },
        )
        _child(cell, "title", {}).text = _bucket_label(metric, index, n)
    return _to_string(svg)


def _log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten within [low, high] (at least the two ends when there are none)."""
    first, last = math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9)
    ticks = [10.0**e for e in range(first, last + 1)]
    return ticks if len(ticks) >= 2 else [low, high]


def growth_svg(
    points: Sequence[tuple[float, float]],
    fit: GrowthFit | None,
    metric: Metric,
    *,
    title: str,
    size_axis: str = "n",
    width: int = 320,
    height: int = 170,
) -> str:
    """Median cost per input size (dots) and the fitted growth curve (line), on log–log axes:
    sizes like 10, 30, 100, 1000 spread evenly, and the vertical distance between a dot and the
    curve is the relative error the fit minimised."""
    svg = _root(width, height, title, "apiprof-chart apiprof-chart-growth")
    left, right, top, bottom = 56, 10, 8, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    sized = [(x, y) for x, y in points if x > 0 and y > 0 and math.isfinite(y)]
    xs = [x for x, _y in sized] or [1.0, 10.0]
    x_low, x_high = min(xs), max(xs)
    if x_high <= x_low:
        x_low, x_high = x_low / 2, x_high * 2
    curve: list[tuple[float, float]] = []
    if fit:  # evenly spaced on the log axis: smooth at every scale
        ratio = x_high / x_low
        curve = [(x_low * ratio ** (i / 40), 0.0) for i in range(41)]
        curve = [(x, fit.predict(x)) for x, _y in curve]
    ys = [y for _x, y in sized + curve if y > 0 and math.isfinite(y)] or [1.0, 10.0]
    y_low, y_high = min(ys) / 1.3, max(ys) * 1.3
    lx_low, lx_span = math.log10(x_low), math.log10(x_high) - math.log10(x_low)
    ly_low, ly_span = math.log10(y_low), math.log10(y_high) - math.log10(y_low)

    def x_at(x: float) -> float:
        return left + (math.log10(x) - lx_low) / lx_span * plot_w

    def y_at(y: float) -> float:
        clipped = min(max(y, y_low), y_high)
        return top + plot_h - (math.log10(clipped) - ly_low) / ly_span * plot_h

    axes = _child(svg, "g", {"stroke": "currentColor", "stroke-opacity": "0.35", "fill": "none"})
    _child(
        axes,
        "polyline",
        {"points": f"{left},{top} {left},{top + plot_h} {left + plot_w},{top + plot_h}"},
    )
    grid = _child(svg, "g", {"stroke": "currentColor", "stroke-opacity": "0.12"})
    for tick in _log_ticks(y_low, y_high):
        tick_y = _num(y_at(tick))
        _child(
            grid, "line", {"x1": str(left), "y1": tick_y, "x2": str(left + plot_w), "y2": tick_y}
        )
        _text(svg, left - 4, y_at(tick) + 3, format_value(metric, tick), "end")
    for tick in sorted({x for x, _y in sized}) or _log_ticks(x_low, x_high):
        _text(svg, x_at(tick), top + plot_h + 12, f"{tick:g}", "middle")
    _text(
        svg,
        left + plot_w / 2,
        height - 3,
        _("%(axis)s (log scale)") % {"axis": size_axis},
        "middle",
    )
    if curve:
        _child(
            svg,
            "polyline",
            {
                "class": "apiprof-fit",
                "fill": "none",
                "stroke": FIT_COLOUR,
                "stroke-width": "2",
                "points": " ".join(
                    f"{_num(x_at(x))},{_num(y_at(y))}"
                    for x, y in curve
                    if y > 0 and math.isfinite(y)
                ),
            },
        )
    dots = _child(svg, "g", {"class": "apiprof-points", "fill": "currentColor"})
    for x, y in sized:
        dot = _child(dots, "circle", {"cx": _num(x_at(x)), "cy": _num(y_at(y)), "r": "3"})
        _child(dot, "title", {}).text = f"{size_axis} = {x:g}: {format_value(metric, y)}"
    return _to_string(svg)
