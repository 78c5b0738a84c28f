"""Comparisons and reports as strings for people: one place, so the terminal table and the HTML
page never disagree about a number or a word."""

from __future__ import annotations

import math
from dataclasses import dataclass

from apiprof.analysis.compare import ApiComparison, Comparison, MetricComparison, Verdict
from apiprof.analysis.report import ApiCost, ModuleCost
from apiprof.analysis.stats import Ratio
from apiprof.format import format_value, sparkline
from apiprof.model.histogram import Histogram
from apiprof.model.records import Metric

FAMILY_LABELS = {"time": "time", "alloc": "allocation"}
_VERDICT_WORDS = {
    Verdict.MORE: "allocates more",
    Verdict.LESS: "allocates less",
}


def verdict_text(verdict: Verdict) -> str:
    return _VERDICT_WORDS.get(verdict, str(verdict))


def tone(verdict: Verdict) -> str:
    """ "worse", "better", "few" or "same" — the colour a verdict is shown in."""
    if verdict.is_regression:
        return "worse"
    if verdict.is_improvement:
        return "better"
    return "few" if verdict is Verdict.TOO_FEW else "same"


def format_ratio(ratio: Ratio | None, *, interval: bool = True) -> str:
    """``"3.02× (2.81–3.25)"``; ``"—"`` without an estimate."""
    if ratio is None or not math.isfinite(ratio.value):
        return "—"
    text = f"{ratio.value:.2f}×"
    if interval and math.isfinite(ratio.low) and math.isfinite(ratio.high):
        text += f" ({ratio.low:.2f}–{ratio.high:.2f})"
    return text


def format_q(q: float) -> str:
    if math.isnan(q):
        return "—"
    return f"{q:.1e}" if q < 0.001 else f"{q:.3f}"


def format_change(m: MetricComparison) -> str:
    """``"1.2 µs → 3.6 µs"`` (NEW after machine-speed normalisation)."""
    return f"{format_value(m.metric, m.base_median)} → {format_value(m.metric, m.new_median)}"


@dataclass(frozen=True)
class FamilyCells:
    base: str
    new: str
    change: str
    ratio: str  # with its interval
    ratio_value: str
    p90_ratio: str
    q: str
    verdict: str
    tone: str
    samples: str


def family_cells(m: MetricComparison) -> FamilyCells:
    return FamilyCells(
        base=format_value(m.metric, m.base_median),
        new=format_value(m.metric, m.new_median),
        change=format_change(m),
        ratio=format_ratio(m.median_ratio),
        ratio_value=format_ratio(m.median_ratio, interval=False),
        p90_ratio=format_ratio(m.p90_ratio, interval=False),
        q=format_q(m.q_value),
        verdict=verdict_text(m.verdict),
        tone=tone(m.verdict),
        samples=f"{m.n_base} / {m.n_new}" + ("" if m.matched else " (pooled)"),
    )


def growth_change(api: ApiComparison) -> str:
    """``"O(n) → O(n^2)"`` when the growth class changed, the class when it did not."""
    if api.growth_base == api.growth_new:
        return api.growth_base
    return f"{api.growth_base or '—'} → {api.growth_new or '—'}"


def shown(comparison: Comparison, every: bool) -> list[ApiComparison]:
    """The APIs a person is shown: every one, or those with a verdict other than no change."""
    if every:
        return list(comparison.apis)
    return [api for api in comparison.apis if api.regressed or api.improved]


def method_sentence(comparison: Comparison) -> str:
    o = comparison.options
    return (
        f"{comparison.tests} tests ({o.source} measurements); false discovery rate {o.alpha:g} "
        f"(Benjamini–Hochberg); minimum effect {o.min_effect:.0%} on the median; "
        f"{1 - o.alpha:.0%} intervals; test: stratified Mann–Whitney U (van Elteren) over the "
        f"(scenario, size) slices both databases measured; at least {o.min_samples} samples a side."
    )


def counts_sentence(comparison: Comparison) -> str:
    parts = []
    for family, counts in comparison.counts().items():
        listed = ", ".join(f"{n} {verdict_text(Verdict(v))}" for v, n in counts.items() if n)
        parts.append(f"{FAMILY_LABELS[family]}: {listed or 'nothing compared'}")
    return "; ".join(parts)


# -- reports -----------------------------------------------------------------------------------
def api_median(api: ApiCost) -> str:
    return format_value(api.time_metric or Metric.WALL, api.time_median)


def hist_stat(metric: Metric, hist: Histogram | None, q: float) -> str:
    return format_value(metric, hist.percentile(q) if hist else None)


def growth_summary(module: ModuleCost) -> str:
    """``"O(1)×4 O(n)×2"``."""
    return " ".join(f"{name}×{n}" for name, n in module.growth_classes.items())


def module_spark(module: ModuleCost) -> str:
    return sparkline(module.time)
