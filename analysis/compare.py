"""``apiprof compare BASE NEW``: which APIs cost more in NEW than in BASE, API by API.

For every API both databases measured, and for its time and its allocation separately:

1. the slices both measured are paired — same scenario, same input size — so a change in which
   sizes a scan ran can never pose as a change in cost (with no slice in common, as between a lab
   scan and collected data, the pooled distributions are compared and the result says so);
2. NEW's times are divided by the machine-speed factor (:mod:`apiprof.analysis.speed`);
3. a stratified rank test gives a p-value, the ratio of medians and of p90s an effect with a
   confidence interval (:mod:`apiprof.analysis.stats`);
4. Benjamini–Hochberg turns all p-values into q-values, and the verdict needs both
   ``q <= alpha`` and a median ratio beyond the minimum effect.

The result ranks regressions first, largest excess cost first.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from apiprof.analysis import stats
from apiprof.analysis.speed import SpeedMethod, SpeedNormalisation, choose_speed, normalised
from apiprof.db import query
from apiprof.db.schema import open_db
from apiprof.db.slices import DatabaseInfo, Slice, Source, api_infos, describe, sliced_histograms
from apiprof.errors import UsageError
from apiprof.model.histogram import Histogram
from apiprof.model.pooling import pool_scenarios
from apiprof.model.records import Metric

MIN_SAMPLES = 10
"""Samples each side needs before a verdict: below it no test could survive hundreds of others."""

TEST_NAME = "stratified Mann–Whitney U (van Elteren), tie-corrected; Benjamini–Hochberg FDR"


class Verdict(enum.StrEnum):
    SLOWER = "slower"  # time, a regression
    FASTER = "faster"
    MORE = "more"  # allocation: allocates more per call, a regression
    LESS = "less"
    SAME = "no change"
    TOO_FEW = "too few samples"

    @property
    def is_regression(self) -> bool:
        return self in (Verdict.SLOWER, Verdict.MORE)

    @property
    def is_improvement(self) -> bool:
        return self in (Verdict.FASTER, Verdict.LESS)


@dataclass(frozen=True)
class Family:
    """Time or allocation: the metrics that stand for it (first measured on both sides wins)."""

    name: str
    metrics: tuple[Metric, ...]
    worse: Verdict
    better: Verdict
    normalised: bool  # divided by the machine-speed factor


TIME = Family("time", (Metric.WALL, Metric.CPU), Verdict.SLOWER, Verdict.FASTER, True)
ALLOC = Family("alloc", (Metric.ALLOC_INCL,), Verdict.MORE, Verdict.LESS, False)
FAMILIES = (TIME, ALLOC)

FAIL_ON_CHOICES = {
    "slower": {Verdict.SLOWER},
    "faster": {Verdict.FASTER},
    "more": {Verdict.MORE},
    "less": {Verdict.LESS},
    "regression": {Verdict.SLOWER, Verdict.MORE},
    "change": {Verdict.SLOWER, Verdict.FASTER, Verdict.MORE, Verdict.LESS},
}
"""``--fail-on`` words and the verdicts each one fails on."""


@dataclass(frozen=True)
class CompareOptions:
    alpha: float = 0.05  # false discovery rate; intervals are at confidence 1 - alpha
    min_effect: float = 0.10  # smallest median change that counts: 10 % slower or faster
    speed: SpeedMethod = SpeedMethod.AUTO
    source: Source = Source.ALL
    package: str | None = None  # only APIs of this package
    min_samples: int = MIN_SAMPLES

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise UsageError(f"--alpha must be between 0 and 1 (e.g. 0.05), got {self.alpha}")
        if not (self.min_effect >= 0 and math.isfinite(self.min_effect)):
            raise UsageError(f"--min-effect must be 0 or more (e.g. 10%), got {self.min_effect}")
        if self.min_samples < 2:
            raise UsageError("the minimum sample count must be at least 2")

    def to_json(self) -> dict[str, object]:
        return {
            "alpha": self.alpha,
            "min_effect": self.min_effect,
            "speed": str(self.speed),
            "source": str(self.source),
            "package": self.package,
            "min_samples": self.min_samples,
            "test": TEST_NAME,
        }


@dataclass(frozen=True)
class MetricComparison:
    """One API's time or allocation, BASE against NEW (NEW's times already normalised).

    ``slices`` is the number of (scenario, size) slices compared; ``matched`` is False when the
    databases shared none and whole distributions were compared. ``base``/``new`` are the
    compared samples merged, for display. ``p_value``/``q_value`` are NaN when no test was made.
    """

    family: str
    metric: Metric
    n_base: int
    n_new: int
    slices: int
    matched: bool
    base: Histogram = field(repr=False)
    new: Histogram = field(repr=False)
    median: stats.QuantileShift | None
    p90: stats.QuantileShift | None
    p_value: float
    superiority: float
    q_value: float = math.nan
    verdict: Verdict = Verdict.TOO_FEW

    @property
    def tested(self) -> bool:
        return not math.isnan(self.p_value)

    @property
    def median_ratio(self) -> stats.Ratio | None:
        return self.median.ratio if self.median else None

    @property
    def p90_ratio(self) -> stats.Ratio | None:
        return self.p90.ratio if self.p90 else None

    @property
    def base_median(self) -> float:
        return self.median.base if self.median else math.nan

    @property
    def new_median(self) -> float:
        return self.median.new if self.median else math.nan

    @property
    def excess(self) -> float:
        """Extra cost per typical call in NEW, in the metric's unit (negative: cheaper)."""
        return self.new_median - self.base_median

    @property
    def log_ratio(self) -> float:
        return math.log(self.median_ratio.value) if self.median_ratio else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "metric": str(self.metric),
            "unit": self.metric.unit,
            "verdict": str(self.verdict),
            "n_base": self.n_base,
            "n_new": self.n_new,
            "slices": self.slices,
            "matched": self.matched,
            "base_median": _number(self.base_median),
            "new_median": _number(self.new_median),
            "base_p90": _number(self.p90.base if self.p90 else math.nan),
            "new_p90": _number(self.p90.new if self.p90 else math.nan),
            "excess": _number(self.excess),
            "median_ratio": _ratio_json(self.median_ratio),
            "p90_ratio": _ratio_json(self.p90_ratio),
            "p_value": _number(self.p_value),
            "q_value": _number(self.q_value),
            "superiority": _number(self.superiority),
        }


@dataclass(frozen=True)
class ApiComparison:
    qualname: str
    module: str
    time: MetricComparison | None  # None: not measured on both sides
    alloc: MetricComparison | None
    growth_base: str = ""
    growth_new: str = ""

    def families(self) -> Iterable[MetricComparison]:
        return (m for m in (self.time, self.alloc) if m is not None)

    @property
    def verdicts(self) -> set[Verdict]:
        return {m.verdict for m in self.families()}

    @property
    def regressed(self) -> bool:
        return any(v.is_regression for v in self.verdicts)

    @property
    def improved(self) -> bool:
        return any(v.is_improvement for v in self.verdicts)

    def rank_key(self) -> tuple:
        """Regressions first (largest excess ratio first), then the unchanged by time ratio,
        then improvements; the name breaks ties so the order is total."""
        if self.regressed:
            worst = max(m.log_ratio for m in self.families() if m.verdict.is_regression)
            return (0, -worst, self.qualname)
        headline = self.time or self.alloc
        log_ratio = headline.log_ratio if headline else 0.0
        return (2 if self.improved else 1, -log_ratio, self.qualname)

    def to_json(self) -> dict[str, object]:
        return {
            "qualname": self.qualname,
            "module": self.module,
            "time": self.time.to_json() if self.time else None,
            "alloc": self.alloc.to_json() if self.alloc else None,
            "growth": {"base": self.growth_base or None, "new": self.growth_new or None},
        }


@dataclass(frozen=True)
class Comparison:
    base: DatabaseInfo
    new: DatabaseInfo
    options: CompareOptions
    speed: SpeedNormalisation
    apis: tuple[ApiComparison, ...]  # ranked: see ApiComparison.rank_key
    only_in_base: tuple[str, ...]
    only_in_new: tuple[str, ...]
    tests: int  # tests in the false-discovery family

    @property
    def speed_warning(self) -> str:
        return self.speed.doubt(self.options.min_effect)

    def counts(self) -> dict[str, dict[str, int]]:
        """``{"time": {"slower": 1, ...}, "alloc": {...}}`` with every verdict present."""
        out = {
            f.name: {str(v): 0 for v in (f.worse, f.better, Verdict.SAME, Verdict.TOO_FEW)}
            for f in FAMILIES
        }
        for api in self.apis:
            for m in api.families():
                out[m.family][str(m.verdict)] += 1
        return out

    def failing(self, verdicts: set[Verdict]) -> list[ApiComparison]:
        """APIs with any of ``verdicts`` (the ones a ``--fail-on`` gate stops on)."""
        return [api for api in self.apis if api.verdicts & verdicts]

    def to_json(self) -> dict[str, object]:
        return {
            "base": self.base.to_json(),
            "new": self.new.to_json(),
            "options": self.options.to_json(),
            "speed": {**self.speed.to_json(), "warning": self.speed_warning or None},
            "tests": self.tests,
            "summary": self.counts(),
            "apis": [api.to_json() for api in self.apis],
            "only_in_base": list(self.only_in_base),
            "only_in_new": list(self.only_in_new),
        }


def _number(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def _ratio_json(ratio: stats.Ratio | None) -> dict[str, float | None] | None:
    if ratio is None:
        return None
    return {
        "value": _number(ratio.value),
        "low": _number(ratio.low),
        "high": _number(ratio.high),
        "confidence": ratio.confidence,
    }


# -- the comparison ----------------------------------------------------------------------------
Sliced = Mapping[str, Mapping[str, Mapping[Slice, Histogram]]]
_METRICS = [str(m) for f in FAMILIES for m in f.metrics]


def compare_databases(
    base_path: str | Path, new_path: str | Path, options: CompareOptions | None = None
) -> Comparison:
    """Compare two profile databases (both opened read-only)."""
    options = options or CompareOptions()
    loaded = []
    for path in (base_path, new_path):
        db = open_db(path, readonly=True)
        try:
            sliced = sliced_histograms(db, _METRICS, source=options.source)
            infos = api_infos(db, sliced)
            if options.package:
                sliced = {q: v for q, v in sliced.items() if infos[q].package == options.package}
            growth = query.headline_growth(db, sliced)
            loaded.append((describe(db, str(path)), sliced, infos, growth))
        finally:
            db.conn.close()
    (base_info, base, base_apis, base_growth), (new_info, new, _, new_growth) = loaded
    comparison = compare_sliced(base, new, base_info, new_info, options)
    apis = tuple(
        replace(
            api,
            module=base_apis[api.qualname].module,
            growth_base=_growth_class(base_growth.get(api.qualname)),
            growth_new=_growth_class(new_growth.get(api.qualname)),
        )
        for api in comparison.apis
    )
    return replace(comparison, apis=apis)


def _growth_class(row: query.GrowthRow | None) -> str:
    return row.growth_class if row else ""


def compare_sliced(
    base: Sliced,
    new: Sliced,
    base_info: DatabaseInfo,
    new_info: DatabaseInfo,
    options: CompareOptions,
) -> Comparison:
    """The comparison proper, on histograms already read: qualname → metric → slice → histogram."""
    measured_base = {qualname for qualname, by_metric in base.items() if _measured(by_metric)}
    measured_new = {qualname for qualname, by_metric in new.items() if _measured(by_metric)}
    shared = sorted(measured_base & measured_new)

    raw_ratios = []
    for qualname in shared:
        metric = _family_metric(base[qualname], new[qualname], TIME)
        if metric is None:
            continue
        pairs, _ = _paired_slices(base[qualname][metric], new[qualname][metric])
        if (
            min(sum(b.count for b, _ in pairs), sum(n.count for _, n in pairs))
            >= options.min_samples
        ):
            median = stats.compare_quantile(pairs, 0.5)
            if median is not None:
                raw_ratios.append(median.ratio.value)
    speed = choose_speed(
        options.speed, base_info.machine_speed_ns, new_info.machine_speed_ns, raw_ratios
    )

    compared = []
    for qualname in shared:
        families = {
            family.name: _compare_family(
                base[qualname], new[qualname], family, speed.factor, options
            )
            for family in FAMILIES
        }
        compared.append(ApiComparison(qualname, "", families["time"], families["alloc"]))

    decided, tests = _decide(compared, options)
    return Comparison(
        base=base_info,
        new=new_info,
        options=options,
        speed=speed,
        apis=tuple(sorted(decided, key=ApiComparison.rank_key)),
        only_in_base=tuple(sorted(measured_base - measured_new)),
        only_in_new=tuple(sorted(measured_new - measured_base)),
        tests=tests,
    )


def _measured(by_metric: Mapping[str, Mapping[Slice, Histogram]]) -> bool:
    return any(by_metric.get(str(m)) for family in FAMILIES for m in family.metrics)


def _family_metric(
    base: Mapping[str, Mapping[Slice, Histogram]],
    new: Mapping[str, Mapping[Slice, Histogram]],
    family: Family,
) -> str | None:
    """The first metric of ``family`` both sides measured (wall time before CPU time)."""
    return next((str(m) for m in family.metrics if base.get(str(m)) and new.get(str(m))), None)


def _paired_slices(
    base: Mapping[Slice, Histogram], new: Mapping[Slice, Histogram]
) -> tuple[list[tuple[Histogram, Histogram]], bool]:
    """(base, new) histograms per slice both measured; the pooled pair when they share none."""
    shared = sorted(set(base) & set(new))
    if shared:
        return [(base[s], new[s]) for s in shared], True
    return [(pool_scenarios(base.values()), pool_scenarios(new.values()))], False


def _compare_family(
    base: Mapping[str, Mapping[Slice, Histogram]],
    new: Mapping[str, Mapping[Slice, Histogram]],
    family: Family,
    speed_factor: float,
    options: CompareOptions,
) -> MetricComparison | None:
    metric = _family_metric(base, new, family)
    if metric is None:
        return None
    raw, matched = _paired_slices(base[metric], new[metric])
    factor = speed_factor if family.normalised else 1.0
    # the rank test needs both sides on one bucket grid; quantiles scale exactly (below)
    pairs = [(b, normalised(n, factor)) for b, n in raw]
    merged_base = pool_scenarios(b for b, _ in pairs)
    merged_new = pool_scenarios(n for _, n in pairs)
    enough = min(merged_base.count, merged_new.count) >= options.min_samples
    confidence = 1 - options.alpha
    test = stats.stratified_rank_test(stats.tie_groups(b, n) for b, n in pairs) if enough else None
    return MetricComparison(
        family=family.name,
        metric=Metric(metric),
        n_base=merged_base.count,
        n_new=merged_new.count,
        slices=len(pairs),
        matched=matched,
        base=merged_base,
        new=merged_new,
        median=stats.compare_quantile(raw, 0.5, confidence, factor),
        p90=stats.compare_quantile(raw, 0.9, confidence, factor),
        p_value=test.p_value if test else math.nan,
        superiority=test.superiority if test else math.nan,
    )


def _decide(
    compared: list[ApiComparison], options: CompareOptions
) -> tuple[list[ApiComparison], int]:
    """q-values over every test made, then a verdict per API and family."""
    made = [(i, m) for i, api in enumerate(compared) for m in api.families() if m.tested]
    q_values = stats.benjamini_hochberg([m.p_value for _, m in made])
    q_of = {(i, m.family): q for (i, m), q in zip(made, q_values, strict=True)}
    family_of = {f.name: f for f in FAMILIES}
    decided = []
    for i, api in enumerate(compared):
        updated = {}
        for m in api.families():
            q = q_of.get((i, m.family), math.nan)
            updated[m.family] = replace(
                m, q_value=q, verdict=_verdict(m, q, family_of[m.family], options)
            )
        decided.append(replace(api, time=updated.get("time"), alloc=updated.get("alloc")))
    return decided, len(made)


def _verdict(m: MetricComparison, q: float, family: Family, options: CompareOptions) -> Verdict:
    if not m.tested or m.median_ratio is None:
        return Verdict.TOO_FEW
    if q > options.alpha:
        return Verdict.SAME
    ratio, threshold = m.median_ratio, 1 + options.min_effect
    if m.superiority > 0.5 and ratio.value >= threshold and ratio.low > 1:
        return family.worse
    if m.superiority < 0.5 and ratio.value <= 1 / threshold and ratio.high < 1:
        return family.better
    return Verdict.SAME
