"""Cost graphics as pure functions from data to an SVG string, for every reader that draws.

The documentation (:mod:`apiprof.sphinx_ext`) and the stand-alone pages of ``apiprof compare``
and ``apiprof report`` (:mod:`apiprof.analysis`) draw with the same pieces, so a bucket has one
colour and one tooltip wherever it appears:

* a histogram of the log2 buckets (bar height = calls, bar colour = how expensive the bucket is),
* a heat strip (one cell per bucket, hot = expensive, cool = cheap, opacity = share of calls),
* a growth chart (median cost per input size with the fitted curve, on log–log axes),
* and the building blocks other charts are made of: :func:`element`, :func:`graphic`,
  :func:`label`, the bucket axis and the heat scale.

Text and axes use ``currentColor`` and the heat colours are mid-lightness, so the same SVG reads
on light and dark pages. Every graphic carries a ``<title>`` and ``aria-label``.

Markup is built bottom-up as :data:`Svg` strings: :func:`element` escapes every attribute value
and text it is given and accepts only other :data:`Svg` pieces as children, so a label can never
break the markup — without building a tree first (a docs build draws thousands of these).

The words a graphic prints come in a :class:`Words` (English by default); the Sphinx extension
passes them translated into the build's language.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import NewType

from apiprof.format import format_value, value_formatter
from apiprof.model.buckets import ZERO_BUCKET, bucket_bounds
from apiprof.model.growth import GrowthFit
from apiprof.model.records import Metric

Svg = NewType("Svg", str)
"""SVG markup made by this module (escaped where it holds text)."""

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
_FONT = html.escape(FONT)
MIN_SPAN = 5
"""Buckets an axis shows at least: one filled bucket is a bar among empty neighbours, not a
full-width block."""


@dataclass(frozen=True)
class Words:
    """What the graphics print in words; ``calls`` says "1 call" / "7 calls" in the reader's
    language (plural rules differ)."""

    no_samples: str = "no samples"
    below: str = "below %(value)s"  # the zero bucket's range
    log_scale: str = "%(axis)s (log scale)"  # the growth chart's x axis
    calls: Callable[[int], str] = lambda n: f"{n} call" if n == 1 else f"{n} calls"


ENGLISH = Words()


# -- the heat scale ---------------------------------------------------------------------------


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


@cache
def bucket_colour(metric: Metric, index: int) -> str:
    """Heat colour of one bucket of ``metric`` (a handful of values, so cached)."""
    return heat_colour(heat_position(metric, index))


# -- markup -----------------------------------------------------------------------------------

_SPECIAL = re.compile(r'[&<>"\']')


def _escape(value: str) -> str:
    """XML-escape ``value``; most values are plain, so check before copying."""
    return html.escape(value) if _SPECIAL.search(value) else value


def number(value: float) -> str:
    """A coordinate as the graphics write it: at most two decimals, no trailing zeros."""
    written = f"{value:.2f}"  # always two decimals (or "nan"/"inf"): cut them by position,
    if written[-1] != "0":  # cheaper than stripping (the graphics write ~60k per docs build)
        return written
    return written[:-1] if written[-2] != "0" else written[:-3]


_TRAILING_ZEROS = re.compile(r"\.00(?![0-9])|(\.[0-9])0(?![0-9])")


def _coordinates(written: str) -> str:
    """Numbers written with two decimals (``"12.50,3.00 …"``) as :func:`number` writes each
    (``"12.5,3 …"``), in one pass over the string: a drawn curve has ~80 of them."""
    return _TRAILING_ZEROS.sub(r"\1", written)


Attribute = str | int | float


def element(tag: str, attrs: Mapping[str, Attribute], *children: Svg, text: str = "") -> Svg:
    """``<tag attrs>text children</tag>`` (``<tag attrs />`` when empty). Strings are escaped,
    numbers written with :func:`number`."""
    written = "".join(
        [
            f' {name}="{_escape(value) if isinstance(value, str) else number(value)}"'
            for name, value in attrs.items()
        ]
    )
    if not text and not children:
        return Svg(f"<{tag}{written} />")
    return Svg(f"<{tag}{written}>{_escape(text)}{''.join(children)}</{tag}>")


def tooltip(text: str) -> Svg:
    """The tooltip of the element it is put in (and a graphic's accessible name)."""
    return Svg(f"<title>{_escape(text)}</title>")


def graphic(width: int, height: int, name: str, css_class: str, *children: Svg) -> Svg:
    """The ``<svg>`` root: sized, titled ``name`` for tooltips and screen readers."""
    name = _escape(name)
    return Svg(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{_escape(css_class)}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{name}" '
        f'font-family="{_FONT}"><title>{name}</title>{"".join(children)}</svg>'
    )


def label(x: float, y: float, text: str, anchor: str = "start", size: int = 10) -> Svg:
    """A text label in the page's text colour."""
    return Svg(
        f'<text x="{number(x)}" y="{number(y)}" font-size="{size}" fill="currentColor" '
        f'text-anchor="{_escape(anchor)}">{_escape(text)}</text>'
    )


# -- the bucket axis --------------------------------------------------------------------------


def bucket_axis(counts: Mapping[int, int]) -> list[int]:
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


def bucket_position(value: float, axis: list[int], slot: float) -> float:
    """Horizontal position of a value on a bucket axis with ``slot`` units per bucket (log2
    within a bucket).

    The zero bucket is index -1, so ``log2(value) - axis[0]`` holds whether or not it is shown.
    """
    if value < 1:
        offset = value if axis[0] == ZERO_BUCKET else 0.0
    else:
        offset = math.log2(value) - axis[0]
    return min(max(offset, 0.0), float(len(axis))) * slot


@cache
def _range_text(metric: Metric, index: int) -> str:
    low, high = bucket_bounds(index)
    return f"{format_value(metric, low)} – {format_value(metric, high)}"


def bucket_tooltip(metric: Metric, index: int, count: int, words: Words = ENGLISH) -> str:
    """``"1.0 KiB – 2.0 KiB: 7 calls"`` — what one bucket of a graphic holds."""
    if index == ZERO_BUCKET:
        span = words.below % {"value": format_value(metric, 1.0)}
    else:
        span = _range_text(metric, index)
    return f"{span}: {words.calls(count)}"


def _baseline(x1: float, x2: float, y: float) -> Svg:
    """A faint horizontal line (written out as :func:`element` writes it: every histogram has
    one)."""
    y_at = number(y)
    return Svg(
        f'<line x1="{number(x1)}" y1="{y_at}" x2="{number(x2)}" y2="{y_at}" '
        'stroke="currentColor" stroke-opacity="0.35" />'
    )


# -- the graphics -----------------------------------------------------------------------------


def histogram_svg(
    counts: Mapping[int, int],
    metric: Metric,
    *,
    title: str,
    width: int = 240,
    height: int = 72,
    marker: float | None = None,
    words: Words = ENGLISH,
) -> str:
    """Bar chart of bucket counts; each bar has ``data-bucket``/``data-count`` and a tooltip.

    ``marker`` (a value in the metric's unit, e.g. the median) draws a dashed vertical line.
    """
    css = "apiprof-chart apiprof-chart-histogram"
    axis = bucket_axis(counts)
    label_h, top = 13, 3
    plot_h = height - label_h - top
    baseline = _baseline(0, width, top + plot_h + 0.5)
    if not axis:
        empty = label(width / 2, top + plot_h / 2, words.no_samples, "middle")
        return graphic(width, height, title, css, baseline, empty)
    peak = max(counts.values())
    slot = width / len(axis)
    gap = min(2.0, slot * 0.15)
    bars: list[str] = []
    for position, index in enumerate(axis):
        n = counts.get(index, 0)
        if not n:
            continue
        bar_h = max(1.5, n / peak * plot_h)
        bars.append(  # written out: the hottest loop of a docs build (ints and numbers only)
            f'<rect class="apiprof-bar" data-bucket="{index}" data-count="{n}" '
            f'x="{number(position * slot + gap / 2)}" y="{number(top + plot_h - bar_h)}" '
            f'width="{number(slot - gap)}" height="{number(bar_h)}" rx="1" '
            f'fill="{bucket_colour(metric, index)}">{_bucket_tip(metric, index, n, words)}</rect>'
        )
    parts = [baseline, Svg(f'<g class="apiprof-bars">{"".join(bars)}</g>')]
    if marker is not None and not math.isnan(marker):
        x = number(bucket_position(marker, axis, slot))
        parts.append(  # written out as element() writes it
            Svg(
                f'<line class="apiprof-marker" x1="{x}" y1="{number(top)}" x2="{x}" '
                f'y2="{number(top + plot_h)}" stroke="currentColor" stroke-dasharray="3 2" '
                'stroke-width="1" />'
            )
        )
    parts.append(label(0, height - 2, format_value(metric, bucket_bounds(axis[0])[0])))
    high = format_value(metric, bucket_bounds(axis[-1])[1])
    parts.append(label(width, height - 2, high, "end"))
    return graphic(width, height, title, css, *parts)


def _bucket_tip(metric: Metric, index: int, count: int, words: Words) -> Svg:
    """:func:`tooltip` of :func:`bucket_tooltip`, written out (every bar and cell has one)."""
    return Svg(f"<title>{_escape(bucket_tooltip(metric, index, count, words))}</title>")


@cache
def _strip_frame(width: int, height: int) -> Svg:
    """The outline of a heat strip of this size (the same for every strip)."""
    return element(
        "rect",
        {
            "x": "0.5",
            "y": "0.5",
            "width": width - 1,
            "height": height - 1,
            "rx": 2,
            "fill": "none",
            "stroke": "currentColor",
            "stroke-opacity": "0.3",
        },
    )


def heat_strip_svg(
    counts: Mapping[int, int],
    metric: Metric,
    *,
    title: str,
    width: int = 160,
    height: int = 14,
    words: Words = ENGLISH,
) -> str:
    """One cell per bucket: colour = cost of the bucket, opacity = its share of the calls."""
    frame = _strip_frame(width, height)
    css = "apiprof-chart apiprof-chart-strip"
    axis = bucket_axis(counts)
    if not axis:
        return graphic(width, height, title, css, frame)
    peak = max(counts.values())
    slot = (width - 2) / len(axis)
    size = f'width="{number(slot)}" height="{height - 2}"'  # the same for every cell
    cells: list[str] = []
    for position, index in enumerate(axis):
        n = counts.get(index, 0)
        if not n:
            continue
        cells.append(
            f'<rect class="apiprof-cell" data-bucket="{index}" data-count="{n}" '
            f'x="{number(1 + position * slot)}" y="1" {size} fill="{bucket_colour(metric, index)}" '
            f'fill-opacity="{number(0.2 + 0.8 * n / peak)}">{_bucket_tip(metric, index, n, words)}</rect>'
        )
    return graphic(width, height, title, css, frame, Svg("".join(cells)))


def _log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten within [low, high] (at least the two ends when there are none)."""
    first, last = math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9)
    ticks = [10.0**e for e in range(first, last + 1)]
    return ticks if len(ticks) >= 2 else [low, high]


CURVE_STEPS = 40
"""Segments of a drawn growth curve, evenly spaced on the log size axis."""


GROWTH_SIZE = (320, 170)
"""Width and height of a growth chart."""
_GROWTH_MARGINS = (56, 10, 8, 30)  # left, right, top, bottom


def growth_svg(
    points: Sequence[tuple[float, float]],
    fit: GrowthFit | None,
    metric: Metric,
    *,
    title: str,
    size_axis: str = "n",
    words: Words = ENGLISH,
) -> str:
    """Median cost per input size (dots) and the fitted growth curve (line), on log–log axes:
    sizes like 10, 30, 100, 1000 spread evenly, and the vertical distance between a dot and the
    curve is the relative error the fit minimised."""
    axes, marks = growth_parts(points, fit, metric, size_axis=size_axis)
    return growth_chart(axes, marks, title=title, size_axis=size_axis, words=words)


def growth_chart(axes: str, marks: str, *, title: str, size_axis: str, words: Words) -> str:
    """A growth chart from its :func:`growth_parts` and the words around them (title and axis
    name, which are in the reader's language)."""
    width, height = GROWTH_SIZE
    left, right, _top, _bottom = _GROWTH_MARGINS
    axis_name = label(
        left + (width - left - right) / 2,
        height - 3,
        words.log_scale % {"axis": size_axis},
        "middle",
    )
    return graphic(
        width, height, title, "apiprof-chart apiprof-chart-growth", Svg(axes), axis_name, Svg(marks)
    )


def growth_parts(
    points: Sequence[tuple[float, float]], fit: GrowthFit | None, metric: Metric, *, size_axis: str
) -> tuple[str, str]:
    """The language-free parts of a growth chart: the axes (frame, grid, tick labels) and the
    marks (fitted curve, measured dots with their tooltips). They hold no word of the reader's
    language, so a scan stores them (:mod:`apiprof.db.charts`) and a docs build only wraps
    them in :func:`growth_chart`."""
    width, height = GROWTH_SIZE
    left, right, top, bottom = _GROWTH_MARGINS
    plot_w, plot_h = width - left - right, height - top - bottom
    sized = [(x, y) for x, y in points if x > 0 and y > 0 and math.isfinite(y)]
    xs = [x for x, _y in sized] or [1.0, 10.0]
    x_low, x_high = min(xs), max(xs)
    if x_high <= x_low:
        x_low, x_high = x_low / 2, x_high * 2
    curve: list[tuple[float, float]] = []
    if fit:  # evenly spaced on the log axis: smooth at every scale
        # a constant is one straight segment: its two ends draw exactly the line 41 points draw
        # (most fits are constant, and the curve's points were most of a chart's cost)
        steps = 1 if fit.constant else CURVE_STEPS
        ratio = x_high / x_low
        curve = [
            (x, fit.predict(x)) for x in (x_low * ratio ** (i / steps) for i in range(steps + 1))
        ]
    ys = [y for _x, y in sized + curve if y > 0 and math.isfinite(y)] or [1.0, 10.0]
    y_low, y_high = min(ys) / 1.3, max(ys) * 1.3
    lx_low, lx_span = math.log10(x_low), math.log10(x_high) - math.log10(x_low)
    ly_low, ly_span = math.log10(y_low), math.log10(y_high) - math.log10(y_low)

    def x_at(x: float) -> float:
        return left + (math.log10(x) - lx_low) / lx_span * plot_w

    def y_at(y: float) -> float:
        clipped = min(max(y, y_low), y_high)
        return top + plot_h - (math.log10(clipped) - ly_low) / ly_span * plot_h

    corner = f"{left},{top} {left},{top + plot_h} {left + plot_w},{top + plot_h}"
    parts = [
        Svg(
            '<g stroke="currentColor" stroke-opacity="0.35" fill="none">'
            f'<polyline points="{corner}" /></g>'
        )
    ]
    y_ticks = [(t, number(y_at(t))) for t in _log_ticks(y_low, y_high)]
    grid = "".join(
        f'<line x1="{left}" y1="{y}" x2="{left + plot_w}" y2="{y}" />' for _t, y in y_ticks
    )
    parts.append(Svg(f'<g stroke="currentColor" stroke-opacity="0.12">{grid}</g>'))
    # tick labels are formatted numbers, which hold nothing to escape: written as label() does
    parts += [
        Svg(
            f'<text x="{left - 4}" y="{number(y_at(t) + 3)}" font-size="10" fill="currentColor" '
            f'text-anchor="end">{format_value(metric, t)}</text>'
        )
        for t, _y in y_ticks
    ]
    x_ticks = sorted({x for x, _y in sized}) or _log_ticks(x_low, x_high)
    below = number(top + plot_h + 12)
    parts += [
        Svg(
            f'<text x="{number(x_at(t))}" y="{below}" font-size="10" fill="currentColor" '
            f'text-anchor="middle">{t:g}</text>'
        )
        for t in x_ticks
    ]
    axes, parts = "".join(parts), []
    if curve:
        log10, isfinite = math.log10, math.isfinite  # x_at and y_at in line: ~8k points a build
        line = _coordinates(
            " ".join(
                [
                    f"{left + (log10(x) - lx_low) / lx_span * plot_w:.2f},"
                    f"{top + plot_h - (log10(min(max(y, y_low), y_high)) - ly_low) / ly_span * plot_h:.2f}"
                    for x, y in curve
                    if y > 0 and isfinite(y)
                ]
            )
        )
        parts.append(
            Svg(
                f'<polyline class="apiprof-fit" fill="none" stroke="{FIT_COLOUR}" '
                f'stroke-width="2" points="{line}" />'
            )
        )
    formatted = value_formatter(metric)  # the medians are all different: no memo
    axis_text = _escape(size_axis)
    dots = "".join(
        f'<circle cx="{number(x_at(x))}" cy="{number(y_at(y))}" r="3">'
        f"<title>{axis_text} = {x:g}: {formatted(y)}</title></circle>"
        for x, y in sized
    )
    parts.append(Svg(f'<g class="apiprof-points" fill="currentColor">{dots}</g>'))
    return axes, "".join(parts)
