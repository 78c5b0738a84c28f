"""Workers forked by a zygote: each is pristine, contained, and the fresh start stays available."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from apiprof.engine.isolation import spawn
from apiprof.engine.isolation.options import Start
from apiprof.engine.isolation.pool import Task, TaskResult, WorkerOptions, WorkerPool
from apiprof.engine.isolation.process import WorkerStartError
from apiprof.engine.isolation.protocol import Call, CallDone, Ping, Pong
from apiprof.engine.isolation.zygote import ZygoteError, check_pristine
from apiprof.model.records import Coverage

STATEFUL = '''
import os, sys
counter = 0

def bump():
    """Module state one entry point changes."""
    global counter
    counter += 1
    sys.setrecursionlimit(321)
    os.environ["APIPROF_LEFT_BEHIND"] = "yes"
    open("left-behind.txt", "w").close()
    return counter

def seen():
    """What the next entry point sees of it."""
    return (counter, sys.getrecursionlimit(), os.environ.get("APIPROF_LEFT_BEHIND"),
            sorted(os.listdir("..")))
'''


@pytest.fixture(scope="module")
def state_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("zygote")
    home.chmod(0o755)  # readable by the sandbox's uid when tests run as root
    (home / "stateful_mod.py").write_text(STATEFUL)
    (home / "stateful_mod.py").chmod(0o644)
    return home


def returned(result: TaskResult) -> str | None:
    return result.reply.result if isinstance(result.reply, CallDone) else None


@pytest.fixture(scope="module")
def zygote_run(state_home):
    """Tasks through one zygote: state changes, a crash, a hang, a signal at the zygote."""
    options = WorkerOptions(env={"PYTHONPATH": str(state_home)}, scenario_timeout=60.0)
    tasks = [
        Task("bump", Call("stateful_mod:bump")),
        Task("seen", Call("stateful_mod:seen")),
        Task("parent", Call("os:getppid")),
        Task("kill-zygote", Call("os:kill", [0, 9])),  # replaced below with the zygote's pid
        Task("abort", Call("os:abort")),
        Task("hang", Call("time:sleep", [600]), timeout=3.0),
        Task("after", Ping()),
    ]
    results: dict[str, TaskResult] = {}
    with WorkerPool(1, options) as pool:
        for task in tasks[:3]:
            results[task.id] = pool.request(task.request, task.timeout)
        zygote = returned(results["parent"])
        assert zygote is not None
        kill = Task("kill-zygote", Call("os:kill", [int(zygote), 9]))
        for task in [kill, *tasks[4:]]:
            results[task.id] = pool.request(task.request, task.timeout)
        assert pool.spawner is not None
        fallback, method, started = pool.spawner.fallback, pool.start_method, pool.started
    return results, fallback, method, started


def test_a_forked_worker_is_pristine(zygote_run):
    """What one entry point changes (module state, interpreter settings, environment, files)
    is not seen by the next one, exactly as with a fresh interpreter per entry point."""
    results, fallback, method, _ = zygote_run
    assert (fallback, method) == ("", "zygote")
    assert returned(results["bump"]) == "1"
    counter, limit, variable, siblings = eval(returned(results["seen"]) or "")
    assert (counter, variable) == (0, None)
    assert limit != 321
    workers = [name for name in siblings if name.startswith("w")]
    assert len(workers) == 1, "the last worker's sandbox directory is gone before the next forks"


def test_a_forked_worker_cannot_signal_its_zygote(zygote_run):
    results, fallback, _, _ = zygote_run
    failure = results["kill-zygote"].failure
    assert failure is not None and failure.kind == Coverage.BLOCKED, failure
    assert any("tried to send SIGKILL" in a.reason for a in results["kill-zygote"].attempts)
    assert isinstance(results["after"].reply, Pong) and fallback == ""


def test_crashes_and_hangs_stay_contained_through_the_zygote(zygote_run):
    results, fallback, _, started = zygote_run
    crash, hang = results["abort"].failure, results["hang"].failure
    assert crash is not None and crash.kind == Coverage.CRASHED and "abort" in crash.reason
    assert hang is not None and hang.kind == Coverage.TIMED_OUT
    assert isinstance(results["after"].reply, Pong), "the zygote outlives what its workers do"
    assert fallback == "" and started == 7


def test_the_fresh_start_remains_and_is_the_fallback(monkeypatch):
    with WorkerPool(1, WorkerOptions(start=Start.FRESH)) as pool:
        assert isinstance(pool.request(Ping()).reply, Pong)
        assert pool.start_method == "fresh"

    def broken(*args: object, **kwargs: object) -> None:
        raise WorkerStartError("no zygote", "no zygote today")

    monkeypatch.setattr(spawn.Zygote, "__init__", broken)
    with WorkerPool(1) as pool:
        first, second = pool.request(Ping()), pool.request(Ping())
        assert isinstance(first.reply, Pong) and isinstance(second.reply, Pong)
        assert pool.start_method == "fresh (a zygote did not start (no zygote today))"


def test_a_zygote_with_a_thread_refuses_to_fork():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with pytest.raises(ZygoteError, match="threads"):
            check_pristine()
    finally:
        stop.set()
        thread.join()
