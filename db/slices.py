"""Reading whole databases for analysis: histograms per API, metric and (scenario, size) slice,
what each database holds, and how fast the machines that wrote it were.

``apiprof compare`` matches two databases slice by slice (a function measured at sizes 10 and
1000 is compared size against size), and ``apiprof report`` groups every API by module; both read
everything once through these functions rather than asking per API.
"""

from __future__ import annotations

import enum
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import sqlite_utils

from apiprof.model.histogram import Histogram
from apiprof.model.records import ScenarioSource

Slice = tuple[str, int]
"""``(scenario_id, size)``: one scenario at one input size (size ``NO_SIZE`` when it has none)."""

SlicedHistograms = dict[str, dict[str, dict[Slice, Histogram]]]
"""qualname → metric name → slice → histogram (environments merged)."""


class Source(enum.StrEnum):
    """Which measurements to read: lab scans, in-the-wild collection, or both."""

    ALL = "all"
    LAB = "lab"
    COLLECTED = "collected"


_IS_COLLECTED = (
    f"(b.scenario_id = '{ScenarioSource.COLLECTED}' OR s.source = '{ScenarioSource.COLLECTED}')"
)


def sliced_histograms(
    db: sqlite_utils.Database, metrics: Iterable[str], *, source: Source = Source.ALL
) -> SlicedHistograms:
    """Every API's histograms for ``metrics``, split by scenario and size, in one query."""
    metrics = list(metrics)
    where = [f"b.metric IN ({','.join('?' * len(metrics))})"]
    if source is Source.LAB:
        where.append(f"NOT {_IS_COLLECTED}")
    elif source is Source.COLLECTED:
        where.append(_IS_COLLECTED)
    rows = db.execute(
        "SELECT b.qualname, b.metric, b.scenario_id, b.size, b.bucket, SUM(b.count), SUM(b.sum), "
        "SUM(b.sum_sq) FROM buckets b LEFT JOIN scenarios s ON s.id = b.scenario_id "
        f"WHERE {' AND '.join(where)} GROUP BY b.qualname, b.metric, b.scenario_id, b.size, b.bucket",
        metrics,
    ).fetchall()
    grouped: dict[tuple[str, str, Slice], list[tuple]] = defaultdict(list)
    for qualname, metric, scenario_id, size, bucket, count, total, total_sq in rows:
        grouped[(qualname, metric, (scenario_id, size))].append((bucket, count, total, total_sq))
    out: SlicedHistograms = defaultdict(lambda: defaultdict(dict))
    for (qualname, metric, piece), bucket_rows in grouped.items():
        hist = Histogram.from_buckets(bucket_rows)
        if hist:
            out[qualname][metric][piece] = hist
    return {qualname: dict(by_metric) for qualname, by_metric in out.items()}


@dataclass(frozen=True)
class DatabaseInfo:
    """What a database holds, for the heading of a comparison or a report."""

    path: str
    packages: dict[str, str]  # package → version recorded by its newest scan
    environments: tuple[str, ...]  # "CPython 3.12.1 on Linux x86_64 (CPU model)"
    scans: int
    machine_speeds_ns: tuple[float, ...]  # one per scan that measured it

    @property
    def machine_speed_ns(self) -> float | None:
        """The machine-speed index of this database: the median over its scans (None if none)."""
        return statistics.median(self.machine_speeds_ns) if self.machine_speeds_ns else None

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "packages": self.packages,
            "environments": list(self.environments),
            "scans": self.scans,
            "machine_speed_ns": self.machine_speed_ns,
        }


_IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy"}


def describe(db: sqlite_utils.Database, path: str) -> DatabaseInfo:
    packages = dict(db.execute("SELECT name, COALESCE(version, '') FROM packages ORDER BY name"))
    environments = tuple(
        f"{_IMPLEMENTATIONS.get(impl, impl)} {python} on {system} {machine} ({cpu})"
        for python, impl, system, machine, cpu in db.execute(
            "SELECT python, implementation, system, machine, cpu FROM environments "
            "WHERE id IN (SELECT DISTINCT environment_id FROM buckets) ORDER BY python, machine"
        )
    )
    scans = db.execute("SELECT COUNT(*) FROM scans").fetchone()[0]
    return DatabaseInfo(path, packages, environments, scans, machine_speeds(db))


def machine_speeds(db: sqlite_utils.Database) -> tuple[float, ...]:
    """``scans.machine_speed_ns`` of every scan that recorded it (older schemas have none)."""
    if "machine_speed_ns" not in db["scans"].columns_dict:
        return ()
    return tuple(
        float(value)
        for (value,) in db.execute(
            "SELECT machine_speed_ns FROM scans WHERE machine_speed_ns > 0 ORDER BY id"
        )
    )


@dataclass(frozen=True)
class ApiInfo:
    """Where an API lives: its module and package (guessed from the name when never discovered,
    as for APIs known only from collected data)."""

    qualname: str
    module: str
    package: str
    coverage: str


def api_infos(db: sqlite_utils.Database, qualnames: Iterable[str] = ()) -> dict[str, ApiInfo]:
    """Module, package and coverage of every discovered entry point, plus ``qualnames`` that have
    measurements but no entry-point row."""
    out = {
        qualname: ApiInfo(qualname, module, package, coverage or "")
        for qualname, module, package, coverage in db.execute(
            "SELECT e.qualname, e.module, e.package, c.status FROM entry_points e "
            "LEFT JOIN coverage c ON c.qualname = e.qualname"
        )
    }
    for qualname in qualnames:
        if qualname not in out:
            module = qualname.rsplit(".", 1)[0] if "." in qualname else qualname
            out[qualname] = ApiInfo(qualname, module, qualname.split(".", 1)[0], "")
    return out
