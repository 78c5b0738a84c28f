"""The shared human-readable cost formatting."""

from __future__ import annotations

import pytest

from apiprof.format import (
    cost_hint,
    format_bucket_range,
    format_bytes,
    format_ns,
    printable,
    sparkline,
    text_histogram,
)
from apiprof.model.histogram import Histogram
from apiprof.model.records import Metric


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0 ns"),
        (87, "87 ns"),
        (3200, "3.2 µs"),
        (45_600, "45.6 µs"),
        (123_000_000, "123 ms"),
        (2.5e9, "2.5 s"),
    ],
)
def test_format_ns(ns, text):
    assert format_ns(ns) == text


@pytest.mark.parametrize(
    ("n", "text"), [(0, "0 B"), (1000, "1000 B"), (1126, "1.1 KiB"), (3 * 2**20, "3.0 MiB")]
)
def test_format_bytes(n, text):
    assert format_bytes(n) == text


def test_missing_values_render_as_dash():
    assert format_ns(None) == "—" and format_bytes(float("nan")) == "—"


def test_cost_hint():
    assert cost_hint(3200, 1126) == "≈3.2 µs · 1.1 KiB"
    assert cost_hint(None, None) == "not profiled"


def test_bucket_range_labels():
    assert format_bucket_range(Metric.ALLOC_INCL, 10) == "1.0 KiB – 2.0 KiB"
    assert format_bucket_range(Metric.CPU, -1) == "< 1 ns"


def test_sparkline_and_text_histogram_follow_counts():
    hist = Histogram.of([3] * 10 + [20] * 5)  # buckets 1 and 4, empty 2 and 3 between
    assert sparkline(hist) == "█  ▄"
    lines = text_histogram(hist, Metric.ALLOC_INCL, width=10)
    assert len(lines) == 4
    assert lines[0].endswith("██████████ 10") and lines[-1].endswith("█████      5")


def test_printable_escapes_what_would_drive_the_terminal() -> None:
    text = "boom \x1b[2J\x1b[31mred\r\u202eevil\x00 µs\tok\nnext"
    shown = printable(text)
    assert "\x1b" not in shown and "\r" not in shown and "\u202e" not in shown
    assert "\\x1b[2J" in shown and "\\u202e" in shown and "\\x00" in shown
    assert "µs\tok\nnext" in shown
