"""The parent side of isolation: a pool of sandboxed worker processes, timeouts, kill and replace.

Each worker is ``python -m apiprof.engine.isolation.worker`` (see :mod:`apiprof.engine.isolation.worker`) started
with a fresh temporary directory as its cwd, HOME and TMPDIR, an allow-listed environment, its
own session (so a terminal's Ctrl-C reaches only the scanner, which then cleans up), and two
private pipes. :meth:`WorkerPool.run` hands tasks to up to ``jobs`` workers and yields results
as they arrive; a worker that dies, exceeds the scenario timeout or runs out of memory is killed
and replaced, and its task comes back with the reason — the run goes on.

Parallel workers compete for CPU caches, memory bandwidth and (on busy machines) cores, so with
``jobs > 1`` wall time is unreliable; thread CPU ("active") time is the metric to trust.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from apiprof.engine.isolation.protocol import (
    PARTIAL,
    REPLIES,
    Failed,
    LineReader,
    ProtocolError,
    Ready,
    Reply,
    Request,
    ScenarioOutcome,
    write_message,
)
from apiprof.errors import MeasurementError
from apiprof.model.records import Coverage, Failure

ENV_ALLOWLIST = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "VIRTUAL_ENV",
)
STARTUP_TIMEOUT = 60.0
_CRASH_SIGNALS = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "arithmetic fault",
    signal.SIGABRT: "abort",
}


@dataclass(frozen=True)
class WorkerOptions:
    """How workers are started and policed."""

    memory_mb: int = 2048  # address-space cap per worker
    call_timeout: float = 10.0  # one call of a scenario (interrupts Python code inside the worker)
    # one task (an entry point's scenarios); the worker is killed after it
    scenario_timeout: float = 120.0
    guard: bool = True  # install the audit-hook guard (resource limits apply regardless)
    # replace a worker after this many tasks (bounds leaks and CPU-limit drift)
    max_tasks: int = 200
    cpu_seconds: int = 3600  # lifetime CPU backstop per worker (RLIMIT_CPU)
    env: Mapping[str, str] = field(default_factory=dict)  # extra environment for workers


@dataclass(frozen=True)
class Task:
    """One request for a worker; ``timeout`` overrides the scenario timeout."""

    id: str
    request: Request
    timeout: float | None = None


@dataclass(frozen=True)
class TaskResult:
    """What became of a task: the worker's final reply, or why there is none (``lost``: the
    worker died, was killed at the timeout, or sent something invalid), and the partial replies
    that arrived before (kept when the worker dies later)."""

    task: Task
    reply: Reply | None = None
    lost: Failure | None = None
    partials: list[ScenarioOutcome] = field(default_factory=list)

    @property
    def failure(self) -> Failure | None:
        """Why the task as a whole failed, or None when it completed."""
        if isinstance(self.reply, Failed):
            return self.reply.failure
        return self.lost


def worker_environment(sandbox_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed environment a worker gets: no secrets, home and temp inside the sandbox."""
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST or k.startswith("LC_")}
    for sub in ("home", "tmp", "cache", "config", "data"):
        (sandbox_dir / sub).mkdir(exist_ok=True)
    env.update(
        HOME=str(sandbox_dir / "home"),
        TMPDIR=str(sandbox_dir / "tmp"),
        TEMP=str(sandbox_dir / "tmp"),
        TMP=str(sandbox_dir / "tmp"),
        XDG_CACHE_HOME=str(sandbox_dir / "cache"),
        XDG_CONFIG_HOME=str(sandbox_dir / "config"),
        XDG_DATA_HOME=str(sandbox_dir / "data"),
        PYTHONUSERBASE=site.getuserbase(),  # keep user-installed packages importable despite HOME
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONFAULTHANDLER="1",  # a segfault leaves a traceback in the stderr tail
        PYTHONUNBUFFERED="1",
        MPLBACKEND="Agg",
    )
    env.update(extra or {})
    return env


def describe_death(returncode: int, stderr_tail: str, memory_mb: int) -> Failure:
    """Why a worker that exited while running a task did so."""
    return Failure(*_death(returncode, stderr_tail, memory_mb))


def _death(returncode: int, stderr_tail: str, memory_mb: int) -> tuple[Coverage, str]:
    if returncode < 0:
        sig = -returncode
        if sig in _CRASH_SIGNALS:
            name = signal.Signals(sig)
            return Coverage.CRASHED, f"the worker crashed: {name.name} ({_CRASH_SIGNALS[name]})"
        if sig == signal.SIGXCPU:
            return Coverage.TIMED_OUT, "the worker used up its CPU-time limit"
        # the worker's own stop for a call stuck in C code (worker.run_with_call_timeout)
        if sig == signal.SIGPROF:
            return Coverage.TIMED_OUT, (
                "a single call ran past the per-call timeout and did not answer the interrupt "
                "(C code, or code that blocked it); its worker was stopped"
            )
        if sig == signal.SIGKILL:
            return (
                Coverage.MEMORY,
                "the worker was killed by SIGKILL (most likely the out-of-memory killer)",
            )
        return Coverage.CRASHED, f"the worker was killed by {signal.Signals(sig).name}"
    if "MemoryError" in stderr_tail:
        return Coverage.MEMORY, f"ran out of memory (worker cap {memory_mb} MiB)"
    last = next((line.strip() for line in reversed(stderr_tail.splitlines()) if line.strip()), "")
    return Coverage.CRASHED, f"the worker exited with code {returncode}" + (
        f": {last[:200]}" if last else ""
    )


class WorkerProcess:
    """One sandboxed child process and its pipes."""

    def __init__(self, options: WorkerOptions) -> None:
        self.options = options
        self.sandbox = Path(tempfile.mkdtemp(prefix="apiprof-sandbox-"))
        self.reader = LineReader(REPLIES)
        self.tasks_done = 0
        self.partials: list[ScenarioOutcome] = []
        self._stderr = open(self.sandbox / "worker.stderr", "w+b")  # noqa: SIM115 - closed in cleanup
        request_r, self.request_w = os.pipe()
        self.result_r, result_w = os.pipe()
        command = [
            sys.executable,
            "-m",
            "apiprof.engine.isolation.worker",
            "--request-fd",
            str(request_r),
            "--result-fd",
            str(result_w),
            "--sandbox",
            str(self.sandbox),
            "--memory-mb",
            str(options.memory_mb),
            "--cpu-seconds",
            str(options.cpu_seconds),
        ]
        if not options.guard:
            command.append("--no-guard")
        try:
            self.proc = subprocess.Popen(
                command,
                cwd=self.sandbox,
                env=worker_environment(self.sandbox, options.env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                pass_fds=(request_r, result_w),
                start_new_session=True,
            )
        finally:
            os.close(request_r)
            os.close(result_w)
        self._await_ready()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _await_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        with selectors.DefaultSelector() as sel:
            sel.register(self.result_r, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    continue
                data = os.read(self.result_r, 1 << 16)
                if not data:
                    break
                try:
                    messages = self.reader.feed(data)
                except ProtocolError:
                    break
                if any(isinstance(m.message, Ready) for m in messages):
                    return
        tail = self.stderr_tail()
        self.kill()
        raise MeasurementError(
            f"a scan worker failed to start ({sys.executable} -m apiprof.engine.isolation.worker): "
            f"{tail.strip().splitlines()[-1] if tail.strip() else 'no output'}; check that apiprof is installed "
            "in this interpreter's environment"
        )

    def send(self, task: Task) -> None:
        self.partials = []
        write_message(self.request_w, task.id, task.request)

    def stderr_tail(self, limit: int = 4000) -> str:
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def kill(self) -> None:
        """Kill the worker and anything it started, and delete its sandbox."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        self.proc.wait()
        self._cleanup()

    def close(self, grace: float = 5.0) -> None:
        """Ask the worker to exit (EOF on its request pipe); kill it if it does not."""
        try:
            os.close(self.request_w)
            self.request_w = -1
            self.proc.wait(timeout=grace)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def _cleanup(self) -> None:
        for fd in (self.request_w, self.result_r):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.request_w = self.result_r = -1
        self._stderr.close()
        shutil.rmtree(self.sandbox, ignore_errors=True)


class WorkerPool:
    """Up to ``jobs`` workers; a context manager that kills every worker on exit."""

    def __init__(self, jobs: int = 1, options: WorkerOptions | None = None) -> None:
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.jobs = jobs
        self.options = options or WorkerOptions()
        self.idle: list[WorkerProcess] = []
        self.busy: set[WorkerProcess] = set()
        self.started = 0  # workers started so far, replacements included

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill busy workers (their tasks are abandoned) and shut idle ones down."""
        while self.busy:
            self.busy.pop().kill()
        while self.idle:
            self.idle.pop().close()

    def _take_worker(self) -> WorkerProcess:
        if self.idle:
            worker = self.idle.pop()
        else:
            worker = WorkerProcess(self.options)
            self.started += 1
        self.busy.add(worker)
        return worker

    def _discard(self, worker: WorkerProcess) -> None:
        self.busy.discard(worker)
        worker.kill()

    def _release(self, worker: WorkerProcess, result: TaskResult) -> None:
        self.busy.discard(worker)
        worker.tasks_done += 1
        failure = result.failure
        limited = failure is not None and failure.kind in (Coverage.MEMORY, Coverage.TIMED_OUT)
        if limited or worker.tasks_done >= self.options.max_tasks:
            worker.close()  # a worker that hit a limit may be in a bad state: start afresh
        else:
            self.idle.append(worker)

    def request(self, request: Request, timeout: float | None = None) -> TaskResult:
        """Run one request on one worker and wait for its result."""
        results = self.run([Task("single", request, timeout)])
        try:
            return next(results)
        finally:
            results.close()

    def run(self, tasks: Iterable[Task]) -> Generator[TaskResult, None, None]:
        """Run tasks on up to ``jobs`` workers, yielding each result as it arrives (any order)."""
        pending = deque(tasks)
        busy: dict[
            int, tuple[WorkerProcess, Task, float]
        ] = {}  # result fd -> (worker, task, deadline)
        sel = selectors.DefaultSelector()
        try:
            while pending or busy:
                while pending and len(busy) < self.jobs:
                    task = pending.popleft()
                    worker = self._take_worker()
                    worker.send(task)
                    deadline = time.monotonic() + (task.timeout or self.options.scenario_timeout)
                    busy[worker.result_r] = (worker, task, deadline)
                    sel.register(worker.result_r, selectors.EVENT_READ)
                wait = max(
                    0.0, min(deadline for _, _, deadline in busy.values()) - time.monotonic()
                )
                for key, _ in sel.select(timeout=wait):
                    worker, task, _ = busy[key.fd]
                    result = self._read(worker, task)
                    if result is not None:
                        sel.unregister(key.fd)
                        del busy[key.fd]
                        yield result
                now = time.monotonic()
                for fd, (worker, task, deadline) in list(busy.items()):
                    if now >= deadline:
                        sel.unregister(fd)
                        del busy[fd]
                        self._discard(worker)
                        limit = task.timeout or self.options.scenario_timeout
                        why = Failure(
                            Coverage.TIMED_OUT, f"ran past the {limit:g} s scenario timeout"
                        )
                        yield TaskResult(task, lost=why, partials=worker.partials)
        finally:
            sel.close()
            for worker, _, _ in busy.values():
                self._discard(worker)

    def _read(self, worker: WorkerProcess, task: Task) -> TaskResult | None:
        """Consume what a busy worker wrote; a result when its task is finished, else None.
        A worker that sends anything invalid is ended: its task fails with the reason."""
        try:
            data = os.read(worker.result_r, 1 << 16)
            envelopes = worker.reader.feed(data) if data else []
        except (OSError, ProtocolError) as exc:
            self._discard(worker)
            why = Failure(
                Coverage.CRASHED, f"the worker sent an invalid reply and was stopped: {exc}"
            )
            return TaskResult(task, lost=why, partials=worker.partials)
        if not data:
            worker.proc.wait()
            why = describe_death(
                worker.proc.returncode, worker.stderr_tail(), self.options.memory_mb
            )
            self._discard(worker)
            return TaskResult(task, lost=why, partials=worker.partials)
        for envelope in envelopes:
            if envelope.id != task.id:
                continue
            if isinstance(envelope.message, PARTIAL):
                worker.partials.append(envelope.message)
                continue
            result = TaskResult(task, envelope.message, partials=worker.partials)
            self._release(worker, result)
            return result
        return None
