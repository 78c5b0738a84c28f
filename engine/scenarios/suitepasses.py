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
would cost that many times over. The tests run in chunks planned to fit the time left
(:mod:`~apiprof.engine.scenarios.suitechunks`), each profiled whole before the next.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from apiprof.engine import timeouts
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.collect import replay_captures
from apiprof.engine.scenarios.suitechunks import LEAST_SLOWDOWN, ChunkPlanner, chunk_order
from apiprof.engine.scenarios.suitefailures import unneeded_failures
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
    # the quickest tests reaching each target: profiled first, in the first chunk
    first: frozenset[str] = frozenset()
    # tests that failed in the warm-up and are not run again (see suitefailures)
    left_out: frozenset[str] = frozenset()

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
    if recorder is None:
        return ProfiledPlan(list(targets), None, [], tests_took)
    if tests_took <= SELECT_AFTER_SECONDS and not large:
        reaching = {t: recorder.reached[t] for t in targets if recorder.reached.get(t)}
        quickest = cheapest_tests(reaching, first.durations, first.failures)
        # entry points without Python code (their calls are not seen) are measured where the
        # tests that run call them, as in a long suite's selection
        left_out = frozenset(
            unneeded_failures(first.failures, recorder.reached, targets)
            if not first.stopped
            else ()
        )
        if not left_out:
            return ProfiledPlan(list(targets), None, [], tests_took, first=quickest)
        kept = frozenset(first.durations) - left_out
        estimate = sum(first.durations[node] for node in kept)
        return ProfiledPlan(list(targets), kept, [], estimate, first=quickest, left_out=left_out)
    replayed = replaying(captured, check_until)
    watched = recorder.watched_names()
    needed = [t for t in targets if t in watched and t not in replayed and recorder.reached.get(t)]
    reaching = {q: recorder.reached[q] for q in needed}
    chosen = cheapest_tests(reaching, first.durations, first.failures)
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
    return ProfiledPlan([*needed, *unwatched], chosen, files, estimate, len(left), chosen)


def cheapest_tests(
    reached: dict[str, list[str]],
    durations: Mapping[str, float],
    failing: Collection[str] = (),
) -> frozenset[str]:
    """Node ids of quick tests that together reach every entry point of ``reached`` (entry
    point -> the origins that reached it first): for each, one already chosen for another if
    it reached this one too, else its quickest in the warm-up that did not fail (a ``failing``
    one only when no other reached it). Entry points with the fewest tests choose first, so
    that the tests they cannot do without are shared."""
    chosen: set[str] = set()
    options = {
        qualname: [o.removeprefix(ORIGIN) for o in origins if o.startswith(ORIGIN)]
        for qualname, origins in reached.items()
    }
    for qualname in sorted(options, key=lambda q: (len(options[q]), q)):
        tests = options[qualname]
        if tests and not chosen.intersection(tests):
            chosen.add(
                min(tests, key=lambda node: (node in failing, durations.get(node, float("inf"))))
            )
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
    """Why no profiled run can fit before ``deadline`` ("" when one may): even its quickest
    test would not, at the least slow-down profiling has."""
    if not deadline:
        return ""
    durations = runner.runs[0].durations
    chosen = plan.selected if plan.selected is not None else durations.keys()
    quickest = min((durations[node] for node in chosen if node in durations), default=0.0)
    needed = LEAST_SLOWDOWN * quickest
    left = deadline - time.monotonic()
    if needed <= left:
        return ""
    return (
        f"its profiled runs would need at least {needed:.0f} s (its quickest test took "
        f"{quickest:.1f} s in the warm-up, and profiling makes a test at least "
        f"{LEAST_SLOWDOWN:g} times as long) and {max(left, 0):.0f} s of --tests-timeout were "
        "left, so they were skipped (raise --tests-timeout to profile them); the arguments it "
        "captured are replayed"
    )


@dataclass
class ProfiledRuns(Generic[T]):
    """What the chunks of profiled runs gave: ``work``'s result for each chunk that finished,
    and why the runs stopped early ("" when every chunk that fitted ran)."""

    results: list[T] = field(default_factory=list)
    chunks: int = 0  # chunks started
    cut: str = ""  # why the last chunk started was cut off
    cut_runs: int = 0  # complete runs of the tests of that chunk before the cut
    planner: ChunkPlanner | None = None


def run_profiled(
    runner: SuiteRunner,
    plan: ProfiledPlan,
    work: Callable[[Callable[[], None]], T],
    deadline: float = 0.0,
) -> ProfiledRuns[T]:
    """Collect the plan's tests once and profile them chunk by chunk: ``work`` gets, for each
    chunk, a function that runs its tests once (each run's time goes to ``runner.seconds``).
    A chunk that would end past ``deadline`` (a ``time.monotonic()``; 0: none) is not started,
    and one under way is cut off (:class:`SuiteOutOfTime` inside ``work``); raises
    :class:`SuiteOutOfTime` when pytest could not even collect the tests."""
    durations = runner.runs[0].durations  # what each test took in the warm-up
    loop = repeating_loop(work, runner.seconds, deadline, plan.first, durations)
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
    return loop.outcome


def repeating_loop(
    work: Callable[[Callable[[], None]], Any],
    seconds: list[float],
    deadline: float,
    first: frozenset[str] = frozenset(),
    durations: Mapping[str, float] | None = None,
) -> Any:
    """A pytest plugin that replaces the session's test loop: the collected tests, the
    ``first`` of them at the front, are cut into chunks that fit before ``deadline`` (each
    test's warm-up seconds in ``durations`` say how long it runs), and for
    each ``work`` gets a function running the chunk's tests once, through pytest's own protocol
    (fixtures set up and torn down, failures reported and not raised). What ``work`` returns is
    kept on the plugin; an error other than running out of time ends the loop and is kept."""
    import pytest

    class RepeatingLoop:
        __test__ = False

        def __init__(self) -> None:
            self.started = 0.0  # time.perf_counter() when the collected tests were handed over
            self.outcome: ProfiledRuns[Any] = ProfiledRuns()
            self.error: BaseException | None = None
            self.chunk_runs: list[float] = []  # seconds of each complete run of the chunk

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtestloop(self, session: Any) -> bool:
            self.started = time.perf_counter()
            by_node = {item.nodeid: item for item in session.items}
            planner = ChunkPlanner(durations or {}, deadline)
            self.outcome.planner = planner
            pending = chunk_order(list(by_node), first, planner.durations)
            while chunk := planner.next_chunk(pending):
                items = [by_node[node] for node in chunk]
                self.chunk_runs = []
                self.outcome.chunks += 1
                began = time.perf_counter()
                try:
                    self.outcome.results.append(work(functools.partial(self.run_all, items)))
                # out of time: a run would not end before the deadline, or the alarm of a
                # test that would not end
                except (SuiteOutOfTime, timeouts.CallTimeout) as error:
                    self.outcome.cut = str(error) or "a test was interrupted at the deadline"
                    self.outcome.cut_runs = len(self.chunk_runs)
                    break
                except Exception as error:  # the profiler's own errors
                    self.error = error
                    break
                planner.record(chunk, time.perf_counter() - began)
            return True

        def run_all(self, items: list[Any]) -> None:
            last = self.chunk_runs[-1] if self.chunk_runs else 0.0
            if deadline and time.monotonic() + last > deadline:
                raise SuiteOutOfTime("the next run would end past the deadline")
            started = time.perf_counter()
            for index, item in enumerate(items):
                if deadline and time.monotonic() > deadline:
                    raise SuiteOutOfTime("the deadline passed during a run")
                following = items[index + 1] if index + 1 < len(items) else None
                item.ihook.pytest_runtest_protocol(item=item, nextitem=following)
            took = time.perf_counter() - started
            seconds.append(took)
            self.chunk_runs.append(took)

    return RepeatingLoop()


def out_of_time(runs: int) -> str:
    return (
        f"its profiled runs could not finish within --tests-timeout (stopped after {runs} "
        "complete run(s)), so nothing of them was kept; the arguments it captured are replayed"
    )
