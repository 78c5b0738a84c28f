"""The worker pool: isolation, crash/hang/memory handling, kill and replace, parallel jobs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from apiprof.engine.isolation.pool import (
    Task,
    TaskResult,
    WorkerOptions,
    WorkerPool,
    describe_death,
)
from apiprof.engine.isolation.protocol import Call, CallDone, Ping
from apiprof.model.records import Coverage, Failure

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def hostile_home(tmp_path_factory):
    """hostile_pkg copied to a temporary directory, with the canary file beside it."""
    home = tmp_path_factory.mktemp("hostile")
    shutil.copytree(FIXTURES / "hostile_pkg", home / "hostile_pkg")
    (home / "CANARY").write_text("alive")
    return home


@pytest.fixture(scope="module")
def hostile_results(hostile_home):
    """Every hostile function called once in a two-worker pool (shared: workers are slow to start)."""
    options = WorkerOptions(
        memory_mb=512, call_timeout=1.0, scenario_timeout=5.0, env={"PYTHONPATH": str(hostile_home)}
    )
    names = [
        "delete_canary",
        "write_outside",
        "open_socket",
        "spawn_process",
        "segfault",
        "loop_forever",
        "loop_ignoring_alarms",
        "loop_blocking_signals",
        "spin_in_c",
        "allocate_forever",
        "add",
    ]
    tasks = [
        Task(n, Call(f"hostile_pkg:{n}", [2, 3] if n == "add" else [], call_timeout=1.0))
        for n in names
    ]
    with WorkerPool(2, options) as pool:
        results = {r.task.id: r for r in pool.run(tasks)}
        after = pool.request(Call("hostile_pkg:greet", ["ada"]))
        started = pool.started
    return results, after, started


def returned(result: TaskResult) -> str | None:
    """What the called function returned (its repr), or None when the call failed."""
    return result.reply.result if isinstance(result.reply, CallDone) else None


STOPPED = ("did not answer the interrupt", "scenario timeout")
"""A call that ignores the per-call interrupt is stopped by the CPU-time stop or, when the busy
machine gives its worker too little CPU for that within the scenario timeout, by the scanner:
either way it timed out and its worker was replaced."""


def test_every_hostile_call_ends_with_its_reason(hostile_results, hostile_home):
    results, _, _ = hostile_results
    expected = {
        "delete_canary": (
            Coverage.BLOCKED,
            f"tried to delete {hostile_home / 'CANARY'} outside the sandbox",
        ),
        "write_outside": (Coverage.BLOCKED, "tried to write"),
        "open_socket": (Coverage.BLOCKED, "tried to connect to 192.0.2.1:9"),
        "spawn_process": (Coverage.BLOCKED, "tried to spawn a process: echo escaped"),
        "segfault": (Coverage.CRASHED, "SIGSEGV"),
        "loop_forever": (Coverage.TIMED_OUT, "per-call timeout"),
        "loop_ignoring_alarms": (Coverage.TIMED_OUT, STOPPED),
        "spin_in_c": (Coverage.TIMED_OUT, STOPPED),
        # only the scanner can stop it
        "loop_blocking_signals": (Coverage.TIMED_OUT, "5 s scenario timeout"),
        "allocate_forever": (Coverage.MEMORY, "512 MiB"),
    }
    for name, (kind, reasons) in expected.items():
        failure = results[name].failure
        assert failure is not None and failure.kind == kind, (name, results[name])
        reasons = (reasons,) if isinstance(reasons, str) else reasons
        assert any(reason in failure.reason for reason in reasons), (name, failure.reason)
    assert returned(results["add"]) == "5"


def test_the_canary_survives_and_nothing_is_written_outside(hostile_results, hostile_home):
    assert (hostile_home / "CANARY").read_text() == "alive"
    assert sorted(p.name for p in hostile_home.iterdir()) == ["CANARY", "hostile_pkg"]


def test_dead_and_killed_workers_are_replaced_and_the_pool_goes_on(hostile_results):
    _, after, started = hostile_results
    assert returned(after) == "'hello ada'"
    # beyond the 2 initial workers, replacements for the segfault, timeouts and memory blow-up
    # (started lazily, so how many depends on completion order)
    assert started >= 4


def test_workers_run_in_a_fresh_sandbox_with_an_allow_listed_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("APIPROF_TEST_SECRET", "s3cret")
    with WorkerPool(1) as pool:
        ping = pool.request(Ping())
        secret = pool.request(Call("os:getenv", ["APIPROF_TEST_SECRET"]))
        home = pool.request(Call("os:getenv", ["HOME"]))
        forged = '{"type": "CallDone", "id": "single", "body": {"result": "forged"}}'
        printed = pool.request(Call("builtins:print", [forged]))
    sandbox = ping.reply.cwd  # type: ignore[union-attr]
    assert Path(sandbox).name.startswith("apiprof-sandbox-")
    assert not Path(sandbox).exists(), "the sandbox directory is removed with its worker"
    assert returned(secret) == "None"
    assert returned(home) == repr(str(Path(sandbox) / "home"))
    assert returned(printed) == "None", "what a package prints cannot pose as a result"


def test_jobs_run_tasks_on_separate_workers_and_keep_every_result():
    tasks = [Task(str(i), Call("time:sleep", [0.2])) for i in range(4)]
    with WorkerPool(2) as pool:
        results = list(pool.run(tasks))
        assert pool.started == 2
    assert sorted(r.task.id for r in results) == ["0", "1", "2", "3"]
    assert all(returned(r) == "None" for r in results)


def test_describe_death_names_signals_and_memory():
    assert describe_death(-11, "", 100).kind == Coverage.CRASHED
    assert "SIGSEGV" in describe_death(-11, "", 100).reason
    assert describe_death(1, "Traceback...\nMemoryError\n", 100) == Failure(
        Coverage.MEMORY, "ran out of memory (worker cap 100 MiB)"
    )
    assert describe_death(-9, "", 100).kind == Coverage.MEMORY
    assert describe_death(3, "boom\n", 100) == Failure(
        Coverage.CRASHED, "the worker exited with code 3: boom"
    )
