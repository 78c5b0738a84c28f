"""Growth classes: how a cost grows with input size, fitted from (size, mean cost) points.

Each candidate model is ``cost = a + b·f(n)`` with ``b >= 0`` (exponential: ``cost = a·e^(b·n)``),
fitted by least squares on *relative* residuals so that small sizes count as much as large ones.
The simplest model whose error is within ``TIE_FACTOR`` of the best wins: a flat line should read
"constant", not "n² with a tiny coefficient".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

TIE_FACTOR = 1.5
"""A more complex model must cut the relative error by more than this factor to be preferred."""

FLAT_SPREAD = 0.15
"""Costs whose relative spread across sizes stays under this are constant whatever fits best."""

_MODELS: list[tuple[str, Callable[[float], float]]] = [
    ("O(1)", lambda n: 0.0),
    ("O(log n)", lambda n: math.log(max(n, 1.0))),
    ("O(n)", lambda n: n),
    ("O(n log n)", lambda n: n * math.log(max(n, 1.0))),
    ("O(n^2)", lambda n: n * n),
]
GROWTH_CLASSES = [name for name, _ in _MODELS] + ["O(2^n)"]
_MODEL_OF = dict(_MODELS)  # predict() is called for every point of every drawn curve


@dataclass(frozen=True)
class GrowthFit:
    """The chosen growth class for one series of points."""

    growth_class: str  # one of GROWTH_CLASSES
    intercept: float  # a
    coefficient: float  # b (per unit of f(n); for O(2^n) the exponent rate)
    rel_error: float  # RMS of (observed − fitted) / observed over the points: 0.05 = ±5 %
    r2: float  # coefficient of determination on the relative scale (1.0 = perfect)
    points: int

    @property
    def constant(self) -> bool:
        """The fitted cost is the same at every size (a flat line on any axes)."""
        return self.growth_class == "O(1)"

    def predict(self, n: float) -> float:
        if self.growth_class == "O(2^n)":
            return self.intercept * math.exp(self.coefficient * n)
        return self.intercept + self.coefficient * _MODEL_OF[self.growth_class](n)


def fit_growth(sizes: Sequence[float], costs: Sequence[float]) -> GrowthFit | None:
    """Best growth class for the points, or None when they cannot tell (fewer than 3 sizes)."""
    points = sorted((float(n), float(c)) for n, c in zip(sizes, costs, strict=True) if c > 0)
    if len({n for n, _ in points}) < 3:
        return None
    candidates = [fit for name, f in _MODELS if (fit := _fit_linear(name, f, points))]
    if exp_fit := _fit_exponential(points):
        candidates.append(exp_fit)
    ys = [c for _, c in points]
    if (max(ys) - min(ys)) / max(ys) < FLAT_SPREAD:
        return candidates[0]
    best = min(candidates, key=lambda fit: fit.rel_error)
    for fit in candidates:  # ordered simplest first
        if fit.rel_error <= best.rel_error * TIE_FACTOR + 1e-12:
            return fit
    return best


def _weighted_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares for y = a + b·x minimising Σ((y − a − b·x)/y)²."""
    w = [1.0 / (y * y) for y in ys]
    sw = sum(w)
    sx = sum(wi * x for wi, x in zip(w, xs))
    sy = sum(wi * y for wi, y in zip(w, ys))
    sxx = sum(wi * x * x for wi, x in zip(w, xs))
    sxy = sum(wi * x * y for wi, x, y in zip(w, xs, ys))
    det = sw * sxx - sx * sx
    if abs(det) < 1e-300 * max(1.0, sw * sxx):
        return sy / sw, 0.0
    b = (sw * sxy - sx * sy) / det
    return (sy - b * sx) / sw, b


def _score(name: str, a: float, b: float, points: list[tuple[float, float]], predict) -> GrowthFit:
    rel = [(c - predict(n)) / c for n, c in points]
    rss = sum(r * r for r in rel)
    ys = [c for _, c in points]
    mean_rel = [(c - sum(ys) / len(ys)) / c for c in ys]
    tss = sum(r * r for r in mean_rel)
    r2 = 1.0 - rss / tss if tss > 0 else 1.0
    return GrowthFit(name, a, b, math.sqrt(rss / len(points)), r2, len(points))


def _fit_linear(name: str, f: Callable[[float], float], points) -> GrowthFit | None:
    ys = [c for _, c in points]
    if name == "O(1)":
        w = [1.0 / (y * y) for y in ys]
        a = sum(wi * y for wi, y in zip(w, ys)) / sum(w)
        return _score(name, a, 0.0, points, lambda n: a)
    xs = [f(n) for n, _ in points]
    if not all(math.isfinite(x) for x in xs):
        return None
    a, b = _weighted_fit(xs, ys)
    if b <= 0:
        return None
    return _score(name, a, b, points, lambda n: a + b * f(n))


def _fit_exponential(points) -> GrowthFit | None:
    if max(n for n, _ in points) > 700:  # e^n overflows; such sizes are never exponential here
        return None
    xs = [n for n, _ in points]
    logs = [math.log(c) for _, c in points]
    n = len(xs)
    mx, my = sum(xs) / n, sum(logs) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    k = sum((x - mx) * (y - my) for x, y in zip(xs, logs)) / sxx
    if k <= 0:
        return None
    a = math.exp(my - k * mx)
    return _score("O(2^n)", a, k, points, lambda s: a * math.exp(k * s))
