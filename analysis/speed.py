"""Machine-speed normalisation: take a whole machine's speed out of a comparison, API by API.

Two databases written on different machines differ as a whole: on a laptop twice as slow as the
reference runner every API reads about 2× — a fact about the laptop, not about any API. Each
scan stores the time of a fixed reference workload (``scans.machine_speed_ns``); a database's
index is the median over its scans, and NEW's times are divided by ``index(NEW) / index(BASE)``.

Without an index on both sides the fallback is the median, over every API both databases
measured, of NEW's time ratio: the typical API then reads 1.0×. The fallback cannot tell a
slower machine from a release that slowed *every* API alike, which is why the index comes first
and every output says which of the two was used.
"""

from __future__ import annotations

import enum
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from apiprof.model.buckets import bucket_bounds, bucket_index
from apiprof.model.histogram import Bucket, Histogram, value_range

MIN_APIS_FOR_FALLBACK = 3
"""Shared APIs the fallback needs: with fewer, one changed API would be half the evidence."""


class SpeedMethod(enum.StrEnum):
    """What ``--speed`` asks for."""

    AUTO = "auto"  # the index where both databases have one, else the shared-API median
    INDEX = "index"  # the index only (no normalisation when a database lacks it)
    APIS = "apis"  # the median ratio over shared APIs, even where indexes exist
    NONE = "none"  # compare raw times (same machine, same conditions)


@dataclass(frozen=True)
class SpeedNormalisation:
    """How NEW's times were made comparable with BASE's.

    ``used`` is "index", "shared-apis" or "none"; NEW's times are divided by ``factor`` (> 1:
    NEW's machine is slower). ``shared_apis_ratio`` is the median time ratio over the
    ``shared_apis`` APIs *before* normalisation, kept as a cross-check of the index.
    """

    used: str
    factor: float
    base_index_ns: float | None
    new_index_ns: float | None
    shared_apis_ratio: float | None
    shared_apis: int
    reason: str

    def describe(self) -> str:
        """One sentence for people: what was done and why."""
        if self.used == "none":
            return f"machine speed not normalised: {self.reason}"
        how = (
            f"by the machine-speed index ({self.new_index_ns:.4g} ns vs {self.base_index_ns:.4g} ns)"
            if self.used == "index"
            else f"by the median time ratio over {self.shared_apis} shared APIs ({self.reason})"
        )
        if round(self.factor, 2) == 1.0:
            return f"NEW's machine ran at BASE's speed {how}; times compared as measured"
        pace = "slower" if self.factor > 1 else "faster"
        times = self.factor if self.factor > 1 else 1 / self.factor
        return f"NEW's machine ran {times:.2f}× {pace} than BASE's {how}; NEW's times divided by {self.factor:.3g}"

    def doubt(self, tolerance: float) -> str:
        """A warning when, after normalising by the index, the median API still differs by more
        than ``tolerance`` (e.g. 0.1): the index may not represent this workload ("" if fine)."""
        residual = self.residual()
        if self.used != "index" or residual is None:
            return ""
        if abs(math.log(residual)) <= math.log1p(tolerance):
            return ""
        return (
            f"after the machine-speed index, the median API still reads {residual:.2f}×: the index "
            "may not represent this workload, or most APIs changed (--speed apis assumes the former)"
        )

    def residual(self) -> float | None:
        """Median shared-API ratio left after normalising (≈ 1.0 when the factor fits)."""
        if self.shared_apis_ratio is None:
            return None
        return self.shared_apis_ratio / self.factor

    def to_json(self) -> dict[str, object]:
        return {
            "used": self.used,
            "factor": self.factor,
            "base_index_ns": self.base_index_ns,
            "new_index_ns": self.new_index_ns,
            "shared_apis_ratio": self.shared_apis_ratio,
            "shared_apis": self.shared_apis,
            "reason": self.reason,
            "description": self.describe(),
        }


def choose_speed(
    method: SpeedMethod,
    base_index_ns: float | None,
    new_index_ns: float | None,
    api_ratios: Sequence[float],
) -> SpeedNormalisation:
    """The normalisation ``method`` asks for, given each database's index (None when it has
    none) and the raw time ratio (NEW / BASE) of every API both measured."""
    ratios = [r for r in api_ratios if r > 0 and math.isfinite(r)]
    apis_ratio = statistics.median(ratios) if ratios else None

    def made(used: str, factor: float, reason: str) -> SpeedNormalisation:
        return SpeedNormalisation(
            used, factor, base_index_ns, new_index_ns, apis_ratio, len(ratios), reason
        )

    missing = [
        side for side, index in (("BASE", base_index_ns), ("NEW", new_index_ns)) if not index
    ]
    if method is SpeedMethod.NONE:
        return made("none", 1.0, "--speed none")
    if method in (SpeedMethod.AUTO, SpeedMethod.INDEX) and not missing:
        assert base_index_ns and new_index_ns
        return made("index", new_index_ns / base_index_ns, "both databases have the index")
    if method is SpeedMethod.INDEX:
        return made(
            "none", 1.0, f"--speed index, but {' and '.join(missing)} has no machine-speed index"
        )
    why = (
        "--speed apis"
        if method is SpeedMethod.APIS
        else f"{' and '.join(missing)} {'has' if len(missing) == 1 else 'have'} no machine-speed index"
    )
    if apis_ratio is None or len(ratios) < MIN_APIS_FOR_FALLBACK:
        return made(
            "none",
            1.0,
            f"{why}, and only {len(ratios)} shared APIs have enough time samples "
            f"({MIN_APIS_FOR_FALLBACK} needed for the fallback)",
        )
    return made("shared-apis", apis_ratio, why)


def normalised(hist: Histogram, factor: float) -> Histogram:
    """``hist`` with every value divided by ``factor``, re-bucketed range by range.

    Moving each bucket as a whole (``Histogram.scaled``) is exact only for powers of two: divide
    by 1.4 and a bucket either stays or moves, where about 40 % of its values should move —
    enough to make a rank test see a difference that is not there. Here each bucket's values are
    spread over the range its mean and variance imply (as the percentile estimate assumes) and
    split among the buckets that range lands in, in proportion. Counts are then rounded so that
    every cumulative count stays within half a sample of the exact split.
    """
    if factor == 1.0:
        return hist
    shares: dict[int, list[float]] = {}  # target bucket → [count, sum, sum of squares]
    for index, count, total, total_sq in hist.rows():
        if not count:
            continue
        low, high = value_range(index, Bucket(count, total, total_sq))
        low, high = low / factor, high / factor
        if high <= low:  # every value equal: the bucket moves as a whole, sums exactly
            mean = total / count / factor
            _add_share(shares, bucket_index(mean), count, mean, mean * mean)
            continue
        for target in range(bucket_index(low), bucket_index(high) + 1):
            start, end = bucket_bounds(target)
            start, end = max(start, low), min(end, high)
            if end > start:  # uniform over [start, end): mean and mean square of that piece
                mid, width = (start + end) / 2, end - start
                share = count * width / (high - low)
                _add_share(shares, target, share, mid, mid * mid + width * width / 12)
    rows = []
    assigned = 0
    cumulative = 0.0
    for target in sorted(shares):
        share, mean, mean_sq = shares[target]
        cumulative += share
        whole = round(cumulative) - assigned
        assigned += whole
        if whole > 0:
            rows.append((target, whole, mean * whole, mean_sq * whole))
    return Histogram.from_buckets(rows)


def _add_share(
    shares: dict[int, list[float]], target: int, count: float, mean: float, mean_sq: float
) -> None:
    """Add ``count`` values with the given mean and mean square to a target bucket's share."""
    cell = shares.setdefault(target, [0.0, 0.0, 0.0])
    merged = cell[0] + count
    cell[1] = (cell[0] * cell[1] + count * mean) / merged
    cell[2] = (cell[0] * cell[2] + count * mean_sq) / merged
    cell[0] = merged
