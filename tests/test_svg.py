"""The SVG graphics are pure functions: check their geometry, labels and accessibility directly."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from apiprof import svg
from apiprof.model.buckets import ZERO_BUCKET
from apiprof.model.growth import fit_growth
from apiprof.model.records import Metric

NS = {"s": "http://www.w3.org/2000/svg"}


def parse(text: str) -> ET.Element:
    return ET.fromstring(text)


def rects(root: ET.Element, css_class: str) -> list[ET.Element]:
    return [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("class") == css_class]


def test_histogram_has_one_bar_per_non_empty_bucket_with_its_count():
    counts = {4: 191, 5: 109, 8: 3}
    root = parse(svg.histogram_svg(counts, Metric.CPU, title="A"))
    bars = rects(root, "apiprof-bar")
    assert {int(b.get("data-bucket")): int(b.get("data-count")) for b in bars} == counts


def test_bar_heights_are_proportional_to_counts_and_positions_follow_buckets():
    root = parse(
        svg.histogram_svg({4: 200, 5: 100, 7: 50}, Metric.CPU, title="A", width=400, height=116)
    )
    bars = {int(b.get("data-bucket")): b for b in rects(root, "apiprof-bar")}
    heights = {i: float(b.get("height")) for i, b in bars.items()}
    assert heights[5] == pytest.approx(heights[4] / 2)
    assert heights[7] == pytest.approx(heights[4] / 4)
    xs = {i: float(b.get("x")) for i, b in bars.items()}
    slot = 400 / 5  # buckets 4..8 (an axis shows at least five); the empty bucket 6 keeps its slot
    assert xs[5] - xs[4] == pytest.approx(slot)
    assert xs[7] - xs[4] == pytest.approx(3 * slot)
    assert max(float(b.get("y")) + float(b.get("height")) for b in bars.values()) <= 116


def test_graphics_are_accessible_and_escape_their_title():
    title = 'costs of <f> & "g"'
    for text in (
        svg.histogram_svg({3: 1}, Metric.ALLOC_INCL, title=title),
        svg.heat_strip_svg({3: 1}, Metric.ALLOC_INCL, title=title),
        svg.growth_svg([(1, 2.0), (2, 4.0)], None, Metric.WALL, title=title),
    ):
        root = parse(text)  # well-formed XML despite the markup characters
        assert root.get("role") == "img" and root.get("aria-label") == title
        assert root.find("s:title", NS).text == title


def test_bar_tooltips_name_the_bucket_range_and_count():
    root = parse(svg.histogram_svg({10: 7, ZERO_BUCKET: 1}, Metric.ALLOC_INCL, title="A"))
    tips = {b.get("data-bucket"): b.find("s:title", NS).text for b in rects(root, "apiprof-bar")}
    assert tips["10"] == "1.0 KiB – 2.0 KiB: 7 calls"
    assert tips["-1"] == "below 1 B: 1 call"


def test_axis_labels_span_the_drawn_buckets_and_use_current_colour():
    root = parse(svg.histogram_svg({4: 1, 5: 1}, Metric.WALL, title="A"))
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert labels == ["8 ns", "256 ns"]  # buckets 3..7: two filled ones among five
    assert all(
        t.get("fill") == "currentColor" for t in root.iter("{http://www.w3.org/2000/svg}text")
    )


def test_median_marker_sits_inside_its_bucket():
    root = parse(
        svg.histogram_svg({4: 10, 5: 10, 6: 10}, Metric.WALL, title="A", width=300, marker=48.0)
    )
    marker = next(
        line
        for line in root.iter("{http://www.w3.org/2000/svg}line")
        if line.get("class") == "apiprof-marker"
    )
    assert 100 < float(marker.get("x1")) < 200  # 48 ns is in bucket 5, the middle third


def test_a_single_bucket_is_a_bar_among_empty_neighbours_not_a_block():
    root = parse(svg.histogram_svg({10: 50}, Metric.CPU, title="A", width=300))
    [bar] = rects(root, "apiprof-bar")
    assert float(bar.get("width")) < 300 / 4
    strip = parse(svg.heat_strip_svg({10: 50}, Metric.CPU, title="A", width=160))
    [cell] = rects(strip, "apiprof-cell")
    assert float(cell.get("width")) < 160 / 4


def test_empty_histogram_says_so():
    root = parse(svg.histogram_svg({}, Metric.CPU, title="A"))
    assert not rects(root, "apiprof-bar")
    assert "no samples" in [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_heat_strip_colour_tracks_cost_and_opacity_tracks_samples():
    root = parse(svg.heat_strip_svg({6: 100, 13: 25, 20: 50}, Metric.CPU, title="A"))
    cells = {int(c.get("data-bucket")): c for c in rects(root, "apiprof-cell")}
    assert set(cells) == {6, 13, 20}
    assert cells[6].get("fill") == svg.heat_colour(0.0) == "#3b82f6"  # cheapest: cool blue
    assert cells[20].get("fill") == svg.heat_colour(1.0) == "#dc2626"  # most expensive: hot red
    opacity = {i: float(c.get("fill-opacity")) for i, c in cells.items()}
    assert (
        opacity[6] == 1.0
        and opacity[20] == pytest.approx(0.6)
        and opacity[13] == pytest.approx(0.4)
    )


def test_heat_scale_is_monotonic_from_cool_to_hot():
    reds = [int(svg.heat_colour(p / 10)[1:3], 16) for p in range(11)]
    blues = [int(svg.heat_colour(p / 10)[5:7], 16) for p in range(11)]
    assert reds[0] < reds[-1] and blues[0] > blues[-1]
    positions = [svg.heat_position(Metric.CPU, i) for i in range(30)]
    assert positions == sorted(positions) and positions[0] == 0.0 and positions[-1] == 1.0
    assert svg.heat_position(Metric.ALLOC_INCL, ZERO_BUCKET) == 0.0


def test_growth_chart_draws_points_and_the_fitted_curve():
    sizes, costs = [10, 100, 1000], [130.0, 400.0, 3100.0]
    fit = fit_growth(sizes, costs)
    root = parse(
        svg.growth_svg(
            list(zip(sizes, costs, strict=False)), fit, Metric.WALL, title="g", size_axis="items"
        )
    )
    circles = list(root.iter("{http://www.w3.org/2000/svg}circle"))
    assert len(circles) == 3
    ys = [float(c.get("cy")) for c in circles]
    assert ys == sorted(ys, reverse=True)  # higher cost is drawn higher (smaller y)
    curve = next(
        p
        for p in root.iter("{http://www.w3.org/2000/svg}polyline")
        if p.get("class") == "apiprof-fit"
    )
    assert len(curve.get("points").split()) == 41
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert {"10", "100", "1000", "items (log scale)"} <= set(labels)
    xs = [float(c.get("cx")) for c in circles]
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])  # log axis: 10, 100, 1000 evenly spaced


def test_a_constant_growth_curve_is_its_two_ends():
    """41 points of a flat line draw the same line as its two ends, for a fraction of the cost."""
    fit = fit_growth([10, 100, 1000], [50.0, 51.0, 50.0])
    assert fit is not None and fit.constant
    root = parse(
        svg.growth_svg([(10, 50.0), (100, 51.0), (1000, 50.0)], fit, Metric.WALL, title="g")
    )
    [curve] = [
        p
        for p in root.iter("{http://www.w3.org/2000/svg}polyline")
        if p.get("class") == "apiprof-fit"
    ]
    ends = [tuple(map(float, point.split(","))) for point in curve.get("points").split()]
    assert len(ends) == 2 and ends[0][1] == ends[1][1]  # horizontal
    circles = [float(c.get("cx")) for c in root.iter("{http://www.w3.org/2000/svg}circle")]
    assert (ends[0][0], ends[1][0]) == (min(circles), max(circles))  # spans every measured size


def test_growth_chart_without_fit_draws_only_points():
    root = parse(svg.growth_svg([(1, 5.0), (2, 6.0)], None, Metric.ALLOC_INCL, title="g"))
    assert not [
        p
        for p in root.iter("{http://www.w3.org/2000/svg}polyline")
        if p.get("class") == "apiprof-fit"
    ]
    assert len(list(root.iter("{http://www.w3.org/2000/svg}circle"))) == 2
