"""The ``--tests`` request inside the worker: warm-up, the plan of the profiled runs, the runs.

pytest runs in this process: once unprofiled (the warm-up: test outcomes, the tests reaching
each entry point, argument capture), then in one more session whose collected tests run once
per profiler pass (:mod:`~apiprof.engine.scenarios.suitepasses`). Failing tests, and tests the
guard refuses, count as test failures, not as errors of the scenario.

The reply must leave before the scanner's ``--tests-timeout`` kills the worker, or even the
captured arguments are lost: the warm-up starts no test past
:data:`~apiprof.engine.scenarios.suitepasses.WARM_UP_STOP` of it, the profiled runs are
skipped when they cannot fit, a profiled run is not started (and one under way is stopped)
past :data:`~apiprof.engine.scenarios.suitepasses.PROFILED_SHARE` of it, and an alarm then
interrupts a test that will not end.
"""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from apiprof.engine import timeouts
from apiprof.engine.discovery.discover import measurable, resolve_object
from apiprof.engine.isolation import sandbox
from apiprof.engine.isolation.protocol import Captured, Failed, Reply, RunSuite, SuiteFinished
from apiprof.engine.measure import profiler
from apiprof.engine.scenarios.suitechunks import merge_edges, merge_measurements
from apiprof.engine.scenarios.suitefailures import failure_notes, shown_failures
from apiprof.engine.scenarios.suitepasses import (
    PROFILED_SHARE,
    WARM_UP_STOP,
    ProfiledRuns,
    SuiteOutOfTime,
    fits,
    out_of_time,
    plan_profiled_runs,
    run_profiled,
)
from apiprof.engine.scenarios.testrun import SuiteRunner
from apiprof.model.records import Coverage, Failure


@dataclass(frozen=True)
class SuiteClock:
    """Points in the ``--tests-timeout`` budget, from when the request arrived."""

    started: float
    budget: float  # seconds; 0: no limit

    def at(self, share: float) -> float:
        """``time.monotonic()`` at ``share`` of the budget (0 without a budget)."""
        return self.started + self.budget * share if self.budget else 0.0

    @contextlib.contextmanager
    def alarm(self) -> Iterator[None]:
        """Interrupt what runs at :data:`PROFILED_SHARE` of the budget (a test that would not
        end): pytest reports it as a failed test and the session stops after it. A wall-clock
        alarm only: the CPU-time stop of :func:`~apiprof.engine.timeouts.alarm` would end the
        worker — and lose the captures — once a suite's threads had used that much CPU."""
        if not self.budget or threading.current_thread() is not threading.main_thread():
            yield
            return

        def interrupt(signum: int, frame: object) -> None:
            raise timeouts.CallTimeout()

        previous = signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, max(self.at(PROFILED_SHARE) - time.monotonic(), 1e-3))
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def run_suite(
    request: RunSuite, guard: sandbox.Guard | None, emit: Callable[[Reply], None]
) -> Reply:
    """Answer a :class:`RunSuite` request (see the module's docstring); ``emit`` sends the
    arguments each test of the warm-up captured as soon as that test is over, so that a worker
    that dies later (memory, a crash, the timeout — in the warm-up or the profiled runs) still
    hands over what was captured until then."""
    if importlib.util.find_spec("pytest") is None:
        return Failed(
            Failure(
                Coverage.SKIPPED,
                f"pytest is not installed where {request.package} is scanned; install "
                "pytest into that environment or scan without --tests",
            )
        )
    clock = SuiteClock(time.monotonic(), request.budget)
    suite = SuiteRunner(request.path, request.package)
    with clock.alarm():
        captured = suite.warm_up(
            request.targets,
            request.capture,
            clock.at(WARM_UP_STOP),
            send=lambda calls: emit(Captured(calls)),
        )

    def finished(problem: str = "", **measured: Any) -> SuiteFinished:
        first = suite.runs[0]  # the warm-up: its outcomes are the suite's, unaffected by probes
        blocked = [event.reason for event in guard.take_events()] if guard else []
        return SuiteFinished(
            runs=len(suite.seconds) - 1,
            exit_code=first.exit_code,
            outcomes=dict(first.outcomes),
            blocked=sorted(set(blocked)),
            problem=problem,
            seconds=suite.seconds,
            notes=suite.notes,
            phases=suite.phases,
            failures=shown_failures(first.failures),
            **measured,
        )

    if problem := suite.problem():
        return finished(problem)
    deadline = clock.at(PROFILED_SHARE)
    with suite.timed("replay_check"):
        plan = plan_profiled_runs(suite, request.targets, captured, check_until=deadline)
    if plan.empty:
        return finished()
    if why := fits(suite, plan, deadline):
        return finished(why)
    targets, unresolved = [], []
    for name in plan.targets:  # looked up now: the copy the suite imported
        try:
            obj = measurable(resolve_object(name))
            profiler.resolve_site(obj)
        # a name the suite cannot be measured on; its own scenarios report why
        except Exception:
            unresolved.append(name)
            continue
        targets.append(profiler.Target(name, obj))

    reports: list[profiler.ProfileReport] = []  # one per chunk, filled as its passes finish

    def measure(run_once: Any) -> profiler.ProfileReport:
        reports.append(profiler.ProfileReport())
        return profiler.profile(
            run_once,
            targets,
            scenario_id=request.scenario_id,
            repeat=1,
            max_seconds=request.settings.max_seconds,
            time_budget=0.0,  # one run per pass: a suite is long and its calls many
            calibration=request.settings.calibration,
            warmup=False,  # the warm-up session was the warm-up
            consume=False,
            report=reports[-1],
        )

    try:
        with clock.alarm():
            runs = run_profiled(suite, plan, measure, deadline)
    except SuiteOutOfTime as error:
        return finished(str(error))
    measurements = merge_measurements(m for r in reports for m in r.measurements)
    if runs.cut and not measurements:  # cut off before a pass of it finished
        return finished(out_of_time(len(suite.seconds) - 1))
    suite.notes += chunk_notes(runs)
    profiled = suite.runs[-1]  # the profiled runs' session
    suite.notes += failure_notes(
        suite.runs[0].failures, plan.left_out, profiled.durations, profiled.failures
    )
    edges = merge_edges(e for r in reports for e in r.edges)
    return finished(measurements=measurements, edges=edges, unresolved=unresolved)


def chunk_notes(runs: ProfiledRuns[Any]) -> list[str]:
    """What the summary says of the chunks: how many, the slow-down they measured, the tests
    that could not fit, and a chunk cut off with what of it was kept."""
    planner = runs.planner
    notes = []
    if planner is not None and planner.done:
        notes.append(
            f"the profiled runs ran the tests in {runs.chunks} chunk(s), each profiled whole "
            f"before the next; profiling them took {planner.slowdown():.0f}x their warm-up time "
            "(the allocation pass and a run per timing group)"
        )
    if planner is not None and planner.skipped:
        notes.append(
            f"{len(planner.skipped)} test(s) ({planner.skipped_seconds():.1f} s in the warm-up) "
            "were not profiled: at that rate they would not fit in what was left of "
            "--tests-timeout (what they passed to entry points is replayed)"
        )
    if runs.cut:
        notes.append(
            f"chunk {runs.chunks} was cut off by --tests-timeout after {runs.cut_runs} complete "
            "run(s) of its tests (the allocation pass first): what its finished passes "
            "measured is kept, the rest of it is not"
        )
    return notes
