"""How far are the shown median and p90 from the exact sample percentiles?

Draws lognormal, bimodal, heavy-tailed (Pareto) and discrete byte-count samples of several
sizes (fixed seeds), records them in a :class:`~apiprof.model.histogram.Histogram` and prints
the worst relative error of its median and p90 against the exact sample percentiles (linear
interpolation between order statistics), for the log2 buckets alone and — where this version
has them — with the sub-buckets. Target: within ±5% everywhere.

Run: python bench/percentiles.py
"""

from __future__ import annotations

import math
import random
import sys

from apiprof.model.histogram import Histogram

try:
    from apiprof.model.histogram import exact_percentile as exact
except ImportError:  # an apiprof from before sub-buckets: the same definition

    def exact(values: list[float], q: float) -> float:
        ordered = sorted(values)
        position = q / 100 * (len(ordered) - 1)
        lower = math.floor(position)
        upper = min(lower + 1, len(ordered) - 1)
        return ordered[lower] + (position - lower) * (ordered[upper] - ordered[lower])


SIZES = (20, 100, 2_000, 50_000)
SEEDS = range(5)


SHAPES = {
    "lognormal": lambda r, n: [r.lognormvariate(math.log(2_000), 0.8) for _ in range(n)],
    "bimodal": lambda r, n: [
        r.gauss(300, 20) if r.random() < 0.7 else r.gauss(40_000, 3_000) for _ in range(n)
    ],
    "heavy-tailed": lambda r, n: [150 * r.paretovariate(1.2) for _ in range(n)],
    "byte counts": lambda r, n: [r.choice((64, 1057, 1057, 4096, 10057)) for _ in range(n)],
}


def main() -> int:
    print(
        f"python {sys.version.split()[0]}: worst |estimate / exact − 1| over seeds and sizes {SIZES}"
    )
    print(f"{'shape':14} {'log2 p50':>9} {'log2 p90':>9} {'sub p50':>9} {'sub p90':>9}")
    worst_overall = 0.0
    for name, draw in SHAPES.items():
        worst: dict[str, list[float]] = {"log2": [0.0, 0.0]}
        for n in SIZES:
            for seed in SEEDS:
                values = draw(random.Random(seed), n)
                full = Histogram.of(values)
                variants = {"log2": Histogram.from_buckets(full.rows())}
                if getattr(full, "subs", None):
                    variants["sub"] = full
                for label, hist in variants.items():
                    for i, q in enumerate((50, 90)):
                        error = abs(hist.percentile(q) / exact(values, q) - 1)
                        row = worst.setdefault(label, [0.0, 0.0])
                        row[i] = max(row[i], error)
        shown = worst.get("sub", worst["log2"])  # what this version shows
        worst_overall = max(worst_overall, *shown)
        cells = [f"{x:9.1%}" for x in worst["log2"]]
        cells += [f"{x:9.1%}" for x in worst["sub"]] if "sub" in worst else ["-".rjust(9)] * 2
        print(f"{name:14} {' '.join(cells)}")
    print(f"target ±5%: {'PASS' if worst_overall <= 0.05 else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
