"""What a worker may say in answer to a request: the schema is not enough.

A well-formed message can still lie. A worker runs one task, and its replies may only concern
that task: measurements of the entry point it was given (and of the targets the scanner's own
scenario files name for it), under scenario ids that name that entry point, at the sizes that
scenario has, with numbers a real measurement can produce (:mod:`apiprof.model.checks`).
:func:`violation` says what is wrong with a message, or "" when nothing is; the pool ends a
worker that breaks the contract and keeps nothing it sent for that task.
"""

from __future__ import annotations

import math

from apiprof.engine.isolation.protocol import (
    Attempted,
    Calibrate,
    Calibrated,
    Call,
    CallDone,
    Captured,
    CaptureExamples,
    Discover,
    Discovered,
    DriveCapture,
    Driven,
    EntryFinished,
    Failed,
    Imported,
    Ping,
    Pong,
    ProfileEntry,
    Ready,
    Refused,
    Request,
    Running,
    RunSuite,
    ScenarioOutcome,
    SuiteFinished,
)
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.drivenspecs import driver_spec
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.engine.scenarios.suitefailures import NODE_CHARS, REASON_CHARS, SHOWN_FAILURES
from apiprof.model.checks import bucket_row_problem, qualname_problem, scenario_id_problem
from apiprof.model.records import NO_SIZE, CallEdge, Measurement, ScenarioSource

FINAL: dict[type, type] = {
    Ping: Pong,
    Call: CallDone,
    Calibrate: Calibrated,
    Discover: Discovered,
    CaptureExamples: Captured,
    DriveCapture: Driven,
    ProfileEntry: EntryFinished,
    RunSuite: SuiteFinished,
}
"""The final reply each request expects (besides :class:`Failed` and :class:`Refused`)."""

MAX_PROBE_COST_NS = 1e6
"""A probe costing a millisecond is not a measurement of a probe."""
MAX_REASON = 8192
"""The longest sentence about one attempt (a long path fits)."""


def violation(request: Request, message: object) -> str:
    """Why ``message`` cannot be a worker's answer to ``request`` ("" when it can)."""
    if isinstance(message, Attempted):
        attempt = message.attempt
        if len(attempt.reason) > MAX_REASON:
            return f"reported an attempt in more than {MAX_REASON} characters"
        if attempt.module and qualname_problem(attempt.module):
            return "blamed an attempt on a module whose name is not a Python name"
        return ""
    if isinstance(message, (Failed, Refused, Imported)):
        return ""
    if isinstance(message, Ready):
        return "announced itself again in the middle of a task"
    if isinstance(message, Running):
        return running_problem(request, message)
    if isinstance(message, ScenarioOutcome):
        if not isinstance(request, ProfileEntry) or not request.profile:
            return "sent scenario measurements for a task that measures nothing"
        return outcome_problem(request, message)
    if isinstance(message, Captured) and isinstance(request, RunSuite):  # before the final
        return captured_problem(message.calls, set(request.targets))
    if not isinstance(message, FINAL.get(type(request), ())):
        return f"answered a {type(request).__name__} request with {type(message).__name__}"
    if isinstance(message, EntryFinished):
        assert isinstance(request, ProfileEntry)
        for spec in message.specs:
            if problem := collected_spec_problem(request, spec):
                return problem
        for failure in message.failures:  # stored and shown: ids must be ids
            if failure.scenario and (problem := scenario_id_problem(failure.scenario)):
                return f"sent a failed attempt under {problem}"
    if isinstance(message, SuiteFinished):
        assert isinstance(request, RunSuite)
        return suite_problem(request, message) or captured_problem(
            message.captured, set(request.targets)
        )
    if isinstance(message, Captured):
        assert isinstance(request, CaptureExamples)
        return captured_problem(message.calls, {entry.qualname for entry in request.entries})
    if isinstance(message, Driven):
        assert isinstance(request, DriveCapture)
        return driven_problem(request, message)
    if isinstance(message, Calibrated):
        costs = [*message.calibration.overhead_ns.values()]
        costs += message.calibration.cpu_overhead_ns.values()
        if not all(math.isfinite(c) and 0 <= c <= MAX_PROBE_COST_NS for c in costs):
            return "sent probe costs outside physical sense"
    return ""


def running_problem(request: Request, running: Running) -> str:
    """A scenario about to run is named by a short printable key and id (they come back in
    the request that follows the worker's death), and only tasks that run scenarios send it."""
    if not isinstance(request, (ProfileEntry, CaptureExamples)):
        return f"announced a scenario in answer to a {type(request).__name__} request"
    if not running.key and not running.scenario:  # none runs now
        return ""
    if problem := scenario_id_problem(running.scenario) or scenario_id_problem(running.key):
        return f"announced {problem}"
    return ""


def outcome_problem(request: ProfileEntry, outcome: ScenarioOutcome) -> str:
    """One size of one scenario of ``request``'s entry point, or why it is not."""
    spec = outcome.scenario
    entry = request.entry.qualname
    trusted = {s.id: s for s in request.specs}
    if spec.source == ScenarioSource.FILE:
        if spec.id not in trusted:
            return f"sent measurements under the scenario {spec.id[:120]!r}, which no scenario file of its task has"
        spec = trusted[spec.id]  # targets and sizes as the scanner read them
    elif problem := collected_spec_problem(request, spec):
        return problem
    sizes = set(spec.sizes) if spec.size_axis else {NO_SIZE}
    if outcome.size not in sizes:
        return f"sent measurements of scenario {spec.id!r} at size {outcome.size}, which it does not have"
    allowed = {entry, *spec.measured}
    return measurements_problem(
        outcome.measurements, outcome.edges, allowed, spec.id, outcome.size
    ) or (
        ""
        if math.isfinite(outcome.slowest_run_seconds) and outcome.slowest_run_seconds >= 0
        else "sent a run time outside physical sense"
    )


def collected_spec_problem(request: ProfileEntry, spec: ScenarioSpec) -> str:
    """A scenario the worker collected itself (docstring, synthesised...) must be for its
    entry point, name it in its id (ids are global keys) and measure nothing else."""
    entry = request.entry.qualname
    if spec.qualname != entry or entry not in spec.id or spec.source == ScenarioSource.FILE:
        return (
            f"sent a scenario ({spec.id[:120]!r}) for something other than its entry point {entry}"
        )
    if set(spec.measured) != {entry}:
        return f"sent a scenario of {entry} that measures other entry points"
    if problem := scenario_id_problem(spec.id):
        return f"sent {problem}"
    if any(size < 1 for size in spec.sizes):
        return f"sent a scenario of {entry} with sizes below 1"
    return ""


def captured_problem(calls: list[CapturedCall], allowed: set[str]) -> str:
    """Captured arguments may only be of the entry points the task was given (each goes to
    that entry point's own worker to be replayed)."""
    for call in calls:
        if call.qualname not in allowed:
            what = (
                call.qualname if not qualname_problem(call.qualname) else repr(call.qualname[:120])
            )
            return f"sent captured arguments of {what}, which its task did not watch"
    return ""


def driven_problem(request: DriveCapture, reply: Driven) -> str:
    """Calls captured by drivers may only be of the watched entry points, and name a driver the
    scanner sent (or a round trip of two): the scanner rebuilds the code it runs again."""
    drivers = {spec.id: spec for spec in request.drivers}
    for ref in [*reply.reach, *(call.driver for call in reply.calls)]:
        if driver_spec(ref, drivers) is None:
            return f"named a driver its task did not send ({ref[:120]!r})"
    watched = set(request.watched)
    if any(name not in watched for names in reply.reach.values() for name in names):
        return "said a driver reached an entry point its task did not watch"
    return captured_problem(reply.calls, watched)


def suite_problem(request: RunSuite, reply: SuiteFinished) -> str:
    allowed = set(request.targets)
    times = [*reply.seconds, *reply.phases.values()]
    if not all(math.isfinite(s) and s >= 0 for s in times):
        return "sent times of its suite runs that are not durations"
    if len(reply.phases) > MAX_SUITE_PHASES or any(len(k) > 40 for k in reply.phases):
        return "sent more or longer suite phase names than a suite run has"
    if len(reply.failures) > SHOWN_FAILURES or any(
        len(node) > NODE_CHARS or len(why) > REASON_CHARS for node, why in reply.failures.items()
    ):
        return "sent more or longer failing tests than a suite run reports"
    return measurements_problem(
        reply.measurements, reply.edges, allowed, request.scenario_id, NO_SIZE
    )


MAX_SUITE_PHASES = 8
"""Steps a suite worker may time (:attr:`~apiprof.engine.scenarios.testrun.SuiteRunner.phases`)."""


def measurements_problem(
    measurements: list[Measurement],
    edges: list[CallEdge],
    allowed: set[str],
    scenario_id: str,
    size: int,
) -> str:
    """Measurements must be of ``allowed`` names, under the scenario and size of their message,
    with rows real values can produce; call edges must join ``allowed`` names."""
    for m in measurements:
        if m.qualname not in allowed:
            what = m.qualname if not qualname_problem(m.qualname) else repr(m.qualname[:120])
            return f"sent measurements for {what}, which its task did not ask it to measure"
        if m.scenario_id != scenario_id or m.size != size:
            return f"sent measurements of {m.qualname} labelled with another scenario or size"
        for index, count, total, total_sq in m.histogram.rows():
            if problem := bucket_row_problem(m.metric, index, count, total, total_sq):
                return f"sent {m.metric} figures of {m.qualname} outside physical sense ({problem})"
    for edge in edges:
        if edge.caller not in allowed or edge.callee not in allowed or edge.count < 0:
            return "sent call-graph edges outside its task"
    return ""
