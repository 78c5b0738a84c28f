"""Two-phase isolated profiling of one scenario: allocation pass, plan, timing passes.

``profile(run_once, targets, scenario_id=...)`` is the one entry point the scan engine, the
tests and the benchmarks call:

1. an allocation pass (:mod:`~apiprof.engine.measure.alloc`) over everything the scenario calls gives
   bytes per call, call counts, the call graph and the co-stack relation;
2. the plan (:mod:`~apiprof.engine.measure.plan`) groups the targets that ran so no two sharing a stack
   are timed together;
3. one timing pass (:mod:`~apiprof.engine.measure.timing`) per group, probes on that group only;
   and for targets that return an iterator, a consumption pass
   (:mod:`~apiprof.engine.measure.consume`): the call plus exhausting what it returned;
4. per-call active times (:mod:`~apiprof.engine.measure.activetime`) with the calibrated overhead
   (:mod:`~apiprof.engine.measure.calibrate`) and the preempted intervals
   (:mod:`~apiprof.engine.measure.switches`) removed, bucketed into histograms.

Each timing pass measures for a time budget with a minimum number of runs
(:class:`~apiprof.engine.measure.passlog.Budget`), between two timings of a short reference
workload (:mod:`~apiprof.engine.measure.machine`); a pass the machine stalled is measured again
(:mod:`~apiprof.engine.measure.settle`); a pass with few runs is measured in windows spread over
time, a slow one left out (:mod:`~apiprof.engine.measure.spread`). What measuring saw of other load is the report's
:class:`~apiprof.model.records.Disturbance`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from apiprof.engine.measure.alloc import AllocResult, run_allocation_pass
from apiprof.engine.measure.batch import Batcher, batch_times, plain_run_ns
from apiprof.engine.measure.calibrate import calibrate
from apiprof.engine.measure.consume import Consumed, run_consume_pass
from apiprof.engine.measure.passlog import Budget
from apiprof.engine.measure.plan import plan_groups
from apiprof.engine.measure.probes import PySite, Site, resolve_site
from apiprof.engine.measure.settle import Settled, settled_pass
from apiprof.engine.measure.spread import spread_pass, windows_for
from apiprof.engine.measure.switches import open_switches
from apiprof.model.histogram import Histogram
from apiprof.model.records import (
    NO_SIZE,
    Calibration,
    CallEdge,
    Disturbance,
    Measurement,
    Metric,
)

TIME_BUDGET = 0.01
"""Default seconds of runs per timing pass (each scenario size, each group of targets)."""


@dataclass(frozen=True)
class Target:
    """An API to measure: its canonical public name and the callable object behind it."""

    qualname: str
    obj: object


@dataclass
class ProfileReport:
    measurements: list[Measurement] = field(default_factory=list)
    edges: list[CallEdge] = field(default_factory=list)
    calibration: Calibration = field(default_factory=Calibration)
    timing_groups: list[list[str]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    disturbance: Disturbance = field(default_factory=Disturbance)


def profile(
    run_once: Callable[[], object],
    targets: Sequence[Target],
    *,
    scenario_id: str,
    size: int = NO_SIZE,
    repeat: int = 20,
    max_seconds: float = 2.0,
    time_budget: float = TIME_BUDGET,
    calibration: Calibration | None = None,
    warmup: bool = True,
    consume: bool = True,
    batch: Batcher | None = None,
    report: ProfileReport | None = None,
) -> ProfileReport:
    """Measure every target the scenario calls. The allocation pass runs up to ``repeat``
    times; each timing pass at least ``repeat`` times and for ``time_budget`` seconds; no pass
    runs past ``max_seconds`` (each runs the scenario at least once). Exceptions from
    ``run_once`` propagate. ``warmup``: one unrecorded run before each timing pass;
    ``consume``: consumption passes for targets returning iterators (a long scenario such as a
    test suite turns both off: every extra run costs a whole suite). ``batch``: how to run the
    scenario several times per call, for timing cheap scenarios in a plain loop
    (:mod:`~apiprof.engine.measure.batch`). ``report``: filled (and returned) as each pass
    finishes, so a caller whose scenario is cut off mid-way (a test suite stopped by its time
    limit) keeps what the passes before the cut measured."""
    calibration = calibration or calibrate()
    budget = Budget(max(1, repeat), time_budget, max_seconds, warmup)
    switches = open_switches()
    sites, names = resolve_targets(targets)
    alloc = run_allocation_pass(run_once, list(sites), repeat=repeat, max_seconds=max_seconds)
    run_ns = plain_run_ns(run_once) if batch is not None else 0
    times = batch_times(run_ns) if batch is not None else 1
    windows = windows_for(budget, run_ns)
    timed = batch(times) if batch is not None and times > 1 else run_once
    ran = [key for key in sites if alloc.calls[key]]
    report = report if report is not None else ProfileReport()
    report.calibration = calibration
    report.seen = {name for key in ran for name in names[key]}
    report.edges = target_edges(alloc, names)

    def measure(key: Hashable, metric: Metric, hist: Histogram) -> None:
        for name in names[key]:
            report.measurements.append(Measurement(name, scenario_id, metric, hist, size))

    for key in ran:
        measure(key, Metric.ALLOC_INCL, alloc.incl[key])
        measure(key, Metric.ALLOC_EXCL, alloc.excl[key])
        measure(key, Metric.CALLS, Histogram.of(alloc.calls_per_run[key]))
        if key in alloc.io_read:
            measure(key, Metric.IO_READ, alloc.io_read[key])
            measure(key, Metric.IO_WRITE, alloc.io_write[key])
    running = alloc.code_objects()
    for group in plan_groups(ran, alloc.costack):
        report.timing_groups.append([name for key in group for name in names[key]])
        group_sites = [sites[key] for key in group]

        def measure_window(window: Budget, group_sites: list[Site] = group_sites) -> Settled:
            return settled_pass(
                timed,
                group_sites,
                alloc.callers,
                budget=window,
                switches=switches,
                calibration=calibration,
                runs_per_call=times,
                running=running,
            )

        spread = spread_pass(measure_window, budget, windows)
        report.disturbance += spread.seen
        for index, key in enumerate(group):
            wall, cpu = spread.histograms(index)
            if wall:
                measure(key, Metric.WALL, wall)
                measure(key, Metric.CPU, cpu)
    for key in ran if consume else ():
        site = sites[key]
        if isinstance(site, PySite) and (key in alloc.returns_iterator or is_generator(site)):
            consumed = _consume(run_once, site, budget)
            if consumed is not None and consumed.wall_ns:
                measure(key, Metric.CONSUME_WALL, Histogram.of(consumed.wall_ns))
                if consumed.alloc_bytes:
                    measure(key, Metric.CONSUME_ALLOC, Histogram.of(consumed.alloc_bytes))
    return report


def is_generator(site: PySite) -> bool:
    return bool(site.function.__code__.co_flags & inspect.CO_GENERATOR)


def _consume(run_once: Callable[[], object], site: PySite, budget: Budget) -> Consumed | None:
    """The consumption pass of one target; None when the scenario cannot run with its iterator
    exhausted (it needed the items): the call's own figures stand without consumption ones."""
    try:
        return run_consume_pass(
            run_once,
            site.function,
            min_runs=budget.min_runs,
            seconds=0.0,  # consuming is slow by nature: the minimum runs are plenty
            max_seconds=budget.max_seconds,
        )
    except Exception:
        return None


def resolve_targets(
    targets: Sequence[Target],
) -> tuple[dict[Hashable, Site], dict[Hashable, list[str]]]:
    """Sites by key, and the qualnames sharing each key (aliases of one object are measured once)."""
    sites: dict[Hashable, Site] = {}
    names: dict[Hashable, list[str]] = {}
    for target in targets:
        site = resolve_site(target.obj)
        sites.setdefault(site.key, site)
        names.setdefault(site.key, []).append(target.qualname)
    return sites, names


def target_edges(alloc: AllocResult, names: dict[Hashable, list[str]]) -> list[CallEdge]:
    """Target→target call counts over the allocation pass (caller = nearest enclosing target)."""
    return [
        CallEdge(caller, callee, count)
        for (outer, inner), count in sorted(alloc.target_edges.items(), key=lambda item: -item[1])
        for caller in names[outer]
        for callee in names[inner]
    ]
