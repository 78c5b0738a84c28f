"""The profiled runs of a ``--tests`` suite: which tests and entry points they need, and the
tests run again and again inside one pytest session.

The warm-up ran the suite once (a large one: a sample of each parametrized test's cases, see
:mod:`~apiprof.engine.scenarios.thinning`) and captured the arguments each entry point
received. A short suite is then profiled whole. A long one (its tests past
:data:`SELECT_AFTER_SECONDS`, or a sampled one) is not: an entry point whose captured
arguments replay is measured by those replays — ordinary isolated scenarios, profiled like any
other — and the profiled runs measure only the rest (arguments that cannot be copied, copies that do not
replay) through the quickest of the first tests that reached each. Either way the tests are
collected once, in one more pytest session whose collection looks only at the files holding
them, and each profiler pass runs the collected items again: collecting a large parametrised
suite costs more than running a few of its tests, and under the allocation pass's hooks it
would cost that many times over.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from apiprof.engine import timeouts
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.collect import replay_captures
from apiprof.engine.scenarios.testrun import ORIGIN, SuiteRunner

T = TypeVar("T")

SELECT_AFTER_SECONDS = 10.0
"""A suite whose tests took longer in the warm-up (setup, call and teardown of each; not
pytest's start-up and collection, which the profiled runs do not repeat) is profiled only where
replays of captured arguments cannot measure it."""

WARM_UP_STOP = 0.6
"""Share of ``--tests-timeout`` after which the warm-up starts no further test (what it
captured so far is handed over)."""

PROFILED_SHARE = 0.9
"""Share of ``--tests-timeout`` by which the profiled runs must be over: later, the next run
is not started (a run under way is interrupted), so the reply leaves before the timeout."""

RUNS_FORESEEN = 4
"""Runs of the selected tests the profiled passes are assumed to need (the allocation pass,
slower than the others, and the timing groups) when deciding whether they fit at all."""


class SuiteOutOfTime(Exception):
    """The profiled runs could not finish within their share of ``--tests-timeout``."""


@dataclass(frozen=True)
class ProfiledPlan:
    """What the profiled runs run and measure."""

    targets: list[str]  # entry points measured in them
    selected: frozenset[str] | None  # node ids of the tests they run; None: all
    files: list[str]  # the files holding the selected tests (what is collected again)
    estimate: float  # seconds the selected tests took in the warm-up
    replayed: int = 0  # entry points reached by the suite and left to their replays

    @property
    def empty(self) -> bool:
        return not self.targets or self.selected == frozenset()


def plan_profiled_runs(
    runner: SuiteRunner,
    targets: Sequence[str],
    captured: Sequence[CapturedCall],
    *,
    check_until: float = 0.0,
) -> ProfiledPlan:
    """The profiled runs after ``runner``'s warm-up: the whole suite and every target for a
    short suite; for a long one, only what replays cannot measure (replays are tried here,
    until ``check_until``, a ``time.monotonic()``; those not tried by then count as failing)."""
    first = runner.runs[0]
    recorder = runner.recorder
    tests_took = sum(first.durations.values())  # what a rerun costs: collection is not redone
    # a sampled suite is large whatever its sample cost: under the allocation pass's hooks a
    # sample of packaging's (12 s in the warm-up) took 480 s, one run of several
    large = first.sampled is not None
    if recorder is None or (tests_took <= SELECT_AFTER_SECONDS and not large):
        return ProfiledPlan(list(targets), None, [], tests_took)
    replayed = replaying(captured, check_until)
    watched = recorder.watched_names()
    needed = [t for t in targets if t in watched and t not in replayed and recorder.reached.get(t)]
    chosen = cheapest_tests({q: recorder.reached[q] for q in needed}, first.durations)
    ran = sum(first.outcomes.values())
    left = [t for t in targets if t in replayed and recorder.reached.get(t)]
    unwatched = [t for t in targets if t not in watched]
    runner.notes.append(
        ("it is large" if large else f"its tests took {tests_took:.0f} s in the warm-up")
        + ", so the suite was not profiled whole: "
        f"{len(left)} entry point(s) it reached are measured by replaying their captured "
        f"arguments, and the profiled runs ran only {len(chosen)} of its {ran} tests, the "
        f"quickest that reached each of the {len(needed)} other(s)"
        + (
            f"; {len(unwatched)} entry point(s) without Python code are measured only where "
            "those tests call them"
            if unwatched and chosen
            else ""
        )
    )
    files = sorted({first.files[node] for node in chosen if node in first.files})
    estimate = sum(first.durations[node] for node in chosen)
    return ProfiledPlan([*needed, *unwatched], chosen, files, estimate, len(left))


def cheapest_tests(reached: dict[str, list[str]], durations: Mapping[str, float]) -> frozenset[str]:
    """Node ids of quick tests that together reach every entry point of ``reached`` (entry
    point -> the origins that reached it first): for each, one already chosen for another if
    it reached this one too, else its quickest in the warm-up. Entry points with the fewest
    tests choose first, so that the tests they cannot do without are shared."""
    chosen: set[str] = set()
    options = {
        qualname: [o.removeprefix(ORIGIN) for o in origins if o.startswith(ORIGIN)]
        for qualname, origins in reached.items()
    }
    for qualname in sorted(options, key=lambda q: (len(options[q]), q)):
        tests = options[qualname]
        if tests and not chosen.intersection(tests):
            chosen.add(min(tests, key=lambda node: durations.get(node, float("inf"))))
    return frozenset(chosen)


def replaying(captured: Sequence[CapturedCall], until: float = 0.0) -> set[str]:
    """The entry points with a captured call whose replay runs (as the scan will try it)."""
    by_entry: dict[str, list[CapturedCall]] = {}
    for call in captured:
        if call.payload:
            by_entry.setdefault(call.qualname, []).append(call)
    found = set()
    for qualname, calls in by_entry.items():
        if until and time.monotonic() > until:
            break
        if replay_captures(calls, ()):
            found.add(qualname)
    return found


def fits(runner: SuiteRunner, plan: ProfiledPlan, deadline: float) -> str:
    """Why the profiled runs cannot fit before ``deadline`` ("" when they may)."""
    if not deadline:
        return ""
    needed = RUNS_FORESEEN * plan.estimate
    left = deadline - time.monotonic()
    if needed <= left:
        return ""
    return (
        f"its profiled runs would need about {needed:.0f} s ({RUNS_FORESEEN} runs of the "
        f"{plan.estimate:.0f} s its tests took in the warm-up) and {max(left, 0):.0f} s of "
        "--tests-timeout were left, so they were skipped (raise --tests-timeout to profile "
        "them); the arguments it captured are replayed"
    )


def run_profiled(
    runner: SuiteRunner,
    plan: ProfiledPlan,
    work: Callable[[Callable[[], None]], T],
    deadline: float = 0.0,
) -> T:
    """Collect the plan's tests once and call ``work`` with a function that runs them all once
    (each run's time goes to ``runner.seconds``); raises :class:`SuiteOutOfTime` when a run
    would end past ``deadline`` (a ``time.monotonic()``; 0: none)."""
    loop = repeating_loop(work, runner.seconds, deadline)
    args = runner.args
    if plan.selected is not None and plan.files:  # else the whole suite, deselecting the rest
        rootdir = runner.runs[0].rootdir
        args = [*plan.files, *runner.args[1:], *(["--rootdir", rootdir] if rootdir else [])]
    started = time.perf_counter()
    tally = runner.run(args=args, plugins=[loop], selected=plan.selected)
    if loop.started:
        runner.phases["profiled_collection"] = loop.started - started
        runner.phases["profiled_runs"] = sum(runner.seconds[1:])
    if loop.error is not None:
        raise loop.error
    if not loop.started:
        raise SuiteOutOfTime(
            f"pytest exited with code {tally.exit_code} before the profiled runs: {runner.tail()}"
        )
    return loop.result


def repeating_loop(
    work: Callable[[Callable[[], None]], Any], seconds: list[float], deadline: float
) -> Any:
    """A pytest plugin that replaces the session's test loop: ``work`` gets a function running
    every collected test once, through pytest's own protocol (fixtures set up and torn down,
    failures reported and not raised). What ``work`` returns or raises is kept on the plugin."""
    import pytest

    class RepeatingLoop:
        __test__ = False

        def __init__(self) -> None:
            self.started = 0.0  # time.perf_counter() when the collected tests were handed over
            self.result: Any = None
            self.error: BaseException | None = None
            self.profiled_runs = 0

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtestloop(self, session: Any) -> bool:
            items = list(session.items)
            self.started = time.perf_counter()
            try:
                self.result = work(lambda: self.run_all(items))
            # the profiler's errors, out of time, the alarm of a test that would not end
            except (Exception, timeouts.CallTimeout) as error:
                self.error = error
            return True

        def run_all(self, items: list[Any]) -> None:
            last = seconds[-1] if self.profiled_runs else 0.0
            if deadline and time.monotonic() + last > deadline:
                raise SuiteOutOfTime(out_of_time(self.profiled_runs))
            started = time.perf_counter()
            for index, item in enumerate(items):
                if deadline and time.monotonic() > deadline:
                    raise SuiteOutOfTime(out_of_time(self.profiled_runs))
                following = items[index + 1] if index + 1 < len(items) else None
                item.ihook.pytest_runtest_protocol(item=item, nextitem=following)
            seconds.append(time.perf_counter() - started)
            self.profiled_runs += 1

    return RepeatingLoop()


def out_of_time(runs: int) -> str:
    return (
        f"its profiled runs could not finish within --tests-timeout (stopped after {runs} "
        "complete run(s)), so nothing of them was kept; the arguments it captured are replayed"
    )
