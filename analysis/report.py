"""``apiprof report``: where the cost of a package lives, module by module (a vendor's view).

Every API is attributed to the module that defines it (its canonical home, as discovery recorded
it) or, with ``depth``, to the namespace made of that module's first ``depth`` components. Per
module the report gives totals (samples, time measured), the distribution of a call's cost over
all its APIs' calls, the distribution of its APIs' typical costs (one value per API), its most
expensive APIs and how its APIs grow with input size.

Times are inclusive: an API that calls another API of the package carries that API's time too,
so module totals overlap and do not add up to a program's run time.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from apiprof.db import query
from apiprof.db.schema import open_db
from apiprof.db.slices import DatabaseInfo, Source, api_infos, describe, sliced_histograms
from apiprof.errors import UsageError
from apiprof.model.histogram import Histogram, merge_all
from apiprof.model.pooling import pool_scenarios
from apiprof.model.records import Metric

TIME_METRICS = (Metric.WALL, Metric.CPU)
"""An API's time is its wall time, or its sampled CPU time where no wall time was recorded."""


class SortBy(enum.StrEnum):
    TOTAL = "total"  # time measured in the module, most first
    MEDIAN = "median"  # the module's typical call, most expensive first
    APIS = "apis"  # number of APIs, most first
    NAME = "name"


@dataclass(frozen=True)
class ReportOptions:
    source: Source = Source.ALL
    package: str | None = None  # only APIs of this package
    depth: int | None = None  # group by the first N components of the module name
    top: int = 3  # most expensive APIs listed per module
    sort: SortBy = SortBy.TOTAL

    def __post_init__(self) -> None:
        if self.depth is not None and self.depth < 1:
            raise UsageError(f"--depth must be 1 or more, got {self.depth}")
        if self.top < 0:
            raise UsageError(f"--top must be 0 or more, got {self.top}")

    def to_json(self) -> dict[str, object]:
        return {
            "source": str(self.source),
            "package": self.package,
            "depth": self.depth,
            "top": self.top,
            "sort": str(self.sort),
        }


@dataclass(frozen=True)
class ApiCost:
    """One API's measurements, its (scenario, size) slices pooled with equal weight."""

    qualname: str
    module: str
    coverage: str
    time_metric: Metric | None
    time: Histogram | None
    alloc: Histogram | None
    growth: str  # headline growth class, "" when none was fitted

    @property
    def time_median(self) -> float | None:
        return self.time.median if self.time else None

    def to_json(self) -> dict[str, object]:
        return {
            "qualname": self.qualname,
            "coverage": self.coverage or None,
            "time_metric": str(self.time_metric) if self.time_metric else None,
            **_summary_json("time", self.time),
            **_summary_json("alloc", self.alloc),
            "growth_class": self.growth or None,
        }


@dataclass(frozen=True)
class ModuleCost:
    """Cost of one module (or namespace): its APIs, most expensive first, and their sums."""

    name: str
    apis: tuple[ApiCost, ...]

    @property
    def profiled(self) -> tuple[ApiCost, ...]:
        return tuple(api for api in self.apis if api.time or api.alloc)

    @cached_property
    def time(self) -> Histogram:
        """Every measured call of every API in the module, merged."""
        return merge_all(api.time for api in self.apis if api.time)

    @cached_property
    def alloc(self) -> Histogram:
        return merge_all(api.alloc for api in self.apis if api.alloc)

    @cached_property
    def api_medians(self) -> Histogram:
        """One value per API: its median time (how the module's APIs are spread in cost)."""
        return Histogram.of(api.time.median for api in self.apis if api.time)

    @property
    def total_ns(self) -> float:
        return self.time.total

    @property
    def growth_classes(self) -> dict[str, int]:
        """Number of APIs per growth class, most common first."""
        return dict(Counter(api.growth for api in self.apis if api.growth).most_common())

    def top(self, n: int) -> tuple[ApiCost, ...]:
        return tuple(api for api in self.apis if api.time)[:n]

    def to_json(self, top: int) -> dict[str, object]:
        return {
            "module": self.name,
            "apis": len(self.apis),
            "profiled": len(self.profiled),
            **_summary_json("time", self.time),
            "time_total_ns": self.total_ns,
            **_summary_json("alloc", self.alloc),
            "api_medians_ns": sorted(api.time.median for api in self.apis if api.time),
            "growth_classes": self.growth_classes,
            "top": [api.to_json() for api in self.top(top)],
        }


def _summary_json(prefix: str, hist: Histogram | None) -> dict[str, object]:
    if not hist:
        return {f"{prefix}_samples": 0, f"{prefix}_median": None, f"{prefix}_p90": None}
    return {
        f"{prefix}_samples": hist.count,
        f"{prefix}_median": hist.median,
        f"{prefix}_p90": hist.percentile(90),
    }


@dataclass(frozen=True)
class Report:
    database: DatabaseInfo
    options: ReportOptions
    modules: tuple[ModuleCost, ...]
    everything: ModuleCost  # all modules together

    def to_json(self) -> dict[str, object]:
        return {
            "database": self.database.to_json(),
            "options": self.options.to_json(),
            "total": self.everything.to_json(self.options.top),
            "modules": [module.to_json(self.options.top) for module in self.modules],
        }


def module_report(path: str | Path, options: ReportOptions | None = None) -> Report:
    """Cost per module of the APIs in the database at ``path`` (opened read-only)."""
    options = options or ReportOptions()
    db = open_db(path, readonly=True)
    try:
        metrics = [str(m) for m in (*TIME_METRICS, Metric.ALLOC_INCL)]
        sliced = sliced_histograms(db, metrics, source=options.source)
        infos = api_infos(db, sliced)
        if options.package:
            infos = {q: info for q, info in infos.items() if info.package == options.package}
            if not infos:
                raise UsageError(
                    f"{path} has no APIs of package {options.package!r}; "
                    f"it has: {', '.join(sorted({i.package for i in api_infos(db).values()})) or 'none'}"
                )
        growth = query.headline_growth(db, infos)
        database = describe(db, str(path))
    finally:
        db.conn.close()
    costs = []
    for qualname, info in infos.items():
        by_metric = sliced.get(qualname, {})
        time_metric = next((m for m in TIME_METRICS if by_metric.get(str(m))), None)
        costs.append(
            ApiCost(
                qualname=qualname,
                module=_namespace(info.module, options.depth),
                coverage=info.coverage,
                time_metric=time_metric,
                time=_merged(by_metric.get(str(time_metric))) if time_metric else None,
                alloc=_merged(by_metric.get(str(Metric.ALLOC_INCL))),
                growth=growth[qualname].growth_class if qualname in growth else "",
            )
        )
    modules = group_by_module(costs)
    return Report(
        database, options, _sorted(modules, options.sort), ModuleCost("(all)", _by_cost(costs))
    )


def _merged(slices: dict | None) -> Histogram | None:
    """An API's figure over its slices, each weighing the same however many samples it got."""
    return pool_scenarios(slices.values()) if slices else None


def _namespace(module: str, depth: int | None) -> str:
    return module if depth is None else ".".join(module.split(".")[:depth])


def _by_cost(apis: Iterable[ApiCost]) -> tuple[ApiCost, ...]:
    """Most expensive typical call first; APIs without time after, by name."""
    return tuple(
        sorted(apis, key=lambda api: (api.time is None, -(api.time_median or 0.0), api.qualname))
    )


def group_by_module(costs: Iterable[ApiCost]) -> list[ModuleCost]:
    grouped: dict[str, list[ApiCost]] = {}
    for api in costs:
        grouped.setdefault(api.module, []).append(api)
    return [ModuleCost(name, _by_cost(apis)) for name, apis in grouped.items()]


def _sorted(modules: list[ModuleCost], by: SortBy) -> tuple[ModuleCost, ...]:
    keys = {
        SortBy.TOTAL: lambda m: (-m.total_ns, m.name),
        SortBy.MEDIAN: lambda m: (-(m.time.median if m.time else 0.0), m.name),
        SortBy.APIS: lambda m: (-len(m.apis), m.name),
        SortBy.NAME: lambda m: (0, m.name),
    }
    return tuple(sorted(modules, key=keys[by]))
