"""Graphics for comparisons and module reports, as pure functions from data to an SVG string.

Built from the same pieces, colours and conventions as the documentation's graphics
(:mod:`apiprof.svg`: escaped attributes and text, ``currentColor`` text for light and dark
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
from apiprof.model.buckets import bucket_bounds
from apiprof.model.records import Metric
from apiprof.svg import (
    Svg,
    bucket_axis,
    bucket_colour,
    bucket_position,
    bucket_tooltip,
    element,
    graphic,
    heat_colour,
    label,
    tooltip,
)

SIDES = ("BASE", "NEW")
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
    css = "apiprof-graphic apiprof-paired"
    left, label_h, top = 34, 13, 3
    plot_w = width - left
    half = (height - label_h - top) / 2
    axis_y = top + half
    axis = bucket_axis({i: base.get(i, 0) + new.get(i, 0) for i in {*base, *new}})
    parts = [
        element(
            "line",
            {
                "x1": left,
                "y1": axis_y,
                "x2": width,
                "y2": axis_y,
                "stroke": "currentColor",
                "stroke-opacity": "0.35",
            },
        ),
        label(0, top + 10, "BASE", size=9),
        label(0, axis_y + half - 2, "NEW", size=9),
    ]
    if not axis:
        parts.append(label(left + plot_w / 2, axis_y - 3, "no samples", "middle"))
        return graphic(width, height, title, css, *parts)
    totals = (sum(base.values()) or 1, sum(new.values()) or 1)
    peak = max([c / totals[0] for c in base.values()] + [c / totals[1] for c in new.values()])
    slot = plot_w / len(axis)
    gap = min(2.0, slot * 0.15)
    for side, counts in enumerate((base, new)):
        bars = []
        for position, index in enumerate(axis):
            n = counts.get(index, 0)
            if not n:
                continue
            bar_h = max(1.5, n / totals[side] / peak * (half - 2))
            bars.append(
                element(
                    "rect",
                    {
                        "class": "apiprof-bar",
                        "data-bucket": index,
                        "data-count": n,
                        "x": left + position * slot + gap / 2,
                        "y": axis_y - bar_h if side == 0 else axis_y,
                        "width": slot - gap,
                        "height": bar_h,
                        "rx": 1,
                        "fill": bucket_colour(metric, index),
                    },
                    tooltip(f"{SIDES[side]} {bucket_tooltip(metric, index, n)}"),
                )
            )
        css_side = f"apiprof-bars apiprof-{SIDES[side].lower()}"
        parts.append(element("g", {"class": css_side}, *bars))
    for side, marker in enumerate(markers):
        if marker is None or math.isnan(marker):
            continue
        x = left + bucket_position(marker, axis, slot)
        y0, y1 = (top, axis_y) if side == 0 else (axis_y, axis_y + half)
        parts.append(
            element(
                "line",
                {
                    "class": "apiprof-marker",
                    "x1": x,
                    "y1": y0,
                    "x2": x,
                    "y2": y1,
                    "stroke": "currentColor",
                    "stroke-dasharray": "3 2",
                },
                tooltip(f"{SIDES[side]} median {format_value(metric, marker)}"),
            )
        )
    parts.append(label(left, height - 2, format_value(metric, bucket_bounds(axis[0])[0])))
    high = format_value(metric, bucket_bounds(axis[-1])[1])
    parts.append(label(width, height - 2, high, "end"))
    return graphic(width, height, title, css, *parts)


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
    parts = [
        element(
            "rect",
            {
                "class": "apiprof-band",
                "x": x_of(1 / band),
                "y": top,
                "width": max(0.5, x_of(band) - x_of(1 / band)),
                "height": plot_bottom - top,
                "fill": "currentColor",
                "fill-opacity": "0.08",
            },
        )
    ]
    for exponent in range(lo_exp, hi_exp + 1):
        x = x_of(2.0**exponent)
        parts.append(
            element(
                "line",
                {
                    "x1": x,
                    "y1": top,
                    "x2": x,
                    "y2": plot_bottom,
                    "stroke": "currentColor",
                    "stroke-opacity": "0.5" if exponent == 0 else "0.15",
                },
            )
        )
        parts.append(label(x, height - 5, f"{2.0**exponent:g}×", "middle", size=9))
    for position, row in enumerate(rows):
        y = top + position * row_h + row_h / 2
        name = row.label if len(row.label) <= 48 else "…" + row.label[-47:]
        parts.append(label(label_w, y + 3.5, name, "end", size=10))
        if row.tone == "none":
            continue
        colour = _TONE_COLOUR.get(row.tone, "currentColor")
        interval = {"x1": x_of(row.low), "y1": y, "x2": x_of(row.high), "y2": y}
        parts.append(
            element(
                "g",
                {"class": f"apiprof-ratio apiprof-{row.tone}"},
                tooltip(row.tooltip or f"{row.label}: {row.value:.2f}×"),
                element(
                    "line",
                    {
                        **interval,
                        "stroke": colour,
                        "stroke-width": 2,
                        "stroke-opacity": "0.8",
                    },
                ),
                element("circle", {"cx": x_of(row.value), "cy": y, "r": 3.5, "fill": colour}),
            )
        )
    return graphic(width, height, title, "apiprof-graphic apiprof-ratios", *parts)


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
    plot_x, plot_w = label_w + 8, width - label_w - 8 - value_w
    peak = max((b.value for b in bars), default=0.0) or 1.0
    parts: list[Svg] = []
    for position, bar in enumerate(bars):
        y = 2 + position * row_h
        name = bar.label if len(bar.label) <= 40 else "…" + bar.label[-39:]
        parts.append(label(label_w, y + row_h / 2 + 3.5, name, "end", size=10))
        parts.append(
            element(
                "rect",
                {
                    "class": "apiprof-bar",
                    "x": plot_x,
                    "y": y + 2,
                    "width": max(1.0, bar.value / peak * plot_w),
                    "height": row_h - 4,
                    "rx": 2,
                    "fill": bar.colour,
                },
                tooltip(bar.tooltip or f"{bar.label}: {format_value(metric, bar.value)}"),
            )
        )
        value = format_value(metric, bar.value)
        parts.append(label(width, y + row_h / 2 + 3.5, value, "end", size=10))
    return graphic(width, height, title, "apiprof-graphic apiprof-barchart", *parts)
