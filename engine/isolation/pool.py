"""The parent side of isolation: a pool of confined worker processes that it trusts in nothing.

Each worker is ``python -m apiprof.engine.isolation.worker`` (see
:mod:`~apiprof.engine.isolation.worker`), confined as :mod:`~apiprof.engine.isolation.confine`
describes (bubblewrap at the strict level), with a fresh sandbox directory as its cwd, HOME and
TMPDIR, an allow-listed environment, its own session, and two private pipes.
:meth:`WorkerPool.run` hands tasks to up to ``jobs`` workers and yields results as they arrive.

By default every task gets a fresh worker, stopped (``SIGKILL``, no exit code of the package's
runs) as soon as its final reply is in: one entry point's code never shares a process with
another's, so it cannot touch another's measurements. ``max_tasks`` > 1 reuses workers (faster,
for trusted code and the benchmark's comparison).

The pool trusts nothing a worker sends. Each message must decode (:mod:`~apiprof.engine.
isolation.protocol`: size, depth, types) and fit the task (:mod:`~apiprof.engine.isolation.
contract`: measurements only of what the task measures, in physical sense); each task may send
at most :data:`~apiprof.engine.isolation.protocol.MAX_TASK_BYTES`. A worker that breaks a rule is
stopped and its task comes back with the reason and nothing it sent. The pool also supervises
each worker's system-call filter (:mod:`~apiprof.engine.isolation.supervisor`) and returns, with
every task, what the worker tried that the sandbox forbids — from the in-process reporter and
from the filter — blamed on the entry point, an import, or a background thread.

Parallel workers compete for CPU caches, memory bandwidth and (on busy machines) cores, so with
``jobs > 1`` wall time is unreliable; thread CPU ("active") time is the metric to trust.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import shutil
import signal
import site
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from apiprof.engine.isolation import confine, contract
from apiprof.engine.isolation.confine import Confinement, Isolation, Level, SandboxRoot
from apiprof.engine.isolation.protocol import (
    REPLIES,
    Attempt,
    Attempted,
    Blame,
    Discover,
    Failed,
    Imported,
    LineReader,
    ProfileEntry,
    ProtocolError,
    Ready,
    Reply,
    Request,
    ScenarioOutcome,
    write_message,
)
from apiprof.engine.isolation.seccomp import take_listener
from apiprof.engine.isolation.supervisor import Refusal, Supervisor, WorkerView
from apiprof.errors import IsolationUnavailable, MeasurementError
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
STOP_TIMEOUT = 10.0  # how long a killed worker may take to disappear
DRAIN_LIMIT = 1000  # notifications answered after a final reply, before the worker is stopped
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
    guard: bool = True  # install the in-process reporter (the OS sandbox applies regardless)
    max_tasks: int = 1  # tasks per worker: 1 = a fresh worker for every task
    cpu_seconds: int = 3600  # lifetime CPU backstop per worker (RLIMIT_CPU)
    env: Mapping[str, str] = field(default_factory=dict)  # extra environment for workers
    isolation: Isolation = Isolation.AUTO
    readable: tuple[str, ...] = ()  # more paths workers must read (the package, scenario files)

    def readable_paths(self) -> list[str]:
        """Everything a confined worker must be able to read (bound read-only)."""
        extra = self.env.get("PYTHONPATH", "").split(os.pathsep)
        return confine.python_paths([*self.readable, *extra])


@dataclass(frozen=True)
class Task:
    """One request for a worker; ``timeout`` overrides the scenario timeout."""

    id: str
    request: Request
    timeout: float | None = None


@dataclass(frozen=True)
class TaskResult:
    """What became of a task: the worker's final reply, or why there is none (``lost``: the
    worker died, was killed at the timeout, or broke the protocol), the partial replies that
    arrived before (kept when the worker dies later; dropped when it broke a rule), and what
    the worker tried that the sandbox forbids."""

    task: Task
    reply: Reply | None = None
    lost: Failure | None = None
    partials: list[ScenarioOutcome] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def failure(self) -> Failure | None:
        """Why the task as a whole failed, or None when it completed."""
        if isinstance(self.reply, Failed):
            return self.reply.failure
        return self.lost


class WorkerStartError(MeasurementError):
    """A worker did not start; ``detail`` is the last thing it said."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def worker_environment(sandbox_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed environment a worker gets: no secrets, home and temp inside the sandbox."""
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST or k.startswith("LC_")}
    for sub in ("home", "tmp", "cache", "config", "data"):
        (sandbox_dir / sub).mkdir(exist_ok=True)
        if os.geteuid() == 0:
            os.chown(sandbox_dir / sub, confine.SANDBOX_UID, confine.SANDBOX_UID)
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
    """One confined child process, its pipes, and the supervisor of its system-call filter."""

    def __init__(self, options: WorkerOptions, confinement: Confinement, root: SandboxRoot) -> None:
        self.options = options
        self.confinement = confinement
        self.sandbox = root.new_sandbox()
        self.reader = LineReader(REPLIES)
        self.tasks_done = 0
        self.partials: list[ScenarioOutcome] = []
        self.attempts: list[Attempt] = []
        self.importing = ""  # the module the current task is importing ("" once it is done)
        self.supervisor: Supervisor | None = None
        self.host_pid = 0
        self._pidfd = -1
        self._stderr_path = root.path / f"{self.sandbox.name}.stderr"  # out of the worker's reach
        self._stderr = open(self._stderr_path, "w+b")  # noqa: SIM115 - closed in cleanup
        request_r, self.request_w = os.pipe()
        self.result_r, result_w = os.pipe()
        strict = confinement.level is Level.STRICT
        command = self._python_command(request_r, result_w, strict)
        if strict:
            command = confine.bwrap_command(self.sandbox, options.readable_paths(), command)
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
                umask=0o022,
            )
        except OSError as error:
            self._cleanup()
            raise WorkerStartError(
                f"a scan worker could not be started: {error}", str(error)
            ) from None
        finally:
            os.close(request_r)
            os.close(result_w)
        try:
            self._start_supervised(self._await_ready(), strict)
        except BaseException:
            self.kill()
            raise
        os.set_blocking(self.result_r, False)  # one select round may report it twice

    def _python_command(self, request_r: int, result_w: int, strict: bool) -> list[str]:
        options, confinement = self.options, self.confinement
        command = [sys.executable, "-m", "apiprof.engine.isolation.worker"]
        command += ["--request-fd", str(request_r), "--result-fd", str(result_w)]
        command += ["--sandbox", str(self.sandbox), "--memory-mb", str(options.memory_mb)]
        command += ["--cpu-seconds", str(options.cpu_seconds)]
        command += ["--filter", str(confinement.filter or "none")]
        if not options.guard:
            command.append("--no-guard")
        if strict:
            command.append("--report-only")  # the OS refuses; the reporter names
            if os.geteuid() == 0:
                command.append("--user-namespace")
        else:
            command += ["--parent", str(os.getpid())]
        return command

    def _await_ready(self) -> Ready:
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
                if messages and isinstance(messages[0].message, Ready):
                    return messages[0].message
                break
        tail = self.stderr_tail().strip()
        last = tail.splitlines()[-1] if tail else "no output"
        raise WorkerStartError(
            f"a scan worker failed to start ({sys.executable} -m apiprof.engine.isolation.worker, "
            f"isolation {self.confinement.level}): {last}; check that apiprof is installed in this "
            "interpreter's environment",
            last,
        )

    def _start_supervised(self, ready: Ready, strict: bool) -> None:
        """Find the worker's pid here, check its confinement, take its filter's listener."""
        self.host_pid = self.proc.pid if not strict else _descendant(self.proc.pid, ready.pid)
        if self.host_pid <= 0:
            raise WorkerStartError("a confined worker could not be found", "worker not found")
        self._pidfd = os.pidfd_open(self.host_pid)
        problem = confinement_problem(self.host_pid, self.confinement)
        if problem:
            raise WorkerStartError(f"a scan worker is not confined as expected: {problem}", problem)
        if ready.listener >= 0:
            try:
                listener = take_listener(self.host_pid, ready.listener)
            except OSError as error:
                raise WorkerStartError(
                    f"the scanner cannot supervise its worker's system-call filter ({error})",
                    f"pidfd_getfd: {error}",
                ) from None
            view = WorkerView(self.host_pid, str(self.sandbox.resolve()), strict)
            self.supervisor = Supervisor(listener, view, self.confinement.arch)

    @property
    def pid(self) -> int:
        return self.host_pid

    def send(self, task: Task) -> None:
        self.partials = []
        self.attempts = []
        self.reader.start_task()
        request = task.request
        self.importing = (
            request.entry.module
            if isinstance(request, ProfileEntry)
            else request.package
            if isinstance(request, Discover)
            else ""
        )
        write_message(self.request_w, task.id, request)

    def note(self, refusal: Refusal) -> None:
        """A refusal of the supervisor, blamed as the worker's state says — unless the
        in-process reporter already named the same attempt: it knows whose thread it was (it
        speaks first, and its words are read before the refusal is handled)."""
        if any(attempt.reason == refusal.reason for attempt in self.attempts):
            return
        module = self.importing
        if refusal.thread != self.host_pid:
            blame = Blame.THREAD
        else:
            blame = Blame.IMPORT if module else Blame.ENTRY
        self.attempts.append(Attempt(refusal.reason, blame, module))

    def stderr_tail(self, limit: int = 4000) -> str:
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def exit_status(self) -> int:
        """The worker's own exit status (bubblewrap passes a signal death on as 128 + signal)."""
        code = self.proc.wait()
        if self.confinement.level is Level.STRICT and code > 128:
            return -(code - 128)
        return code

    def kill(self) -> None:
        """Kill the worker and everything it started, wait until they are gone, clean up."""
        self.stop()
        self._cleanup()

    def stop(self) -> None:
        """Kill the worker and everything it started; wait until they are gone."""
        if self._pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        self.proc.wait()
        if self._pidfd >= 0:  # a pidfd turns readable when its process is gone
            select.select([self._pidfd], [], [], STOP_TIMEOUT)

    def _cleanup(self) -> None:
        for fd in (getattr(self, "request_w", -1), getattr(self, "result_r", -1), self._pidfd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.request_w = self.result_r = self._pidfd = -1
        if self.supervisor is not None:
            self.supervisor.close()
        self._stderr.close()
        with contextlib.suppress(OSError):
            self._stderr_path.unlink()
        shutil.rmtree(self.sandbox, ignore_errors=True)


def _descendant(root_pid: int, ns_pid: int, depth: int = 3) -> int:
    """The process under ``root_pid`` (bubblewrap) that calls itself ``ns_pid`` in its own PID
    namespace (the worker), or 0."""
    pending = [root_pid]
    for _ in range(depth):
        children = []
        for pid in pending:
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as listing:
                children += [int(child) for child in listing.read().split()]
        for child in children:
            if _namespace_pid(child) == ns_pid and child != ns_pid:
                return child
        pending = children
    return 0


def _namespace_pid(pid: int) -> int:
    with (
        contextlib.suppress(OSError, ValueError, IndexError),
        open(f"/proc/{pid}/status") as status,
    ):
        for line in status:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return 0


def confinement_problem(pid: int, confinement: Confinement) -> str:
    """What the kernel says is missing from a worker's confinement ("" when nothing is)."""
    try:
        with open(f"/proc/{pid}/status") as stream:
            status = dict(line.rstrip("\n").split(":\t", 1) for line in stream if ":\t" in line)
    except OSError as error:
        return f"its status cannot be read ({error})"
    problems = []
    if confinement.filter is not None and status.get("Seccomp", "0").strip() != "2":
        problems.append("no system-call filter")
    if confinement.filter is not None and status.get("NoNewPrivs", "0").strip() != "1":
        problems.append("no no_new_privs")
    if confinement.level is Level.STRICT:
        if int(status.get("CapEff", "0").strip() or "0", 16):
            problems.append("capabilities left")
        if status.get("Uid", "0").split()[0] == "0":
            problems.append("it runs as root")
        for ns in ("user", "mnt", "pid", "net", "ipc"):
            try:
                if os.readlink(f"/proc/{pid}/ns/{ns}") == os.readlink(f"/proc/self/ns/{ns}"):
                    problems.append(f"it shares the scanner's {ns} namespace")
            except OSError as error:
                problems.append(f"its {ns} namespace cannot be read ({error})")
    return ", ".join(problems)


# -- settling the isolation level once per process --------------------------------------------------

_STRICT_PROBE: list[str] = []
"""Why a strictly confined worker failed to start in this process ("" once one started)."""


def settle_confinement(
    requested: Isolation, readable: list[str], start: Callable[[Confinement], WorkerProcess]
) -> tuple[Confinement, WorkerProcess]:
    """The confinement workers get for ``requested`` (strict where it works; with ``auto``,
    the process level otherwise, saying why), and a first worker started with it. Whether a
    strictly confined worker can start at all is learnt once per process."""
    missing = "--isolation process was asked for" if requested is Isolation.PROCESS else ""
    if not missing:
        missing = confine.strict_unavailable(readable)
    if not missing and _STRICT_PROBE and _STRICT_PROBE[0]:
        missing = _STRICT_PROBE[0]
    if not missing:
        try:
            worker = start(confine.STRICT)
            _STRICT_PROBE[:] = [""]
            return confine.STRICT, worker
        except WorkerStartError as error:
            missing = f"a strictly confined worker did not start ({error.detail})"
            _STRICT_PROBE[:] = [missing]
    if requested is Isolation.STRICT:
        raise IsolationUnavailable(
            f"--isolation strict cannot be met here: {missing}. Scan on a Linux system with "
            "user namespaces and bubblewrap, or pass --isolation process to accept weaker "
            "containment (see the threat model in docs/cli.md)"
        )
    confinement = confine.process_confinement(missing)
    return confinement, start(confinement)


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
        self.confinement: Confinement | None = None
        self.root: SandboxRoot | None = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill every worker (busy ones' tasks are abandoned) and remove their sandboxes."""
        while self.busy:
            self.busy.pop().kill()
        while self.idle:
            self.idle.pop().kill()
        if self.root is not None:
            self.root.remove()

    def settle(self) -> Confinement:
        """Decide the isolation level now (it starts a first worker, kept for the first task)."""
        if self.confinement is None:
            self.idle.append(self._start())
        assert self.confinement is not None
        return self.confinement

    def _start(self) -> WorkerProcess:
        if self.root is None:
            self.root = SandboxRoot()
        root = self.root

        def start(confinement: Confinement) -> WorkerProcess:
            return WorkerProcess(self.options, confinement, root)

        if self.confinement is None:
            self.confinement, worker = settle_confinement(
                self.options.isolation, self.options.readable_paths(), start
            )
        else:
            worker = start(self.confinement)
        self.started += 1
        return worker

    def _take_worker(self) -> WorkerProcess:
        worker = self.idle.pop() if self.idle else self._start()
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
            worker.kill()  # a fresh worker per task; one that hit a limit may be in a bad state
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
        busy: dict[WorkerProcess, tuple[Task, float]] = {}  # worker -> (task, deadline)
        watched: dict[WorkerProcess, list[int]] = {}  # its descriptors, as registered
        sel = selectors.DefaultSelector()
        try:
            while pending or busy:
                while pending and len(busy) < self.jobs:
                    task = pending.popleft()
                    worker = self._take_worker()
                    worker.send(task)
                    deadline = time.monotonic() + (task.timeout or self.options.scenario_timeout)
                    busy[worker] = (task, deadline)
                    watched[worker] = [worker.result_r]
                    if worker.supervisor is not None:
                        watched[worker].append(worker.supervisor.fileno())
                    for fd in watched[worker]:
                        sel.register(fd, selectors.EVENT_READ, worker)
                wait = max(0.0, min(deadline for _, deadline in busy.values()) - time.monotonic())
                for key, _ in sel.select(timeout=wait):
                    worker = key.data
                    if worker not in busy:
                        continue  # finished by an earlier event of this round
                    task = busy[worker][0]
                    if key.fd == worker.result_r:
                        result = self._read(worker, task)
                    else:
                        result = self._supervise(worker, task)
                    if result is not None:
                        for fd in watched.pop(worker):
                            sel.unregister(fd)
                        del busy[worker]
                        yield result
                now = time.monotonic()
                for worker, (task, deadline) in list(busy.items()):
                    if now >= deadline:
                        for fd in watched.pop(worker):
                            sel.unregister(fd)
                        del busy[worker]
                        yield self._timed_out(worker, task)
        finally:
            sel.close()
            for worker in busy:
                self._discard(worker)

    def _timed_out(self, worker: WorkerProcess, task: Task) -> TaskResult:
        self._drain_notifications(worker)
        worker.stop()
        if problem := self._read_rest(worker, task):
            return self._broke_rules(worker, task, problem)
        self._discard(worker)
        limit = task.timeout or self.options.scenario_timeout
        why = Failure(Coverage.TIMED_OUT, f"ran past the {limit:g} s scenario timeout")
        return TaskResult(task, lost=why, partials=worker.partials, attempts=worker.attempts)

    def _supervise(self, worker: WorkerProcess, task: Task) -> TaskResult | None:
        """Answer one notification of the worker's filter. What the worker wrote before the
        call is read first, so the refusal is blamed on the phase it was in."""
        if select.select([worker.result_r], [], [], 0)[0]:
            result = self._read(worker, task)
            if result is not None:
                return result
        assert worker.supervisor is not None
        refusal = worker.supervisor.handle()
        if refusal is not None:
            worker.note(refusal)
        return None

    def _drain_notifications(self, worker: WorkerProcess) -> None:
        """Answer what the worker's threads are still waiting on, so nothing they tried goes
        unrecorded when the worker is stopped."""
        supervisor = worker.supervisor
        for _ in range(DRAIN_LIMIT):
            if supervisor is None or not select.select([supervisor], [], [], 0)[0]:
                return
            refusal = supervisor.handle()
            if refusal is not None:
                worker.note(refusal)

    def _broke_rules(self, worker: WorkerProcess, task: Task, why: str) -> TaskResult:
        self._drain_notifications(worker)
        self._discard(worker)
        failure = Failure(
            Coverage.BLOCKED,
            f"its worker {why}; the worker was stopped and nothing it sent for this task was kept",
        )
        return TaskResult(task, lost=failure, attempts=worker.attempts)

    def _read(self, worker: WorkerProcess, task: Task) -> TaskResult | None:
        """Consume what a busy worker wrote; a result when its task is finished, else None."""
        try:
            data = os.read(worker.result_r, 1 << 16)
        except BlockingIOError:  # already read, answering a notification of the same round
            return None
        except OSError as error:
            return self._broke_rules(worker, task, f"could not be read ({error})")
        if not data:
            self._drain_notifications(worker)
            why = describe_death(worker.exit_status(), worker.stderr_tail(), self.options.memory_mb)
            self._discard(worker)
            return TaskResult(task, lost=why, partials=worker.partials, attempts=worker.attempts)
        reply, problem = self._absorb(worker, task, data)
        if problem:
            return self._broke_rules(worker, task, problem)
        if reply is None:
            return None
        # the final reply: answer what threads still wait on, and stop a worker that is done
        self._drain_notifications(worker)
        if worker.tasks_done + 1 >= self.options.max_tasks:
            worker.stop()
            if problem := self._read_rest(worker, task):
                return self._broke_rules(worker, task, problem)
        result = TaskResult(task, reply, partials=worker.partials, attempts=worker.attempts)
        self._release(worker, result)
        return result

    def _absorb(self, worker: WorkerProcess, task: Task, data: bytes) -> tuple[Reply | None, str]:
        """Take in bytes from the worker: ``(final reply or None, why it broke a rule or "")``."""
        try:
            envelopes = worker.reader.feed(data)
        except ProtocolError as error:
            return None, f"sent an invalid message ({error})"
        for envelope in envelopes:
            if envelope.id != task.id:
                return None, "sent a message for another task"
            message = envelope.message
            if problem := contract.violation(task.request, message):
                return None, problem
            if isinstance(message, Attempted):
                worker.attempts.append(message.attempt)
            elif isinstance(message, Imported):
                worker.importing = ""
            elif isinstance(message, ScenarioOutcome):
                worker.partials.append(message)
            else:
                return message, ""
        return None, ""

    def _read_rest(self, worker: WorkerProcess, task: Task) -> str:
        """After a stop: what the worker wrote before it died (attempts of a background thread
        after the final reply, sizes measured before a timeout). A rule it broke, or ""."""
        while select.select([worker.result_r], [], [], STOP_TIMEOUT)[0]:
            try:
                data = os.read(worker.result_r, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                return ""
            if not data:
                return ""
            reply, problem = self._absorb(worker, task, data)
            if problem:
                return problem
            if reply is not None:
                return "sent more than one final reply"
        return ""
