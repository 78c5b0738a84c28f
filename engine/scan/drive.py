"""Self-driven capture, the scan's last profiling step: entry points that nothing could call
are profiled with the arguments the package itself passes them while its working scenarios
run (:mod:`~apiprof.engine.scenarios.drive`).

The stage sits between the run and the bucketing. Results of entry points that profiled, or
failed for a reason driving cannot mend (blocked, out of memory or time, an import), pass on
at once; the others (no arguments, or their calls raised) are held. Once the plan has run,
one worker runs the scenarios that profiled something as drivers, watching the held entry
points; each held entry point that was reached is profiled again, with only what was
captured, and its result merged with the first. Nothing is watched, and nothing is added to
the scan's time, when every entry point already profiled.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import zip_longest

from apiprof.engine.isolation.pool import Task, TaskResult, WorkerPool
from apiprof.engine.isolation.protocol import (
    DriveCapture,
    Driven,
    EntryFinished,
    MeasureSettings,
    ProfileEntry,
)
from apiprof.engine.isolation.rerun import rerun_task
from apiprof.engine.scan.progress import ScanProgress
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.drive import DRIVE_BUDGET, MAX_DRIVERS
from apiprof.engine.scenarios.drivenspecs import driver_spec, through_driver_spec
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.model.records import Coverage, EntryKind, Failure, ScenarioSource

FUNCTIONS = frozenset({EntryKind.FUNCTION, EntryKind.BUILTIN})
"""Entry kinds whose scenarios run ahead of methods' as drivers (:func:`driver_rank`)."""

DRIVABLE = frozenset({Coverage.NO_ARGUMENTS, Coverage.CRASHED})
"""Failures that arguments built mid-stream may mend (others are the sandbox's, the clock's,
the memory cap's or an import's)."""

MAX_THROUGH = 2
"""Drivers re-run per entry point whose arguments could not be copied (the ones reaching the
most watched entry points first)."""

DRIVER_ORDER = (
    ScenarioSource.FILE,
    ScenarioSource.DOCSTRING,
    ScenarioSource.CAPTURED,
    ScenarioSource.OBSERVED,
)
"""Drivers written or run by people come first, then values the package returned; made-up
arguments last (:func:`driver_rank`)."""
LAST_DRIVERS = (ScenarioSource.REPAIRED,)
"""After those: arguments mended once every variant was refused. Such a call is mostly a
narrow read of a receiver built for it (a fixed-width view of a bit string), and a class with
many of them filled the cap on drivers, pushing out the ones that had reached what was held."""


@dataclass
class DriveReport:
    """What the self-driven capture did, for the summary."""

    watched: int = 0  # entry points held for it
    drivers: int = 0  # working scenarios offered as drivers
    drivers_run: int = 0  # drivers and round trips run
    reached: int = 0  # watched entry points some driver called
    profiled: list[str] = field(default_factory=list)  # profiled thanks to it
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "watched": self.watched,
            "drivers": self.drivers,
            "drivers_run": self.drivers_run,
            "reached": self.reached,
            "profiled": len(self.profiled),
            "profiled_entry_points": sorted(self.profiled),
            "seconds": round(self.seconds, 3),
        }


def drive_held(
    pool: WorkerPool,
    package: str,
    results: Iterable[TaskResult],
    settings: MeasureSettings,
    report: DriveReport,
    progress: Callable[[ScanProgress], None] = lambda event: None,
    *,
    budget: float = DRIVE_BUDGET,
) -> Generator[TaskResult, None, None]:
    """Pass ``results`` on, holding back those the self-driven capture may mend; then drive
    the package for them (said to ``progress``) and pass on their results, merged with the
    first run's."""
    held: dict[str, TaskResult] = {}
    drivers: dict[str, tuple[ScenarioSpec, bool]] = {}  # id -> (spec, of a plain function)
    for result in results:
        if drivable(result):
            held[result.task.id] = result
            continue
        request = result.task.request
        function = isinstance(request, ProfileEntry) and request.entry.kind in FUNCTIONS
        for spec in working_specs(result):
            drivers.setdefault(spec.id, (spec, function))
        yield result
    if not held:
        return
    started = time.monotonic()
    ranked = beside_held([s for s, _ in sorted(drivers.values(), key=driver_rank)], held)
    ranked = ranked[:MAX_DRIVERS]
    report.watched, report.drivers = len(held), len(ranked)
    progress(ScanProgress("drive"))
    driven = capture_mid_stream(pool, package, list(held), ranked, budget)
    reached: set[str] = set()
    if driven is not None:
        report.drivers_run = driven.drivers_run
        reached = {name for names in driven.reach.values() for name in names}
        reached |= {call.qualname for call in driven.calls}
        report.reached = len(reached)
    tasks = retry_tasks(held, driven, {spec.id: spec for spec in ranked}, settings)
    for result in pool.run(tasks, rerun_task):
        first = held.pop(result.task.id)
        if working_specs(result):
            report.profiled.append(result.task.id)
            yield result.after(first)
        else:
            yield with_failures(first, failures_of(result))
    report.seconds = time.monotonic() - started
    for qualname, first in held.items():
        why = UNREACHED if qualname not in reached else ONLY_FAILED
        yield with_failures(first, [Failure(Coverage.NO_ARGUMENTS, why)] if driven else [])


UNREACHED = "self-driven capture: none of the package's working scenarios called it"
ONLY_FAILED = (
    "self-driven capture: only drivers that then failed called it, with arguments that cannot "
    "be copied"
)


def capture_mid_stream(
    pool: WorkerPool, package: str, watched: list[str], drivers: list[ScenarioSpec], budget: float
) -> Driven | None:
    """What the drivers passed to the watched entry points (in one worker), or None when
    there is no driver or that worker failed."""
    if not drivers:
        return None
    request = DriveCapture(package, watched, drivers, budget)
    result = pool.request(request, timeout=budget + 60)
    return result.reply if isinstance(result.reply, Driven) else None


def retry_tasks(
    held: dict[str, TaskResult],
    driven: Driven | None,
    drivers: dict[str, ScenarioSpec],
    settings: MeasureSettings,
) -> list[Task]:
    """A task for each held entry point something reached: the copyable calls to replay,
    else the drivers that reached it (those reaching the most watched entry points first)."""
    if driven is None:
        return []
    calls: dict[str, list[CapturedCall]] = defaultdict(list)
    for call in driven.calls:
        calls[call.qualname].append(call)
    reached: dict[str, list[str]] = defaultdict(list)
    for ref, names in sorted(driven.reach.items(), key=lambda item: -len(item[1])):
        for name in names:
            reached[name].append(ref)
    tasks = []
    for qualname, result in held.items():
        request = result.task.request
        if not isinstance(request, ProfileEntry):
            continue
        copied = [call for call in calls[qualname] if call.payload]
        why = next((call.problem for call in calls[qualname] if call.problem), "")
        through = [] if copied else through_specs(qualname, reached[qualname], drivers, why)
        if copied or through:
            retry = replace(
                request,
                specs=[],
                docstrings=False,
                synthesize=False,
                captured=copied,
                drivers=through,
                settings=settings,
                stops=[],
                measured=[],
                ended=[],
            )
            tasks.append(Task(qualname, retry))
    return tasks


def through_specs(
    qualname: str, refs: Sequence[str], drivers: dict[str, ScenarioSpec], why: str
) -> list[ScenarioSpec]:
    """The drivers ``refs`` re-run for ``qualname``, measuring only its calls."""
    found = []
    for ref in refs[:MAX_THROUGH]:
        spec = driver_spec(ref, drivers)
        if spec is not None:
            found.append(through_driver_spec(qualname, ref, spec, why))
    return found


def drivable(result: TaskResult) -> bool:
    """Whether nothing profiled the entry point, for reasons arguments may mend."""
    if result.lost is not None or not isinstance(result.task.request, ProfileEntry):
        return False
    if working_specs(result) or any(attempt.by_entry for attempt in result.attempts):
        return False
    kinds = [failure.kind for failure in failures_of(result)]
    return bool(kinds) and all(kind in DRIVABLE for kind in kinds)


def failures_of(result: TaskResult) -> list[Failure]:
    """Every failure of a task: its scenarios', its collection's, the task's own."""
    found = [p.failure for p in result.partials if p.failure is not None]
    if isinstance(result.reply, EntryFinished):
        found += result.reply.failures
        if result.reply.unscenarioed is not None:
            found.append(result.reply.unscenarioed)
    if result.failure is not None:
        found.append(result.failure)
    return found


def working_specs(result: TaskResult) -> list[ScenarioSpec]:
    """The scenarios that measured the task's entry point (one per scenario, any size)."""
    qualname = result.task.id
    found: dict[str, ScenarioSpec] = {}
    for partial in result.partials:
        if partial.failure is None and any(m.qualname == qualname for m in partial.measurements):
            found.setdefault(partial.scenario.id, partial.scenario)
    return list(found.values())


def driver_rank(driver: tuple[ScenarioSpec, bool]) -> tuple[int, bool, int, str]:
    """Sort key of a driver: its source (:data:`DRIVER_ORDER`, :data:`LAST_DRIVERS`), a
    function's before a method's (a function runs a whole stream; a method often a step of
    one), the package's front door before its back rooms (``yaml.safe_load`` before
    ``yaml.scanner.scan``), id."""
    spec, function = driver
    order = DRIVER_ORDER.index(spec.source) if spec.source in DRIVER_ORDER else len(DRIVER_ORDER)
    order += spec.source in LAST_DRIVERS
    return order, not function, spec.qualname.count("."), spec.id


def beside_held(ranked: list[ScenarioSpec], held: Iterable[str]) -> list[ScenarioSpec]:
    """``ranked`` with the drivers of a held entry point's own class (or module) taking every
    other place: a language's ``to_cardinal`` is what calls its ``merge``, and when the drivers
    are more than the cap or the budget allows, a front door of another class seldom does."""
    owners = {qualname.rpartition(".")[0] for qualname in held}
    near = [spec for spec in ranked if spec.qualname.rpartition(".")[0] in owners]
    rest = [spec for spec in ranked if spec.qualname.rpartition(".")[0] not in owners]
    merged = [spec for pair in zip_longest(near, rest) for spec in pair if spec is not None]
    return merged


def with_failures(result: TaskResult, extra: list[Failure]) -> TaskResult:
    """``result`` with ``extra`` failed attempts added to its entry point's list."""
    if not extra or not isinstance(result.reply, EntryFinished):
        return result
    reply = replace(result.reply, failures=[*result.reply.failures, *extra])
    return replace(result, reply=reply)
