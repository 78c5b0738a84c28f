"""Starting workers cheaply: a zygote per pool slot forks a fresh worker for every task.

A fresh interpreter per entry point costs about a second under load, almost all of it
importing apiprof's own worker code (and bubblewrap's set-up at the strict level). A
:class:`Zygote` pays that once: it is started exactly like a worker
(``python -m apiprof.engine.isolation.worker --zygote-fd N``, confined the same way) and then
only forks. It runs apiprof's code alone — no package is imported in it and no request is
answered by it — so it has no system-call filter of its own (it must fork) and nothing in it is
the package's. Each forked child confines itself as a fresh worker does before it reads its
first request (its own session, limits, system-call filter with a listener the scanner takes,
the reporter) and gets its own sandbox directory, pipes and stderr file, sent by the scanner
with the fork request. From there on it is a fresh worker: it imports the package, runs one
task and is killed; the zygote reaps it and reports its exit status.

What a child cannot do to the next one: it cannot start processes (its filter), signal or trace
its zygote (its filter; its own session), write outside its own sandbox directory (the
supervisor is given that directory, and the scanner removes it once the child is gone), or
leave System V IPC objects behind (the zygote removes them at the strict level, where the IPC
namespace is the zygote's own; POSIX message queues are refused by the filter).

:class:`Spawner` hands out workers: forked from an idle zygote when :attr:`WorkerOptions.start
<apiprof.engine.isolation.options.WorkerOptions.start>` is ``zygote`` (the default), fresh
otherwise — and fresh for the rest of the pool, with the reason kept, when a zygote fails.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path

from apiprof.engine.isolation import confine
from apiprof.engine.isolation.confine import Confinement, Level, SandboxRoot
from apiprof.engine.isolation.options import Start, WorkerOptions
from apiprof.engine.isolation.process import (
    STARTUP_TIMEOUT,
    STOP_TIMEOUT,
    WORKER_MODULE,
    ConfinedWorker,
    FreshWorker,
    WorkerStartError,
    descendant,
    namespace_problems,
    prepare_sandbox,
    process_status,
    start_confined,
    stop_process_group,
    worker_arguments,
)
from apiprof.engine.isolation.protocol import Ready

MAX_LINE = 100  # the zygote's lines: "ready PID", "exit STATUS"


class Zygote:
    """One confined process that did a worker's start-up once and forks a worker per request,
    one at a time."""

    def __init__(self, options: WorkerOptions, confinement: Confinement, root: SandboxRoot) -> None:
        self.confinement = confinement
        self.sandbox = root.new_sandbox()
        self._stderr_path = root.path / f"{self.sandbox.name}.stderr"
        self._stderr = open(self._stderr_path, "w+b")  # noqa: SIM115 - closed in kill
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._buffer = b""
        command = [sys.executable, "-m", WORKER_MODULE, "--zygote-fd", str(theirs.fileno())]
        command += ["--sandbox", str(self.sandbox), *worker_arguments(options, confinement)]
        if confinement.level is Level.STRICT:
            command.append("--private-ipc")  # its IPC namespace is its own: cleaned per child
        try:
            self.proc = start_confined(
                options, confinement, self.sandbox, command, self._stderr, (theirs.fileno(),)
            )
        except BaseException:
            self._close()
            raise
        finally:
            theirs.close()
        try:
            self.host_pid = self._await_ready()
        except BaseException:
            self.kill()
            raise

    def _await_ready(self) -> int:
        words = self._line(STARTUP_TIMEOUT).split()
        if len(words) != 2 or words[0] != "ready" or not words[1].isdigit():
            tail = self._stderr_tail()
            raise WorkerStartError(f"a zygote failed to start: {tail or 'no output'}", tail)
        strict = self.confinement.level is Level.STRICT
        host_pid = descendant(self.proc.pid, int(words[1])) if strict else self.proc.pid
        if host_pid <= 0:
            raise WorkerStartError("a confined zygote could not be found", "zygote not found")
        if strict and (problems := namespace_problems(host_pid, process_status(host_pid))):
            problem = ", ".join(problems)
            raise WorkerStartError(f"a zygote is not confined as expected: {problem}", problem)
        return host_pid

    def fork(self, sandbox: Path, request_r: int, result_w: int, stderr: int) -> None:
        """Ask for a child that serves ``request_r``/``result_w`` in ``sandbox``."""
        try:
            socket.send_fds(self.control, [os.fsencode(sandbox)], [request_r, result_w, stderr])
        except OSError as error:
            raise WorkerStartError(
                f"a zygote did not take a request ({error})", str(error)
            ) from None

    def child_status(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """The last child's exit status as ``subprocess`` says it, once the zygote reaped it;
        None when it said nothing in ``timeout`` seconds or something else."""
        words = self._line(timeout).split()
        if len(words) == 2 and words[0] == "exit":
            with contextlib.suppress(ValueError):
                return int(words[1])
        return None

    def child_is_ours(self, host_pid: int) -> bool:
        """Whether ``host_pid`` is a child of this zygote (at the process level, where the
        child's own word for its pid is the scanner's)."""
        with (
            contextlib.suppress(OSError, ValueError, IndexError),
            open(f"/proc/{host_pid}/stat") as stat,
        ):
            return int(stat.read().rpartition(")")[2].split()[1]) == self.host_pid
        return False

    def _line(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer and len(self._buffer) < MAX_LINE:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.control], [], [], left)[0]:
                return ""
            try:
                data = self.control.recv(MAX_LINE)
            except OSError:
                return ""
            if not data:
                return ""
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")

    def _stderr_tail(self, limit: int = 2000) -> str:
        with contextlib.suppress(OSError, ValueError):
            self._stderr.seek(max(0, self._stderr.seek(0, os.SEEK_END) - limit))
            lines = self._stderr.read().decode(errors="replace").strip().splitlines()
            return lines[-1] if lines else ""
        return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """Kill the zygote and whatever it forked; remove its sandbox."""
        if getattr(self, "proc", None) is not None:
            stop_process_group(self.proc)
        self._close()

    def _close(self) -> None:
        self.control.close()
        self._stderr.close()
        with contextlib.suppress(OSError):
            self._stderr_path.unlink()
        confine.remove_sandbox(self.sandbox)


class ForkedWorker(ConfinedWorker):
    """A worker forked by a :class:`Zygote`: a sandbox directory inside the zygote's, pipes and
    a stderr file of its own; it gives the zygote back when it is gone."""

    how = "forked by a zygote"

    def __init__(
        self,
        options: WorkerOptions,
        confinement: Confinement,
        root: SandboxRoot,
        zygote: Zygote,
        spawner: Spawner,
    ) -> None:
        self.zygote = zygote
        self.spawner = spawner
        self._status: int | None = None
        super().__init__(options, confinement, root)

    def _new_sandbox(self, root: SandboxRoot) -> Path:
        sandbox = root.new_sandbox(inside=self.zygote.sandbox)
        prepare_sandbox(sandbox)
        return sandbox

    def _launch(self, request_r: int, result_w: int) -> None:
        self.zygote.fork(self.sandbox, request_r, result_w, self._stderr.fileno())

    def _find_host_pid(self, ready: Ready) -> int:
        if self.confinement.level is Level.STRICT:
            return descendant(self.zygote.host_pid, ready.pid, depth=1)
        return ready.pid if self.zygote.child_is_ours(ready.pid) else 0

    def exit_status(self) -> int:
        if self._status is None:
            self._status = self.zygote.child_status()
            if self._status is None:  # the child closed its pipe but lives on: stop it now
                self.stop()
        return self._status if self._status is not None else -signal.SIGKILL

    def _terminate(self) -> None:
        if self.confinement.filter is None and self.host_pid > 0:  # it could start processes
            with contextlib.suppress(OSError):
                os.killpg(self.host_pid, signal.SIGKILL)
        if self._status is None and self.host_pid > 0:
            self._status = self.zygote.child_status()

    def _release_process(self) -> None:
        self.spawner.give_back(self.zygote, reaped=self._status is not None)


class Spawner:
    """Starts a pool's workers: forked from an idle zygote, or fresh (see the module's text)."""

    def __init__(self, options: WorkerOptions, root: SandboxRoot) -> None:
        self.options = options
        self.root = root
        self.idle: list[Zygote] = []
        self.fallback = ""  # why workers are started fresh although zygotes were asked for

    def start(self, confinement: Confinement) -> ConfinedWorker:
        """A new worker confined as ``confinement`` says."""
        earlier = self.fallback
        if self.options.start is Start.ZYGOTE and not self.fallback:
            zygote = self._zygote(confinement)
            if zygote is not None:
                try:
                    return ForkedWorker(self.options, confinement, self.root, zygote, self)
                except WorkerStartError as error:
                    self.fallback = f"a zygote's worker did not start ({error.detail})"
        try:
            return FreshWorker(self.options, confinement, self.root)
        except WorkerStartError:
            # a fresh worker fails too: the confinement is at fault, not the zygote (the pool
            # tries the next level, with zygotes again)
            self.fallback = earlier
            raise

    def _zygote(self, confinement: Confinement) -> Zygote | None:
        while self.idle:
            zygote = self.idle.pop()
            if zygote.confinement == confinement and zygote.alive():
                return zygote
            zygote.kill()
        try:
            return Zygote(self.options, confinement, self.root)
        except WorkerStartError as error:
            self.fallback = f"a zygote did not start ({error.detail})"
            return None

    def give_back(self, zygote: Zygote, reaped: bool) -> None:
        """A zygote whose child is gone; one that did not report its child's end is stopped."""
        if reaped and zygote.alive():
            self.idle.append(zygote)
        else:
            zygote.kill()

    def close(self) -> None:
        while self.idle:
            self.idle.pop().kill()
