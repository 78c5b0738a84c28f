"""Per-call time limits armed once per stretch of calls (engine/timeouts, ``_callguard``).

A profiler runs a scenario thousands of times: the limit of each run must cost no system call,
catch a hang at its own deadline wherever in the stretch it happens, leave the runs after a
timeout measured normally, and stay invisible to the profiler's callbacks and allocation
counter. Every timer here is a hang guard: the assertions are about what was caught and what
was not, never about which of two clocks won a race. Limits are a quarter of a second or more:
a busy machine may stop a process for tens of milliseconds, during a call, and that call did
run past a shorter limit.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import groundtruth_pkg as gt
import pytest

from apiprof.engine import timeouts

needs_guard = pytest.mark.skipif(
    timeouts._callguard is None, reason="apiprof.engine.timeouts._callguard not built"
)
COARSE_TICK = 0.02  # the guard reads a coarse clock (a jiffy, at most 10 ms): its resolution


@pytest.fixture
def alarm_handler() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGALRM)
    timeouts.install_alarm_handler()
    try:
        yield
    finally:
        signal.signal(signal.SIGALRM, previous)


def quick() -> int:
    return 1


def hang() -> None:
    while True:
        pass


def run_for(call, seconds: float) -> int:
    """Call ``call`` back to back for ``seconds`` of wall time; the number of calls."""
    calls = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        call()
        calls += 1
    return calls


def quick_and_stuck(limit: float):
    """A quick and a hanging function, each call limited to ``limit`` seconds."""
    return timeouts.limit_each_call(quick, limit), timeouts.limit_each_call(hang, limit)


def time_to_timeout(call) -> float:
    started = time.monotonic()
    with pytest.raises(timeouts.CallTimeout):
        call()
    return time.monotonic() - started


@needs_guard
def test_a_hang_in_the_middle_of_a_stretch_is_caught_at_its_own_deadline(alarm_handler):
    limit = 0.25
    with timeouts.stretch():
        ok, stuck = quick_and_stuck(limit)
        assert run_for(ok, 3 * limit) > 100  # the timer, armed by the first call, fired meanwhile
        took = time_to_timeout(stuck)
    assert took >= limit - COARSE_TICK, "stopped before its own limit"
    assert took < limit + 30  # hang guard only


@needs_guard
def test_calls_after_a_timed_out_one_are_measured_normally(alarm_handler):
    limit = 0.25
    with timeouts.stretch():
        ok, stuck = quick_and_stuck(limit)
        time_to_timeout(stuck)
        # runs several limits long: none of them is interrupted (the due timer is spent)
        assert run_for(ok, 3 * limit) > 100
        assert time_to_timeout(stuck) >= limit - COARSE_TICK  # and the next hang is caught


@needs_guard
def test_signal_handlers_swapped_in_between_do_not_disable_the_limits(alarm_handler):
    """An ``alarm()`` block inside a stretch, and a handler reset after a stretch that was not
    closed, take SIGALRM away from the guard: the next timer it arms takes it back."""
    limit = 0.25
    stuck = timeouts.limit_each_call(hang, limit)
    time_to_timeout(stuck)  # no stretch: nothing stops the timers' state but the timeout
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    timeouts.install_alarm_handler()
    with timeouts.stretch():
        ok = timeouts.limit_each_call(quick, limit)
        ok()
        with timeouts.alarm(30.0):  # swaps the handler and re-arms the timer it found
            ok()
        assert run_for(ok, 3 * limit) > 100  # no call is stopped early
        assert time_to_timeout(stuck) >= limit - COARSE_TICK


@needs_guard
def test_the_timer_is_armed_once_per_stretch_not_per_call(alarm_handler):
    with timeouts.stretch():
        ok = timeouts.limit_each_call(quick, 60.0)
        ok()
        first = signal.getitimer(signal.ITIMER_REAL)[0]
        time.sleep(0.05)
        ok()
        second = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < second < first <= 60.0, "a call re-armed the timer"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), "the stretch's end stops it"
    assert timeouts._callguard.state() == dict.fromkeys(
        ("running", "alarm_armed", "stop_armed", "installed"), False
    )


@needs_guard
def test_a_nested_limited_call_gives_the_outer_one_its_deadline_back(alarm_handler):
    limit = 0.2

    def outer() -> None:
        inner = timeouts.limit_each_call(quick, 60.0)
        for _ in range(10):
            inner()
        hang()  # the outer call's limit, not the inner's 60 s, stops this

    with timeouts.stretch():
        assert time_to_timeout(timeouts.limit_each_call(outer, limit)) < 30  # hang guard


@needs_guard
def test_the_guard_is_invisible_to_profilers_and_allocation_counting(alarm_handler):
    """Signals that fire while calls run (the stretches last several limits) re-arm the timer
    in C: no frame, call or allocation of the guard reaches a profile hook or the counter."""
    from apiprof.engine.measure.alloc import run_allocation_pass
    from apiprof.engine.measure.alloccounters import _alloccount

    limit = 0.5
    seen: set[str] = set()

    def observe(frame, event, arg) -> None:
        seen.add(getattr(arg, "__name__", "") if event.startswith("c_") else frame.f_code.co_name)

    with timeouts.stretch():
        ok = timeouts.limit_each_call(quick, limit)
        sys.setprofile(observe)
        try:
            run_for(ok, 3 * limit)
        finally:
            sys.setprofile(None)
        assert "quick" in seen
        assert not seen & {"on_alarm", "_raise_call_timeout", "setitimer", "alarm_signal"}
        if _alloccount is None:
            return
        allocating = timeouts.limit_each_call(gt.child_alloc, limit)
        started, runs = time.monotonic(), 0
        while time.monotonic() - started < 3 * limit:
            result = run_allocation_pass(
                lambda: [allocating() for _ in range(100)], [gt.child_alloc.__code__], repeat=5
            )
            hist = result.incl[gt.child_alloc.__code__]
            n = hist.count  # every call exactly PER_CALL: the sum and the sum of squares say so
            assert n >= 100 and (hist.total, hist.total_sq) == (n * PER_CALL, n * PER_CALL**2)
            runs += 1


@needs_guard
def test_a_timed_out_call_is_reported_with_the_phase_and_place_it_was_stopped_in(alarm_handler):
    from apiprof.engine.isolation.protocol import Failed
    from apiprof.engine.isolation.worker import Worker
    from apiprof.model.records import Coverage, Phase

    namespace: dict[str, object] = {}
    exec(compile("def run():\n    while True:\n        pass\n", "<call of s>", "exec"), namespace)
    run = timeouts.limit_each_call(namespace["run"], 0.25)  # type: ignore[arg-type]
    worker = Worker(None, 512, send=lambda task_id, reply: None)
    with timeouts.stretch():
        reply = worker.attempt(run, scenario="s")  # type: ignore[arg-type]
    assert isinstance(reply, Failed)
    failure = reply.failure
    assert (failure.kind, failure.phase, failure.scenario) == (Coverage.TIMED_OUT, Phase.CALL, "s")
    assert failure.location.startswith("<call of s>:") and failure.location.endswith(" in run")
    assert "per-call timeout" in failure.reason


PER_CALL = gt.CHILD_BYTES + bytearray(0).__sizeof__() + 1  # the buffer adds n + 1


STUCK_IN_C = """
import itertools, sys, time
from apiprof.engine import timeouts
timeouts.install_alarm_handler()
timeouts.enable_stuck_call_stop()
limit = {limit}
with timeouts.stretch():
    ok = timeouts.limit_each_call(lambda: 1, limit)
    end = time.monotonic() + 2 * (limit + timeouts.STUCK_GRACE_SECONDS)
    while time.monotonic() < end:
        ok()
    print("healthy stretch", flush=True)
    timeouts.limit_each_call(lambda: sum(itertools.repeat(1, 2 * 10**6)), limit)()
    print("healthy C call", flush=True)
    timeouts.limit_each_call(lambda: sum(itertools.repeat(1, 10**13)), limit)()
print("not stopped", flush=True)
"""


@needs_guard
@pytest.mark.slow
def test_a_call_stuck_in_c_ends_the_process_but_a_long_healthy_stretch_does_not():
    code = textwrap.dedent(STUCK_IN_C.format(limit=0.5))
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300
    )
    assert done.stdout.splitlines() == ["healthy stretch", "healthy C call"], done.stderr
    assert done.returncode == -signal.SIGPROF
