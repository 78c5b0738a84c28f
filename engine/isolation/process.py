"""One confined worker process as the scanner sees it: its pipes, its stderr, its supervisor.

:class:`ConfinedWorker` holds what every worker has, however it was started: a private sandbox
directory, a request pipe and a result pipe, a stderr file out of its reach, the supervisor of
its system-call filter (taken with ``pidfd_getfd`` once it says :class:`Ready`), and the checks
that it is confined as promised. :class:`FreshWorker` starts a new interpreter for it
(``python -m apiprof.engine.isolation.worker``, under bubblewrap at the strict level); the
zygote's way is in :mod:`~apiprof.engine.isolation.spawn`.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import signal
import site
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from apiprof.engine.isolation import confine
from apiprof.engine.isolation.confine import Confinement, Level, SandboxRoot
from apiprof.engine.isolation.options import WorkerOptions
from apiprof.engine.isolation.protocol import (
    REPLIES,
    Attempt,
    Blame,
    Discover,
    LineReader,
    ProfileEntry,
    ProtocolError,
    Ready,
    Request,
    Running,
    ScenarioOutcome,
    write_message,
)
from apiprof.engine.isolation.seccomp import take_listener
from apiprof.engine.isolation.supervisor import Refusal, Supervisor, WorkerView
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.errors import MeasurementError

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
WORKER_MODULE = "apiprof.engine.isolation.worker"


class WorkerStartError(MeasurementError):
    """A worker did not start; ``detail`` is the last thing it said."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def worker_environment(sandbox_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed environment a worker gets: no secrets, home and temp inside the sandbox."""
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST or k.startswith("LC_")}
    prepare_sandbox(sandbox_dir)
    env.update(confine.sandbox_variables(sandbox_dir))
    env.update(
        PYTHONUSERBASE=site.getuserbase(),  # keep user-installed packages importable despite HOME
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONFAULTHANDLER="1",  # a segfault leaves a traceback in the stderr tail
        PYTHONUNBUFFERED="1",
        MPLBACKEND="Agg",
    )
    env.update(extra or {})
    return env


def prepare_sandbox(sandbox_dir: Path) -> None:
    """Make a sandbox's home, temp and cache folders, owned by the uid package code runs as."""
    for sub in confine.SANDBOX_FOLDERS:
        (sandbox_dir / sub).mkdir(exist_ok=True)
        if os.geteuid() == 0:
            os.chown(sandbox_dir / sub, confine.SANDBOX_UID, confine.SANDBOX_UID)


def worker_arguments(options: WorkerOptions, confinement: Confinement) -> list[str]:
    """The worker's command-line options that every worker of a pool shares."""
    command = ["--memory-mb", str(options.memory_mb), "--cpu-seconds", str(options.cpu_seconds)]
    command += ["--filter", str(confinement.filter or "none")]
    if not options.guard:
        command.append("--no-guard")
    if confinement.level is Level.STRICT:
        command.append("--report-only")  # the OS refuses; the reporter names
        if os.geteuid() == 0:
            command.append("--user-namespace")
    else:
        command += ["--parent", str(os.getpid())]
    return command


def await_ready(
    result_r: int, reader: LineReader, timeout: float = STARTUP_TIMEOUT
) -> Ready | None:
    """The worker's first message when it is :class:`Ready`; None when it died, said something
    else, or stayed silent for ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(result_r, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                continue
            data = os.read(result_r, 1 << 16)
            if not data:
                return None
            try:
                messages = reader.feed(data)
            except ProtocolError:
                return None
            if messages and isinstance(messages[0].message, Ready):
                return messages[0].message
            return None
    return None


class ConfinedWorker(ABC):
    """What every worker has: sandbox, pipes, stderr file, supervisor; and how it is stopped.
    Subclasses start the process (:meth:`_launch`) and know its exit status."""

    how = "worker"  # how it was started, for error messages

    def __init__(self, options: WorkerOptions, confinement: Confinement, root: SandboxRoot) -> None:
        self.options = options
        self.confinement = confinement
        self.sandbox = self._new_sandbox(root)
        self.reader = LineReader(REPLIES)
        self.tasks_done = 0
        self.partials: list[ScenarioOutcome] = []
        self.captured: list[CapturedCall] = []  # sent by a --tests suite before its final reply
        self.attempts: list[Attempt] = []
        self.running: Running | None = None  # the scenario it said it runs now
        self.importing = ""  # the module the current task is importing ("" once it is done)
        self.supervisor: Supervisor | None = None
        self.host_pid = 0
        self._pidfd = -1
        self._stderr_path = root.path / f"{self.sandbox.name}.stderr"  # out of the worker's reach
        self._stderr = open(self._stderr_path, "w+b")  # noqa: SIM115 - closed in cleanup
        request_r, self.request_w = os.pipe()
        self.result_r, result_w = os.pipe()
        try:
            self._launch(request_r, result_w)
        except BaseException:
            self._cleanup()
            raise
        finally:
            os.close(request_r)
            os.close(result_w)
        try:
            ready = await_ready(self.result_r, self.reader)
            if ready is None:
                raise self._start_error()
            self._start_supervised(ready)
        except BaseException:
            self.kill()
            raise
        os.set_blocking(self.result_r, False)  # one select round may report it twice

    def _new_sandbox(self, root: SandboxRoot) -> Path:
        return root.new_sandbox()

    @abstractmethod
    def _launch(self, request_r: int, result_w: int) -> None:
        """Start the worker process with its ends of the request and result pipes."""

    @abstractmethod
    def _find_host_pid(self, ready: Ready) -> int:
        """The worker's pid as the scanner sees it (strict workers live in a pid namespace of
        their own); 0 when it cannot be found."""

    @abstractmethod
    def exit_status(self) -> int:
        """The worker's exit status, as ``subprocess`` says it (-N: killed by signal N)."""

    @abstractmethod
    def _terminate(self) -> None:
        """Kill the process and everything it started; return once they are gone."""

    def _release_process(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Give back what the process held once it is gone (its zygote, ...)."""

    def _start_error(self) -> WorkerStartError:
        tail = self.stderr_tail().strip()
        last = tail.splitlines()[-1] if tail else "no output"
        return WorkerStartError(
            f"a scan worker failed to start ({self.how}, isolation {self.confinement.level}): "
            f"{last}; check that apiprof is installed in this interpreter's environment",
            last,
        )

    def _start_supervised(self, ready: Ready) -> None:
        """Find the worker's pid here, check its confinement, take its filter's listener."""
        self.host_pid = self._find_host_pid(ready)
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
            strict = self.confinement.level is Level.STRICT
            view = WorkerView(self.host_pid, str(self.sandbox.resolve()), strict, strict)
            self.supervisor = Supervisor(listener, view, self.confinement.arch)

    @property
    def pid(self) -> int:
        return self.host_pid

    def send(self, task_id: str, request: Request) -> None:
        self.partials = []
        self.captured = []
        self.attempts = []
        self.running = None
        self.reader.start_task()
        self.importing = (
            request.entry.module
            if isinstance(request, ProfileEntry)
            else request.package
            if isinstance(request, Discover)
            else ""
        )
        write_message(self.request_w, task_id, request)

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

    def kill(self) -> None:
        """Kill the worker and everything it started, wait until they are gone, clean up."""
        self.stop()
        self._cleanup()

    def stop(self) -> None:
        """Kill the worker and everything it started; wait until they are gone."""
        if self._pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        self._terminate()
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
            self.supervisor = None
        self._stderr.close()
        with contextlib.suppress(OSError):
            self._stderr_path.unlink()
        self._release_process()
        confine.remove_sandbox(self.sandbox)


class FreshWorker(ConfinedWorker):
    """A worker in a new interpreter of its own (under bubblewrap at the strict level)."""

    how = f"{sys.executable} -m {WORKER_MODULE}"

    def _launch(self, request_r: int, result_w: int) -> None:
        command = [sys.executable, "-m", WORKER_MODULE]
        command += ["--request-fd", str(request_r), "--result-fd", str(result_w)]
        command += ["--sandbox", str(self.sandbox)]
        command += worker_arguments(self.options, self.confinement)
        self.proc = start_confined(
            self.options,
            self.confinement,
            self.sandbox,
            command,
            self._stderr,
            (request_r, result_w),
        )

    def _find_host_pid(self, ready: Ready) -> int:
        if self.confinement.level is not Level.STRICT:
            return self.proc.pid
        return descendant(self.proc.pid, ready.pid)

    def exit_status(self) -> int:
        return bubblewrap_status(self.proc.wait(), self.confinement)

    def _terminate(self) -> None:
        stop_process_group(self.proc)


def start_confined(
    options: WorkerOptions,
    confinement: Confinement,
    sandbox: Path,
    command: list[str],
    stderr: IO[bytes],
    fds: tuple[int, ...],
) -> subprocess.Popen[bytes]:
    """Start ``command`` (a worker or a zygote) confined as ``confinement`` says, in its own
    session, with ``sandbox`` as its cwd and the allow-listed environment."""
    if confinement.level is Level.STRICT:
        command = confine.bwrap_command(sandbox, options.readable_paths(), command)
    try:
        return subprocess.Popen(
            command,
            cwd=sandbox,
            env=worker_environment(sandbox, options.env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            pass_fds=fds,
            start_new_session=True,
            umask=0o022,
        )
    except OSError as error:
        raise WorkerStartError(f"a scan worker could not be started: {error}", str(error)) from None


def bubblewrap_status(code: int, confinement: Confinement) -> int:
    """An exit status as ``subprocess`` says it (bubblewrap passes a signal death on as
    128 + signal)."""
    if confinement.level is Level.STRICT and code > 128:
        return -(code - 128)
    return code


def stop_process_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill a started process's session (bubblewrap and the PID namespace under it) and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    proc.wait()


def descendant(root_pid: int, ns_pid: int, depth: int = 3) -> int:
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
        status = process_status(pid)
    except OSError as error:
        return f"its status cannot be read ({error})"
    problems = []
    if confinement.filter is not None and status.get("Seccomp", "0").strip() != "2":
        problems.append("no system-call filter")
    if confinement.filter is not None and status.get("NoNewPrivs", "0").strip() != "1":
        problems.append("no no_new_privs")
    if confinement.level is Level.STRICT:
        problems += namespace_problems(pid, status)
    return ", ".join(problems)


def process_status(pid: int) -> dict[str, str]:
    """``/proc/PID/status`` as a mapping (raises OSError when it cannot be read)."""
    with open(f"/proc/{pid}/status") as stream:
        return dict(line.rstrip("\n").split(":\t", 1) for line in stream if ":\t" in line)


def namespace_problems(pid: int, status: Mapping[str, str]) -> list[str]:
    """What a strictly confined process lacks: no capabilities, not root, namespaces of its own."""
    problems = []
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
    return problems
