"""The worker pool: isolation, crash/hang/memory handling, kill and replace, parallel jobs,
a fresh worker per task, and a parent that trusts nothing its workers send."""

from __future__ import annotations

import os
import shutil
import tracemalloc
from pathlib import Path

import pytest

from apiprof.engine.isolation.confine import Level
from apiprof.engine.isolation.pool import (
    Task,
    TaskResult,
    WorkerOptions,
    WorkerPool,
    describe_death,
)
from apiprof.engine.isolation.protocol import MAX_TASK_BYTES, Call, CallDone, Ping
from apiprof.model.records import Coverage, Failure

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def hostile_home(tmp_path_factory):
    """hostile_pkg copied to a temporary directory, with the canary file beside it."""
    home = tmp_path_factory.mktemp("hostile")
    home.chmod(0o755)  # readable by the sandbox's uid when tests run as root
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
    # allocating runs into the memory cap, not into a timer racing it on a busy machine
    limits = {"allocate_forever": 60.0}
    tasks = [
        Task(
            n,
            Call(f"hostile_pkg:{n}", [2, 3] if n == "add" else [], call_timeout=limits.get(n, 1.0)),
            timeout=limits.get(n),
        )
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
    assert any(folder.name.startswith("pool-") for folder in Path(sandbox).parents)
    assert not Path(sandbox).exists(), "the sandbox directory is removed with its worker"
    assert returned(secret) == "None"
    assert returned(home) != repr(str(Path(sandbox) / "home")), "each task has a fresh worker"
    assert returned(home).startswith(repr(str(Path(sandbox).parent))[:-1])
    assert returned(printed) == "None", "what a package prints cannot pose as a result"


def test_every_task_gets_a_fresh_worker_unless_reuse_is_asked_for():
    tasks = [Task(str(i), Call("os:getpid")) for i in range(4)]
    with WorkerPool(2) as pool:
        results = list(pool.run(tasks))
        assert pool.started == 4
    assert sorted(r.task.id for r in results) == ["0", "1", "2", "3"]
    with WorkerPool(2, WorkerOptions(max_tasks=10)) as pool:
        reused = [returned(r) for r in pool.run(tasks)]
        assert pool.started == 2
    assert len(set(reused)) <= 2


def test_jobs_run_tasks_on_separate_workers_and_keep_every_result():
    tasks = [Task(str(i), Call("time:sleep", [0.2])) for i in range(4)]
    with WorkerPool(2) as pool:
        results = list(pool.run(tasks))
    assert sorted(r.task.id for r in results) == ["0", "1", "2", "3"]
    assert all(returned(r) == "None" for r in results)


@pytest.fixture(scope="module")
def hostile_pool_results(hostile_home):
    """The pipe and signal attacks of hostile_pkg.escapes, called through the pool."""
    options = WorkerOptions(scenario_timeout=120, env={"PYTHONPATH": str(hostile_home)})
    names = ["kill_the_scanner", "nested_json_to_pipe", "flood_partials", "read_scanner_environ"]
    tasks = [Task(name, Call(f"hostile_pkg.escapes:{name}")) for name in names]
    tracemalloc.start()
    try:
        with WorkerPool(1, options) as pool:
            results = {r.task.id: r for r in pool.run(tasks)}
            level = pool.confinement.level if pool.confinement else None
            after = pool.request(Call("hostile_pkg:greet", ["ada"]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return results, after, peak, level


def test_a_worker_cannot_signal_the_scanner(hostile_pool_results):
    results, after, _, _ = hostile_pool_results
    failure = results["kill_the_scanner"].failure
    assert failure is not None and failure.kind == Coverage.BLOCKED
    reasons = [a.reason for a in results["kill_the_scanner"].attempts]
    assert any("SIGKILL to process" in r or "pidfd_open" in r for r in reasons), reasons
    assert returned(after) == "'hello ada'", "the scanner lives on"


def test_a_worker_that_sends_too_much_is_stopped_with_memory_bounded(hostile_pool_results):
    results, _, peak, _ = hostile_pool_results
    failure = results["flood_partials"].failure
    assert failure is not None and failure.kind == Coverage.BLOCKED
    assert "sent more than 48 MiB for one task" in failure.reason
    assert peak < 3 * MAX_TASK_BYTES, f"the scanner held {peak / 2**20:.0f} MiB for 200 MB sent"


def test_an_invalid_message_ends_the_worker_not_the_scan(hostile_pool_results):
    results, _, _, _ = hostile_pool_results
    failure = results["nested_json_to_pipe"].failure
    assert failure is not None and failure.kind == Coverage.BLOCKED
    assert "nests deeper than JSON decoding allows" in failure.reason
    assert "nothing it sent for this task was kept" in failure.reason


def test_the_scanners_environment_is_out_of_reach(hostile_pool_results, monkeypatch):
    results, _, _, level = hostile_pool_results
    reasons = [a.reason for a in results["read_scanner_environ"].attempts]
    assert any("tried to read the environment of process" in r for r in reasons), reasons
    if level is Level.STRICT:  # its own PID namespace: the parent it sees is bubblewrap's reaper
        assert "process 1" in " ".join(reasons)


def test_a_pool_stops_its_workers_and_their_children(hostile_home):
    options = WorkerOptions(env={"PYTHONPATH": str(hostile_home)})
    with WorkerPool(1, options) as pool:
        pool.settle()
        worker = pool.idle[0]
        pid = worker.pid
        assert os.path.exists(f"/proc/{pid}")
    with pytest.raises(ProcessLookupError):  # gone, and reaped (by its namespace's reaper or us)
        os.kill(pid, 0)


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
