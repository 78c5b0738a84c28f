"""The statistics behind ``apiprof compare``: rank sums against brute force, FDR control, ratio
intervals, speed normalisation, and the error rates proven by simulation.

The simulations are seeded (same figures every run) and use the sample counts a default
``apiprof-scan`` stores per API: 20 runs per (scenario, size) slice (``--repeat 20``), one slice
for an API without a size axis (the worst case) and five for a synthesised sized scenario
(sizes 10…1000). Each slice's timings are lognormal around a median placed anywhere within its
octave (σ = 0.25 in natural log — what per-slice spreads in a ``json`` scan look like) with 5 %
outliers 2–20× slower (preempted calls).
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from apiprof.analysis import stats
from apiprof.analysis.compare import CompareOptions, Verdict, compare_sliced
from apiprof.analysis.speed import SpeedMethod, normalised
from apiprof.db.slices import DatabaseInfo
from apiprof.model.histogram import Histogram
from apiprof.model.records import NO_SIZE, Metric

WALL = str(Metric.WALL)
ALLOC = str(Metric.ALLOC_INCL)


def hist(*values: float) -> Histogram:
    return Histogram.of(values)


# -- rank sums ---------------------------------------------------------------------------------
def brute_u(base: list[int], new: list[int]) -> float:
    return sum((n > b) + 0.5 * (n == b) for b in base for n in new)


def test_rank_sum_matches_brute_force_u_and_the_exact_permutation_variance():
    rng = random.Random(5)
    for _ in range(20):
        base = [rng.randint(0, 3) for _ in range(rng.randint(2, 6))]
        new = [rng.randint(0, 3) for _ in range(rng.randint(2, 5))]
        keys = sorted(set(base + new))
        groups = [(base.count(k), new.count(k)) for k in keys]
        rs = stats.rank_sum(groups)
        assert rs.u == brute_u(base, new)
        # every way of relabelling the pooled values: the exact null mean and variance of U
        pooled = base + new
        us = [
            brute_u(
                [pooled[i] for i in range(len(pooled)) if i not in chosen],
                [pooled[i] for i in chosen],
            )
            for chosen in map(set, itertools.combinations(range(len(pooled)), len(new)))
        ]
        mean = sum(us) / len(us)
        variance = sum((u - mean) ** 2 for u in us) / len(us)
        assert rs.expected == pytest.approx(mean)
        assert rs.variance == pytest.approx(variance)


def test_log2_buckets_are_ties_but_exactly_known_values_are_ranked():
    # time: values spread inside bucket 6 cannot be ordered
    assert stats.tie_groups(hist(70, 90), hist(100, 120)) == [(2, 2)]
    # allocation: 100 B every call against 120 B every call, both in bucket 6, are two values
    assert stats.tie_groups(hist(*[100] * 5), hist(*[120] * 4)) == [(5, 0), (0, 4)]
    # one side spread, the other exact: the bucket stays one group of ties
    assert stats.tie_groups(hist(100, 100), hist(70, 120)) == [(2, 2)]
    # zero-byte calls tie; a single sample is a known value even beside another in its bucket
    assert stats.tie_groups(hist(0, 0, 5), hist(0, 6)) == [(2, 1), (1, 0), (0, 1)]


def test_rank_test_direction_and_no_information():
    slower = stats.stratified_rank_test([stats.tie_groups(hist(*[1000] * 20), hist(*[3000] * 20))])
    assert slower.z > 5 and slower.p_value < 1e-6 and slower.superiority == 1.0
    same = stats.stratified_rank_test([stats.tie_groups(hist(*[64] * 20), hist(*[64] * 20))])
    assert (same.p_value, same.superiority) == (1.0, 0.5)
    one_sided = stats.stratified_rank_test([[(3, 0)]])
    assert one_sided.p_value == 1.0 and one_sided.strata == 0


def test_strata_combine_evidence():
    """Three slices with the same modest shift give a smaller p than any one of them."""
    pair = stats.tie_groups(hist(*[100] * 6, *[300] * 4), hist(*[100] * 3, *[300] * 7))
    alone = stats.stratified_rank_test([pair])
    together = stats.stratified_rank_test([pair, pair, pair])
    assert together.p_value < alone.p_value < 0.5
    assert together.z > 0 and together.superiority == pytest.approx(alone.superiority)


# -- false discovery rate ----------------------------------------------------------------------
def test_benjamini_hochberg_adjusts_in_input_order_and_skips_tests_not_made():
    q = stats.benjamini_hochberg([0.01, 0.04, math.nan, 0.03, 0.005])
    assert q[:2] == pytest.approx([0.02, 0.04]) and math.isnan(q[2])
    assert q[3:] == pytest.approx([0.04, 0.02])
    assert stats.benjamini_hochberg([]) == []
    assert stats.benjamini_hochberg([0.5, 1.0]) == [1.0, 1.0]


# -- ratios ------------------------------------------------------------------------------------
def test_quantile_ratio_of_exact_values_is_exact():
    shift = stats.compare_quantile([(hist(*[1000] * 10), hist(*[3000] * 10))], 0.5)
    assert shift is not None
    assert (shift.base, shift.new) == pytest.approx((1000, 3000))
    assert (shift.ratio.value, shift.ratio.low, shift.ratio.high) == pytest.approx((3, 3, 3))
    # nothing allocated on one side: values below one unit count as one, the ratio stays finite
    zero = stats.compare_quantile([(hist(*[0] * 10), hist(*[64] * 10))], 0.5)
    assert zero is not None and zero.ratio.value == pytest.approx(64)
    assert stats.compare_quantile([(Histogram(), hist(1))], 0.5) is None
    # NEW measured on a machine 1.5× slower: its quantiles count divided by 1.5
    scaled = stats.compare_quantile([(hist(*[1000] * 10), hist(*[4500] * 10))], 0.5, new_scale=1.5)
    assert scaled is not None and (scaled.new, scaled.ratio.value) == pytest.approx((3000, 3))


def test_slices_combine_to_the_geometric_mean_and_base_times_ratio_is_new():
    slices = [(hist(*[100] * 10), hist(*[200] * 10)), (hist(*[1000] * 10), hist(*[8000] * 10))]
    shift = stats.compare_quantile(slices, 0.5)
    assert shift is not None and shift.ratio.value == pytest.approx(4.0)  # sqrt(2 × 8)
    assert shift.new / shift.base == pytest.approx(shift.ratio.value)


def test_ratio_interval_covers_the_true_ratio():
    rng = random.Random(11)
    covered = 0
    for _ in range(200):
        base, new = draw_api(rng, slices=1, shift=2.0)
        shift = stats.compare_quantile(list(zip(base.values(), new.values(), strict=True)), 0.5)
        assert shift is not None
        covered += shift.ratio.low <= 2.0 <= shift.ratio.high
    assert covered / 200 >= 0.90


# -- machine-speed normalisation ---------------------------------------------------------------
def test_normalising_by_two_moves_every_bucket_down_one():
    values = [100, 150, 300, 700, 701, 5000]
    moved = normalised(Histogram.of(values), 2.0)
    assert moved.counts() == Histogram.of(v / 2 for v in values).counts()
    assert moved.count == 6 and moved.total == pytest.approx(sum(values) / 2)


def test_normalising_by_a_non_power_of_two_splits_buckets_like_the_values_would():
    rng = random.Random(3)
    values = [math.exp(rng.uniform(math.log(100), math.log(100_000))) for _ in range(4000)]
    moved = normalised(Histogram.of(values), 1.4)
    exact = Histogram.of(v / 1.4 for v in values)
    assert moved.count == exact.count
    cumulative_moved = cumulative_exact = 0
    for index in sorted(set(moved.counts()) | set(exact.counts())):
        cumulative_moved += moved.counts().get(index, 0)
        cumulative_exact += exact.counts().get(index, 0)
        assert abs(cumulative_moved - cumulative_exact) <= 0.03 * len(values)
    assert normalised(moved, 1.0) is moved


# -- simulation --------------------------------------------------------------------------------
SIGMA, OUTLIERS, REPEAT = 0.25, 0.05, 20


def draw_values(rng: random.Random, median: float, n: int = REPEAT) -> list[float]:
    out = []
    for _ in range(n):
        value = median * math.exp(rng.gauss(0.0, SIGMA))
        if rng.random() < OUTLIERS:
            value *= rng.uniform(2, 20)
        out.append(value)
    return out


def draw_api(
    rng: random.Random, slices: int, shift: float
) -> tuple[dict[tuple[str, int], Histogram], dict[tuple[str, int], Histogram]]:
    """One API's slices in BASE and in NEW (NEW ``shift`` times slower)."""
    base, new = {}, {}
    for position in range(slices):
        median = 2 ** rng.uniform(9, 17)  # anywhere within its octave, 512 ns … 131 µs
        key = ("synth", 10**position) if slices > 1 else ("synth", NO_SIZE)
        base[key] = Histogram.of(draw_values(rng, median))
        new[key] = Histogram.of(draw_values(rng, median * shift))
    return base, new


def bucket_groups(base: list[float], new: list[float], per_octave: int) -> list[tuple[int, int]]:
    """Tie groups at ``per_octave`` log-spaced buckets per power of two (1: today's log2 buckets;
    8: the finer sub-buckets about to arrive), as :func:`stats.tie_groups` forms them."""
    cells: dict[int, list[int]] = {}
    for side, values in ((0, base), (1, new)):
        for value in values:
            cells.setdefault(math.floor(per_octave * math.log2(value)), [0, 0])[side] += 1
    return [(a, b) for _, (a, b) in sorted(cells.items())]


def rank_test_rates(per_octave: int, slices: int, trials: int, seed: int) -> tuple[float, float]:
    """The rank test alone at alpha 0.05: (false-positive rate, power for a 2× shift)."""
    rng = random.Random(seed)
    rates = []
    for shift in (1.0, 2.0):
        hits = 0
        for _ in range(trials):
            strata = []
            for _ in range(slices):
                median = 2 ** rng.uniform(9, 17)
                strata.append(
                    bucket_groups(
                        draw_values(rng, median), draw_values(rng, median * shift), per_octave
                    )
                )
            test = stats.stratified_rank_test(strata)
            hits += test.p_value <= 0.05 and (shift == 1.0 or test.z > 0)
        rates.append(hits / trials)
    return rates[0], rates[1]


INFO = DatabaseInfo("sim.db", {}, (), 1, ())


def verdict_rates(slices: int, seed: int) -> tuple[float, float]:
    """The whole procedure — slices, speed fallback, tests, Benjamini–Hochberg over the family,
    minimum effect 10 % — on families of 60 APIs (time and allocation: 120 tests) of which 6 are
    2× slower: (share of unchanged APIs flagged, share of slowed APIs flagged slower)."""
    rng = random.Random(seed)
    false_flags = nulls = found = slowed = 0
    for _ in range(8):
        base: dict = {}
        new: dict = {}
        for i in range(60):
            shift = 2.0 if i < 6 else 1.0
            b, n = draw_api(rng, slices, shift)
            alloc = Histogram.of([4096] * REPEAT * slices)
            base[f"pkg.f{i}"] = {WALL: b, ALLOC: {("synth", NO_SIZE): alloc}}
            new[f"pkg.f{i}"] = {WALL: n, ALLOC: {("synth", NO_SIZE): alloc}}
        result = compare_sliced(base, new, INFO, INFO, CompareOptions(speed=SpeedMethod.AUTO))
        for api in result.apis:
            assert api.time is not None and api.alloc is not None
            if int(api.qualname[5:]) < 6:
                slowed += 1
                found += api.time.verdict is Verdict.SLOWER
            else:
                nulls += 1
                false_flags += api.time.verdict is not Verdict.SAME
            false_flags += api.alloc.verdict is not Verdict.SAME
    return false_flags / nulls, found / slowed


def test_simulated_error_rates_at_default_scan_sample_counts(capsys):
    """False-positive rate ≤ 5 % and power ≥ 95 % for a 2× shift, at both bucket resolutions;
    the figures are printed for the release notes."""
    lines = []
    for per_octave, label in ((1, "log2 buckets"), (8, "8 sub-buckets")):
        for slices in (1, 5):
            fpr, power = rank_test_rates(
                per_octave, slices, trials=1500, seed=per_octave * 10 + slices
            )
            lines.append(
                f"rank test, {label}, {slices}×{REPEAT} samples a side: "
                f"false-positive rate {fpr:.1%} (alpha 5%), power for 2× {power:.1%}"
            )
            assert fpr <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 1500)  # nominal 5 %, within noise
            assert power >= 0.95
    for slices in (1, 5):
        fpr, power = verdict_rates(slices, seed=100 + slices)
        lines.append(
            f"verdicts (FDR 5%, min effect 10%, 120 tests, speed fallback), log2 buckets, "
            f"{slices}×{REPEAT} samples a side: unchanged APIs flagged {fpr:.1%}, 2× slower found {power:.1%}"
        )
        assert fpr <= 0.05
        assert power >= 0.95
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def test_identical_inputs_give_identical_verdicts_in_any_order():
    rng = random.Random(21)
    apis = {f"pkg.f{i}": draw_api(rng, 3, 2.0 if i % 4 == 0 else 1.0) for i in range(12)}
    base = {q: {WALL: b} for q, (b, _) in apis.items()}
    new = {q: {WALL: n} for q, (_, n) in apis.items()}
    first = compare_sliced(base, new, INFO, INFO, CompareOptions())
    reversed_new = {
        q: {WALL: dict(reversed(list(n.items())))} for q, (_, n) in reversed(apis.items())
    }
    second = compare_sliced(
        dict(reversed(base.items())), reversed_new, INFO, INFO, CompareOptions()
    )
    assert first.to_json() == second.to_json()
