"""A task whose worker died in one of its scenarios runs again in a new worker, without it.

The worker says which scenario it runs before each trial call and each measured size
(:mod:`~apiprof.engine.scenarios.stops`). When it dies meanwhile — stuck in C code past the
CPU-time stop, a crash, the memory cap — the entry point is asked for again with that scenario
size as a stop, and with the sizes the dead worker already sent marked done (kept, not measured
twice). The results of all the workers are merged into one. A few reruns at most: an entry point
whose every scenario kills its worker ends with the last death as its reason.
"""

from __future__ import annotations

from dataclasses import replace

from apiprof.engine.isolation.pool import Task, TaskResult
from apiprof.engine.isolation.protocol import CaptureExamples, EntryFinished, ProfileEntry
from apiprof.engine.scenarios.stops import Running, Stop, scenario_key
from apiprof.model.records import Coverage, Failure, Phase

MAX_RERUNS = 3
"""Workers an entry point may lose to its scenarios before it is given up."""
RERUN_AFTER = frozenset({Coverage.TIMED_OUT, Coverage.CRASHED, Coverage.MEMORY})
"""Deaths of a worker that one scenario causes (a broken rule ends the task at once)."""


def rerun_task(result: TaskResult) -> Task | None:
    """The task again, without the scenario size its worker died in, or None when there is
    nothing to retry: the task finished, the worker died outside any scenario, or too often."""
    request, running, death = result.task.request, result.running, result.lost
    if running is None or death is None or death.kind not in RERUN_AFTER:
        return None
    if not isinstance(request, (ProfileEntry, CaptureExamples)):
        return None
    if len(request.stops) >= MAX_RERUNS:
        return None
    stops = [*request.stops, Stop.of(running, death)]
    if isinstance(request, CaptureExamples):
        return replace(result.task, request=replace(request, stops=stops))
    measured, ended = list(request.measured), list(request.ended)
    for outcome in result.partials:
        sent = Running(
            scenario_key(outcome.scenario), outcome.scenario.id, outcome.size, Phase.CALL
        )
        (ended if outcome.failure else measured).append(sent)
    again = replace(request, stops=stops, measured=measured, ended=ended)
    return replace(result.task, request=again)


def stop_failures(result: TaskResult) -> list[Failure]:
    """Why scenario sizes of the task were dropped after they stopped a worker. Trial calls
    that did are reported by the source that tried them, as any failed trial, when the last
    worker finished collecting."""
    stops = getattr(result.task.request, "stops", [])
    collected = isinstance(result.reply, EntryFinished)
    return [stop.failure() for stop in stops if stop.phase == Phase.CALL or not collected]
