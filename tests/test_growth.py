"""Growth-class fitting on synthetic cost curves with noise."""

from __future__ import annotations

import math
import random

import pytest

from apiprof.model.growth import fit_growth

SIZES = [10, 30, 100, 300, 1000, 3000, 10000]
CURVES = {
    "O(1)": lambda n: 500.0,
    "O(log n)": lambda n: 200 + 80 * math.log(n),
    "O(n)": lambda n: 300 + 12 * n,
    "O(n log n)": lambda n: 300 + 4 * n * math.log(n),
    "O(n^2)": lambda n: 1000 + 0.5 * n * n,
}


@pytest.mark.parametrize("expected", list(CURVES))
@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_recovers_growth_class(expected, noise):
    rng = random.Random(hash(expected) & 0xFFFF)
    costs = [CURVES[expected](n) * (1 + rng.uniform(-noise, noise)) for n in SIZES]
    fit = fit_growth(SIZES, costs)
    assert fit is not None
    assert fit.growth_class == expected
    assert fit.rel_error <= noise + 0.02


def test_exponential():
    sizes = [4, 8, 12, 16, 20]
    fit = fit_growth(sizes, [100 * 2**n for n in sizes])
    assert fit.growth_class == "O(2^n)"
    assert fit.predict(10) == pytest.approx(100 * 2**10, rel=1e-6)


def test_too_few_sizes_cannot_tell():
    assert fit_growth([10, 100], [1.0, 2.0]) is None
    assert fit_growth([10, 10, 10], [1.0, 2.0, 3.0]) is None


def test_prediction_matches_points():
    fit = fit_growth(SIZES, [CURVES["O(n)"](n) for n in SIZES])
    for n in SIZES:
        assert fit.predict(n) == pytest.approx(CURVES["O(n)"](n), rel=1e-6)
