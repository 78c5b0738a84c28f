"""Statistics on bucketed distributions: a rank test, false-discovery control, ratio intervals.

Everything here is a pure function of :class:`~apiprof.model.histogram.Histogram` values (read
through ``rows()`` and ``percentile()`` only), so it works unchanged at any bucket resolution:
the log2 buckets of today and finer sub-buckets alike. There is no random component, so the same
inputs always give the same answers, whatever order they arrive in.

* **Test**: Mann–Whitney U with the exact tie correction, stratified as van Elteren's test.
  A bucket is a group of tied values (its members cannot be ordered), except that a bucket whose
  values are all equal — deterministic allocations — is one known value and ranks as such.
  Strata are the (scenario, size) slices both databases measured, so a function measured at sizes
  10 and 1000 is compared size against size, never a mixture against a mixture.
* **False discoveries**: Benjamini–Hochberg adjusted p-values (q-values) over every test made.
* **Effect**: ratio of quantiles (new / base) per stratum, combined as a geometric mean (strata
  weigh the same), with a normal-theory interval on the log scale whose standard errors come from
  order statistics (the approach of Bonett & Price for ratios of medians).

docs/compare.md explains the choice and gives the simulated error rates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from apiprof.model.histogram import Histogram

TieGroups = Sequence[tuple[int, int]]
"""Ordered groups of tied values, cheapest first: ``(count in base, count in new)`` per group."""

_STANDARD_NORMAL = NormalDist()
_CONSTANT_TOLERANCE = 1e-9
"""Relative spread below which a bucket's values count as one exact value."""


def tie_groups(base: Histogram, new: Histogram) -> list[tuple[int, int]]:
    """The two histograms as ordered tie groups over their union of buckets.

    Values in one bucket are ties — unless every value of that bucket, on both sides, is known
    exactly (each side's bucket has zero variance): then each distinct value is its own group.
    """
    cells: dict[int, list[tuple[int, int, float, float]]] = {}
    for side, hist in ((0, base), (1, new)):
        for key, count, total, total_sq in hist.rows():
            if count:
                cells.setdefault(key, []).append((side, count, total, total_sq))
    groups: list[tuple[int, int]] = []
    for key in sorted(cells):
        entries = cells[key]
        if all(_is_constant(count, total, total_sq) for _, count, total, total_sq in entries):
            by_value: dict[float, list[int]] = {}
            for side, count, total, _ in entries:
                value = _round_value(total / count)
                by_value.setdefault(value, [0, 0])[side] += count
            groups.extend((a, b) for _, (a, b) in sorted(by_value.items()))
        else:
            sides = [0, 0]
            for side, count, _, _ in entries:
                sides[side] += count
            groups.append((sides[0], sides[1]))
    return groups


def _is_constant(count: int, total: float, total_sq: float) -> bool:
    # count·Σx² − (Σx)² is count² times the variance; compare it with the squared mean's scale
    return count * total_sq - total * total <= _CONSTANT_TOLERANCE * max(total * total, 1.0)


def _round_value(value: float) -> float:
    return float(f"{value:.9g}")  # sums of equal values can differ in the last bits per side


@dataclass(frozen=True)
class RankSum:
    """One stratum's Mann–Whitney statistic: ``u`` counts (base, new) pairs with new > base, plus
    half the ties; under the null it has mean ``n_base·n_new/2`` and the tie-corrected variance."""

    u: float
    n_base: int
    n_new: int
    variance: float

    @property
    def expected(self) -> float:
        return self.n_base * self.n_new / 2

    @property
    def n(self) -> int:
        return self.n_base + self.n_new


def rank_sum(groups: TieGroups) -> RankSum:
    """Mann–Whitney U and its exact tie-corrected null variance from ordered tie groups."""
    n_base = sum(a for a, _ in groups)
    n_new = sum(b for _, b in groups)
    n = n_base + n_new
    u = 0.0
    below = 0
    ties = 0
    for a, b in groups:
        u += b * (below + a / 2)
        below += a
        t = a + b
        ties += t * t * t - t
    if n < 2:
        return RankSum(u, n_base, n_new, 0.0)
    variance = n_base * n_new / 12 * ((n + 1) - ties / (n * (n - 1)))
    return RankSum(u, n_base, n_new, max(0.0, variance))


@dataclass(frozen=True)
class RankTest:
    """The stratified (van Elteren) test over all strata of one API and metric.

    ``z`` > 0 means the new values tend to be larger; ``p_value`` is two-sided (1.0 when the
    data carry no information: every value tied, or one side empty). ``superiority`` is the
    probability that a new value exceeds a base value (ties count half), averaged over strata
    with the test's weights: 0.5 is no difference.
    """

    z: float
    p_value: float
    superiority: float
    strata: int
    n_base: int
    n_new: int


def stratified_rank_test(strata: Iterable[TieGroups]) -> RankTest:
    """van Elteren's combination of per-stratum Mann–Whitney statistics, weights 1/(n+1).

    Each stratum's U is scaled by ``1/(n_s + 1)`` — the locally most powerful weights when a
    shift is common to every stratum — and the weighted sum is referred to the normal
    distribution with a continuity correction of half the smallest weighted step.
    """
    stat = expected = variance = 0.0
    superiority_weighted = weight_total = 0.0
    n_base = n_new = used = 0
    correction = 0.0
    for groups in strata:
        rs = rank_sum(groups)
        n_base += rs.n_base
        n_new += rs.n_new
        if rs.n_base == 0 or rs.n_new == 0:
            continue
        used += 1
        weight = 1.0 / (rs.n + 1)
        stat += weight * rs.u
        expected += weight * rs.expected
        variance += weight * weight * rs.variance
        pairs = rs.n_base * rs.n_new
        superiority_weighted += weight * pairs * (rs.u / pairs)
        weight_total += weight * pairs
        correction = max(correction, weight / 2)
    superiority = superiority_weighted / weight_total if weight_total else 0.5
    if variance <= 0:
        return RankTest(0.0, 1.0, superiority, used, n_base, n_new)
    deviation = stat - expected
    deviation = math.copysign(max(0.0, abs(deviation) - correction), deviation)
    z = deviation / math.sqrt(variance)
    p = math.erfc(abs(z) / math.sqrt(2))
    return RankTest(z, min(1.0, p), superiority, used, n_base, n_new)


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), in the input order.

    Rejecting every test with ``q <= alpha`` keeps the expected share of false discoveries among
    the rejections at most ``alpha`` (for independent or positively dependent tests — timings
    on one machine share its load, which is positive dependence). NaN marks a test not made: it
    stays NaN and does not count in the family.
    """
    made = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    made.sort(key=lambda i: (p_values[i], i))
    q = [math.nan] * len(p_values)
    running = 1.0
    m = len(made)
    for rank in range(m, 0, -1):
        i = made[rank - 1]
        running = min(running, p_values[i] * m / rank)
        q[i] = running
    return q


@dataclass(frozen=True)
class Ratio:
    """new / base, with a confidence interval ``[low, high]`` at ``confidence``."""

    value: float
    low: float
    high: float
    confidence: float

    @property
    def percent(self) -> float:
        """Change in percent: +200 for a 3× ratio, −50 for 0.5×."""
        return (self.value - 1.0) * 100


def _log_quantile(hist: Histogram, q: float) -> tuple[float, float]:
    """ln of the q-quantile (values floored at 1 unit) and its standard error from the order
    statistics one binomial standard deviation either side of its rank."""
    n = hist.count
    rank = n * q
    spread = math.sqrt(n * q * (1 - q))
    low = hist.percentile(100 * max(0.0, rank - spread) / n)
    high = hist.percentile(100 * min(float(n), rank + spread) / n)
    centre = hist.percentile(100 * q)
    return _ln(centre), (_ln(high) - _ln(low)) / 2


def _ln(value: float) -> float:
    return math.log(max(value, 1.0))


@dataclass(frozen=True)
class QuantileShift:
    """A quantile in BASE and in NEW, and their ratio with its interval.

    With one slice ``base`` and ``new`` are that slice's quantiles; with several they are the
    geometric means of the slice quantiles (each slice weighing the same), so ``new / base`` is
    exactly ``ratio``.
    """

    base: float
    new: float
    ratio: Ratio


def compare_quantile(
    strata: Iterable[tuple[Histogram, Histogram]],
    q: float,
    confidence: float = 0.95,
    new_scale: float = 1.0,
) -> QuantileShift | None:
    """The q-quantile in BASE and NEW and their ratio, combined over strata; None without a
    stratum that has samples on both sides. NEW's values count divided by ``new_scale`` (the
    machine-speed factor): quantiles scale exactly, so this is done on the estimates rather
    than by re-bucketing.

    Per stratum the log ratio has variance ``se_base² + se_new²``; strata weigh the same (a
    scenario that got many samples because it is cheap must not decide the figure, as in
    :func:`~apiprof.model.pooling.pool_scenarios`), so the quantiles and the ratio are geometric
    means over the strata. Values below one unit (1 ns, 1 byte) count as one unit, so a
    ratio against "nothing allocated" stays finite.
    """
    total_weight = log_base = log_new = var_sum = 0.0
    for base, new in strata:
        if not base.count or not new.count:
            continue
        lb, se_b = _log_quantile(base, q)
        ln_, se_n = _log_quantile(new, q)
        total_weight += 1
        log_base += lb
        log_new += ln_
        var_sum += se_b * se_b + se_n * se_n
    if not total_weight:
        return None
    log_new -= total_weight * math.log(new_scale)
    centre = (log_new - log_base) / total_weight
    half = _STANDARD_NORMAL.inv_cdf(0.5 + confidence / 2) * math.sqrt(var_sum) / total_weight
    return QuantileShift(
        math.exp(log_base / total_weight),
        math.exp(log_new / total_weight),
        Ratio(math.exp(centre), math.exp(centre - half), math.exp(centre + half), confidence),
    )
