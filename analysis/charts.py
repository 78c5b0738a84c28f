"""Graphics for comparisons and module reports, as pure functions from data to an SVG string.

Built from the same elements, colours and conventions as the documentation's graphics
(:mod:`apiprof.sphinx_ext.svg`: escaped attributes, ``currentColor`` text for light and dark
pages, the cool→hot bucket colours, a ``<title>`` on every graphic and mark):

* :func:`paired_histogram_svg` — BASE above the axis, NEW below, on one bucket axis;
* :func:`ratio_chart_svg` — one row per API: the ratio NEW/BASE with its interval on a log
  axis, the band of "no material change" shaded;
* :func:`bar_chart_svg` — horizontal bars, e.g. time measured per module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from apiprof.format import format_value
from apiprof.model.histogram import bucket_bounds
from apiprof.model.records import Metric
from apiprof.sphinx_ext.svg import (
    _bucket_label,
    _bucket_span,
    _child,
    _num,
    _root,
    _text,
    _value_x,
    bucket_colour,
    heat_colour,
)

WORSE_COLOUR = heat_colour(1.0)
BETTER_COLOUR = heat_colour(0.0)


def paired_histogram_svg(
    base: Mapping[int, int],
    new: Mapping[int, int],
    metric: Metric,
    *,
    title: str,
    width: int = 320,
    height: int = 120,
    markers: tuple[float | None, float | None] = (None, None),
) -> str:
    """BASE's buckets as bars above the axis, NEW's below, heights as shares of each side's
    samples (so sides with different sample counts compare); ``markers`` are the two medians."""
    svg = _root(width, height, title, "apiprof-graphic apiprof-paired")
    left, label_h, top = 34, 13, 3
    plot_w = width - left
    half = (height - label_h - top) / 2
    axis_y = top + half
    span = _bucket_span({i: base.get(i, 0) + new.get(i, 0) for i in {*base, *new}})
    _child(
        svg,
        "line",
        {
            "x1": str(left),
            "y1": _num(axis_y),
            "x2": str(width),
            "y2": _num(axis_y),
            "stroke": "currentColor",
            "stroke-opacity": "0.35",
        },
    )
    _text(svg, 0, top + 10, "BASE", size=9)
    _text(svg, 0, axis_y + half - 2, "NEW", size=9)
    if not span:
        _text(svg, left + plot_w / 2, axis_y - 3, "no samples", "middle")
        return svg.serialise()
    totals = (sum(base.values()) or 1, sum(new.values()) or 1)
    peak = max([c / totals[0] for c in base.values()] + [c / totals[1] for c in new.values()])
    slot = plot_w / len(span)
    gap = min(2.0, slot * 0.15)
    for side, counts in enumerate((base, new)):
        bars = _child(svg, "g", {"class": f"apiprof-bars apiprof-{('base', 'new')[side]}"})
        for position, index in enumerate(span):
            n = counts.get(index, 0)
            if not n:
                continue
            bar_h = max(1.5, n / totals[side] / peak * (half - 2))
            rect = _child(
                bars,
                "rect",
                {
                    "class": "apiprof-bar",
                    "data-bucket": str(index),
                    "data-count": str(n),
                    "x": _num(left + position * slot + gap / 2),
                    "y": _num(axis_y - bar_h if side == 0 else axis_y),
                    "width": _num(slot - gap),
                    "height": _num(bar_h),
                    "rx": "1",
                    "fill": bucket_colour(metric, index),
                },
            )
            _child(
                rect, "title", {}
            ).text = f"{('BASE', 'NEW')[side]} {_bucket_label(metric, index, n)}"
    for side, marker in enumerate(markers):
        if marker is None or math.isnan(marker):
            continue
        x = left + _value_x(marker, span, slot)
        y0, y1 = (top, axis_y) if side == 0 else (axis_y, axis_y + half)
        line = _child(
            svg,
            "line",
            {
                "class": "apiprof-marker",
                "x1": _num(x),
                "y1": _num(y0),
                "x2": _num(x),
                "y2": _num(y1),
                "stroke": "currentColor",
                "stroke-dasharray": "3 2",
            },
        )
        _child(
            line, "title", {}
        ).text = f"{('BASE', 'NEW')[side]} median {format_value(metric, marker)}"
    _text(svg, left, height - 2, format_value(metric, bucket_bounds(span[0])[0]))
    _text(svg, width, height - 2, format_value(metric, bucket_bounds(span[-1])[1]), "end")
    return svg.serialise()


@dataclass(frozen=True)
class RatioRow:
    """One row of a ratio chart: ``value`` in ``[low, high]``; ``tone`` is "worse", "better",
    "same" or "none" (no estimate: drawn as a label only)."""

    label: str
    value: float
    low: float
    high: float
    tone: str
    tooltip: str = ""


_TONE_COLOUR = {"worse": WORSE_COLOUR, "better": BETTER_COLOUR}


def ratio_chart_svg(
    rows: Sequence[RatioRow], *, min_effect: float, title: str, width: int = 720
) -> str:
    """Ratios NEW/BASE with intervals on a log2 axis, one row per API; the band between
    ``1/(1+min_effect)`` and ``1+min_effect`` is shaded: inside it a change does not count."""
    row_h, label_w, top, bottom = 16, 300, 4, 18
    height = top + row_h * max(1, len(rows)) + bottom
    svg = _root(width, height, title, "apiprof-graphic apiprof-ratios")
    plot_x, plot_w = label_w + 8, width - label_w - 16
    drawn = [r for r in rows if r.tone != "none"]
    band = 1 + min_effect
    lowest = min([r.low for r in drawn if r.low > 0] + [1 / band, 0.5])
    highest = max([r.high for r in drawn if math.isfinite(r.high)] + [band, 2.0])
    lo_exp = math.floor(math.log2(max(lowest, 2**-10)))
    hi_exp = math.ceil(math.log2(min(highest, 2**10)))

    def x_of(ratio: float) -> float:
        position = (math.log2(min(max(ratio, 2.0**lo_exp), 2.0**hi_exp)) - lo_exp) / (
            hi_exp - lo_exp
        )
        return plot_x + position * plot_w

    plot_bottom = top + row_h * max(1, len(rows))
    _child(
        svg,
        "rect",
        {
            "class": "apiprof-band",
            "x": _num(x_of(1 / band)),
            "y": str(top),
            "width": _num(max(0.5, x_of(band) - x_of(1 / band))),
            "height": _num(plot_bottom - top),
            "fill": "currentColor",
            "fill-opacity": "0.08",
        },
    )
    for exponent in range(lo_exp, hi_exp + 1):
        x = x_of(2.0**exponent)
        _child(
            svg,
            "line",
            {
                "x1": _num(x),
                "y1": str(top),
                "x2": _num(x),
                "y2": _num(plot_bottom),
                "stroke": "currentColor",
                "stroke-opacity": "0.5" if exponent == 0 else "0.15",
            },
        )
        _text(svg, x, height - 5, f"{2.0**exponent:g}×", "middle", size=9)
    for position, row in enumerate(rows):
        y = top + position * row_h + row_h / 2
        label = row.label if len(row.label) <= 48 else "…" + row.label[-47:]
        _text(svg, label_w, y + 3.5, label, "end", size=10)
        if row.tone == "none":
            continue
        colour = _TONE_COLOUR.get(row.tone, "currentColor")
        mark = _child(svg, "g", {"class": f"apiprof-ratio apiprof-{row.tone}"})
        _child(mark, "title", {}).text = row.tooltip or f"{row.label}: {row.value:.2f}×"
        _child(
            mark,
            "line",
            {
                "x1": _num(x_of(row.low)),
                "y1": _num(y),
                "x2": _num(x_of(row.high)),
                "y2": _num(y),
                "stroke": colour,
                "stroke-width": "2",
                "stroke-opacity": "0.8",
            },
        )
        _child(
            mark, "circle", {"cx": _num(x_of(row.value)), "cy": _num(y), "r": "3.5", "fill": colour}
        )
    return svg.serialise()


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    colour: str
    tooltip: str = ""


def bar_chart_svg(bars: Sequence[Bar], metric: Metric, *, title: str, width: int = 720) -> str:
    """Horizontal bars, longest = largest ``value``, each labelled with its formatted value."""
    row_h, label_w, value_w = 18, 260, 80
    height = row_h * max(1, len(bars)) + 4
    svg = _root(width, height, title, "apiprof-graphic apiprof-barchart")
    plot_x, plot_w = label_w + 8, width - label_w - 8 - value_w
    peak = max((b.value for b in bars), default=0.0) or 1.0
    for position, bar in enumerate(bars):
        y = 2 + position * row_h
        label = bar.label if len(bar.label) <= 40 else "…" + bar.label[-39:]
        _text(svg, label_w, y + row_h / 2 + 3.5, label, "end", size=10)
        rect = _child(
            svg,
            "rect",
            {
                "class": "apiprof-bar",
                "x": str(plot_x),
                "y": _num(y + 2),
                "width": _num(max(1.0, bar.value / peak * plot_w)),
                "height": _num(row_h - 4),
                "rx": "2",
                "fill": bar.colour,
            },
        )
        _child(rect, "title", {}).text = (
            bar.tooltip or f"{bar.label}: {format_value(metric, bar.value)}"
        )
        _text(svg, width, y + row_h / 2 + 3.5, format_value(metric, bar.value), "end", size=10)
    return svg.serialise()
