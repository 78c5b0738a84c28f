"""Human-readable costs, shared by the CLI, the Sphinx extension and the language server.

One place decides how "3.2 µs" and "1.1 KiB" look, so the docs, the terminal and the editor
never disagree about a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

from apiprof.model.buckets import ZERO_BUCKET, bucket_bounds
from apiprof.model.figures import Distribution
from apiprof.model.histogram import Histogram
from apiprof.model.records import Metric

BLOCKS = " ▁▂▃▄▅▆▇█"


def _in_unit(scaled: float, unit: str) -> str:
    """Three significant digits at most: two decimals below 1, one below 100."""
    if scaled >= 100:
        return f"{scaled:.0f} {unit}"
    return f"{scaled:.1f} {unit}" if scaled >= 1 else f"{scaled:.2f} {unit}"


def _unit_format(
    name: str, doc: str, base: str, units: tuple[str, str, str], step: float
) -> Callable[[float | None], str]:
    """A number in the largest of ``base`` and ``units`` (each ``step`` times the last) it
    reaches, whole numbers of ``base``; None/NaN → ``"—"``. A docs build formats ~20k numbers
    that are all different, so the units are compared in line (a loop over them took twice as
    long) and no cache is kept."""
    first, second, third = step, step**2, step**3
    small, middle, large = units

    def formatted(value: float | None) -> str:
        if value is None or value != value:  # NaN
            return "—"
        magnitude = value if value >= 0 else -value
        if magnitude < first:
            return f"{value:.0f} {base}"
        if magnitude < second:
            return _in_unit(value / first, small)
        if magnitude < third:
            return _in_unit(value / second, middle)
        return _in_unit(value / third, large)

    formatted.__name__ = formatted.__qualname__ = name
    formatted.__doc__ = doc
    return formatted


format_ns = _unit_format(
    "format_ns", """``1234.0`` → ``"1.2 µs"``; None/NaN → ``"—"``.""", "ns", ("µs", "ms", "s"), 1e3
)
format_bytes = _unit_format(
    "format_bytes",
    """``1126.4`` → ``"1.1 KiB"``; None/NaN → ``"—"``.""",
    "B",
    ("KiB", "MiB", "GiB"),
    2.0**10,
)


def format_count(n: float | None) -> str:
    """A number of calls: ``"12"``; None/NaN → ``"—"``."""
    return "—" if n is None or n != n else f"{n:.0f}"


def value_formatter(metric: Metric) -> Callable[[float | None], str]:
    """The function :func:`format_value` uses for ``metric``, for loops over numbers that are
    all different (the medians of a page's scenarios), where the memo only costs."""
    return _FORMATTERS[metric]


def _formatter(metric: Metric) -> Callable[[float | None], str]:
    if metric.is_time:
        return format_ns
    return format_count if metric is Metric.CALLS else format_bytes


_FORMATTERS = {metric: _formatter(metric) for metric in Metric}


@lru_cache(maxsize=4096)
def format_value(metric: Metric, value: float | None) -> str:
    """A value of ``metric`` for people. Memoised: docs pages format the same bucket bounds,
    axis ticks and medians thousands of times."""
    return value_formatter(metric)(value)


def worth_showing(metric: Metric, hist: Distribution | None) -> bool:
    """Whether a display shows this metric: it has samples, and for I/O, some call moved a byte
    (most APIs do no I/O; a row of zeros per metric would bury the ones that do). Stored and
    JSON data keep the zeros."""
    return hist is not None and bool(hist) and not (metric.is_io and hist.total == 0)


@lru_cache(maxsize=1024)
def format_bucket_range(metric: Metric, index: int) -> str:
    """``"1.0 µs – 2.0 µs"`` style label for a bucket."""
    low, high = bucket_bounds(index)
    if index == ZERO_BUCKET:
        return f"< {format_value(metric, 1)}"
    return f"{format_value(metric, low)} – {format_value(metric, high)}"


def cost_hint(time_ns: float | None, alloc_bytes: float | None) -> str:
    """The short hint shown beside a name: ``"≈3.2 µs · 1.1 KiB"`` (``"not profiled"`` if empty)."""
    parts = []
    if time_ns is not None:
        parts.append(f"≈{format_ns(time_ns)}")
    if alloc_bytes is not None:
        parts.append(format_bytes(alloc_bytes))
    return " · ".join(parts) if parts else "not profiled"


def sparkline(hist: Histogram) -> str:
    """A one-line unicode histogram from the lowest to the highest non-empty bucket."""
    counts = hist.counts()
    if not counts:
        return ""
    low, high = min(counts), max(counts)
    peak = max(counts.values())
    return "".join(
        BLOCKS[math.ceil(counts.get(i, 0) / peak * (len(BLOCKS) - 1))] for i in range(low, high + 1)
    )


def text_histogram(hist: Histogram, metric: Metric, width: int = 30) -> list[str]:
    """Multi-line bar chart: one line per bucket with its range, a bar and the count."""
    counts = hist.counts()
    if not counts:
        return []
    peak = max(counts.values())
    labels = {i: format_bucket_range(metric, i) for i in range(min(counts), max(counts) + 1)}
    pad = max(len(label) for label in labels.values())
    lines = []
    for index, label in labels.items():
        n = counts.get(index, 0)
        bar = "█" * round(n / peak * width) if n else ""
        lines.append(f"{label:>{pad}} │{bar:<{width}} {n}")
    return lines


_SPOOFING = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional overrides: they reorder what a terminal shows (text can hide as code)."""


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: control characters (but newline and tab) and
    bidirectional overrides shown as escapes. Texts from profiled packages — docstrings,
    exception messages, repr of inputs — must not move the cursor or recolour the screen."""
    return "".join(
        ch
        if ch in "\n\t" or (ch.isprintable() and ch not in _SPOOFING)
        else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )
