"""The parent side of isolation: a pool of confined worker processes that it trusts in nothing.

Each worker runs :mod:`~apiprof.engine.isolation.worker`'s code, confined as
:mod:`~apiprof.engine.isolation.confine` describes (bubblewrap at the strict level), with a fresh
sandbox directory as its cwd, HOME and TMPDIR, an allow-listed environment, its own session,
and two private pipes (:mod:`~apiprof.engine.isolation.process`); it is forked by a zygote that
did the interpreter's start-up once, or started fresh (:mod:`~apiprof.engine.isolation.spawn`).
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

import os
import select
import selectors
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field, replace

from apiprof.engine.isolation import contract
from apiprof.engine.isolation.confine import Confinement, SandboxRoot
from apiprof.engine.isolation.deaths import describe_death
from apiprof.engine.isolation.options import Start, WorkerOptions
from apiprof.engine.isolation.process import STOP_TIMEOUT, ConfinedWorker, WorkerStartError
from apiprof.engine.isolation.protocol import (
    Attempt,
    Attempted,
    Captured,
    Failed,
    Imported,
    ProtocolError,
    Reply,
    Request,
    Running,
    RunSuite,
    ScenarioOutcome,
)
from apiprof.engine.isolation.settle import settle_confinement
from apiprof.engine.isolation.spawn import Spawner
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.model.records import Coverage, Failure

__all__ = [
    "Start",
    "Task",
    "TaskResult",
    "WorkerOptions",
    "WorkerPool",
    "WorkerStartError",
    "describe_death",
]

DRAIN_LIMIT = 1000  # notifications answered after a final reply, before the worker is stopped


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
    # arguments a --tests suite captured, sent before its final reply (kept if the worker dies)
    captured: list[CapturedCall] = field(default_factory=list)
    running: Running | None = None  # the scenario it said it ran when its worker died

    def after(self, earlier: TaskResult) -> TaskResult:
        """This result of a task run again, merged with the ``earlier`` run's: everything
        both workers sent, this one's end."""
        return replace(
            self,
            partials=[*earlier.partials, *self.partials],
            attempts=[*earlier.attempts, *self.attempts],
            captured=[*earlier.captured, *self.captured],
        )

    @property
    def failure(self) -> Failure | None:
        """Why the task as a whole failed, or None when it completed."""
        if isinstance(self.reply, Failed):
            return self.reply.failure
        return self.lost


Rerun = Callable[[TaskResult], Task | None]
"""Whether a task is run again after this result, and how (see :mod:`~apiprof.engine.isolation.rerun`)."""


class WorkerPool:
    """Up to ``jobs`` workers; a context manager that kills every worker on exit."""

    def __init__(self, jobs: int = 1, options: WorkerOptions | None = None) -> None:
        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.jobs = jobs
        self.options = options or WorkerOptions()
        self.idle: list[ConfinedWorker] = []
        self.busy: set[ConfinedWorker] = set()
        self.started = 0  # workers started so far, replacements included
        self.confinement: Confinement | None = None
        self.root: SandboxRoot | None = None
        self.spawner: Spawner | None = None

    @property
    def start_method(self) -> str:
        """How this pool's workers are started, and why not by a zygote when one was asked
        for (for the scan's provenance)."""
        if self.spawner is not None and self.spawner.fallback:
            return f"{Start.FRESH} ({self.spawner.fallback})"
        return str(self.options.start)

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
        if self.spawner is not None:
            self.spawner.close()
        if self.root is not None:
            self.root.remove()

    def settle(self) -> Confinement:
        """Decide the isolation level now (it starts a first worker, kept for the first task)."""
        if self.confinement is None:
            self.idle.append(self._start())
        assert self.confinement is not None
        return self.confinement

    def _start(self) -> ConfinedWorker:
        if self.root is None or self.spawner is None:
            self.root = SandboxRoot()
            self.spawner = Spawner(self.options, self.root)
        start = self.spawner.start
        if self.confinement is None:
            self.confinement, worker = settle_confinement(
                self.options.isolation, self.options.readable_paths(), start
            )
        else:
            worker = start(self.confinement)
        self.started += 1
        return worker

    def _take_worker(self) -> ConfinedWorker:
        worker = self.idle.pop() if self.idle else self._start()
        self.busy.add(worker)
        return worker

    def _discard(self, worker: ConfinedWorker) -> None:
        self.busy.discard(worker)
        worker.kill()

    def _release(self, worker: ConfinedWorker, result: TaskResult) -> None:
        self.busy.discard(worker)
        worker.tasks_done += 1
        failure = result.failure
        limited = failure is not None and failure.kind in (Coverage.MEMORY, Coverage.TIMED_OUT)
        if limited or worker.tasks_done >= self.options.max_tasks:
            worker.kill()  # a fresh worker per task; one that hit a limit may be in a bad state
        else:
            self.idle.append(worker)

    def request(
        self, request: Request, timeout: float | None = None, rerun: Rerun | None = None
    ) -> TaskResult:
        """Run one request on one worker and wait for its result."""
        results = self.run([Task("single", request, timeout)], rerun)
        try:
            return next(results)
        finally:
            results.close()

    def run(
        self, tasks: Iterable[Task], rerun: Rerun | None = None
    ) -> Generator[TaskResult, None, None]:
        """Run tasks on up to ``jobs`` workers, yielding each result as it arrives (any order).
        ``rerun`` may turn a result into a task to run again first (in a new worker); the
        result yielded at last is merged from every run of the task."""
        pending = deque(tasks)
        earlier: dict[str, TaskResult] = {}  # task id -> its runs so far, while it runs again

        def settled(result: TaskResult) -> TaskResult | None:
            if result.task.id in earlier:
                result = result.after(earlier.pop(result.task.id))
            again = rerun(result) if rerun is not None else None
            if again is None:
                return result
            earlier[again.id] = result
            pending.appendleft(again)
            return None

        busy: dict[ConfinedWorker, tuple[Task, float]] = {}  # worker -> (task, deadline)
        watched: dict[ConfinedWorker, list[int]] = {}  # its descriptors, as registered
        sel = selectors.DefaultSelector()
        try:
            while pending or busy:
                while pending and len(busy) < self.jobs:
                    task = pending.popleft()
                    worker = self._take_worker()
                    worker.send(task.id, task.request)
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
                        if (result := settled(result)) is not None:
                            yield result
                now = time.monotonic()
                for worker, (task, deadline) in list(busy.items()):
                    if now >= deadline:
                        for fd in watched.pop(worker):
                            sel.unregister(fd)
                        del busy[worker]
                        if (result := settled(self._timed_out(worker, task))) is not None:
                            yield result
        finally:
            sel.close()
            for worker in busy:
                self._discard(worker)

    def _timed_out(self, worker: ConfinedWorker, task: Task) -> TaskResult:
        self._drain_notifications(worker)
        worker.stop()
        if problem := self._read_rest(worker, task):
            return self._broke_rules(worker, task, problem)
        self._discard(worker)
        limit = task.timeout or self.options.scenario_timeout
        why = Failure(Coverage.TIMED_OUT, f"ran past the {limit:g} s scenario timeout")
        return _result(task, worker, lost=why)

    def _supervise(self, worker: ConfinedWorker, task: Task) -> TaskResult | None:
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

    def _drain_notifications(self, worker: ConfinedWorker) -> None:
        """Answer what the worker's threads are still waiting on, so nothing they tried goes
        unrecorded when the worker is stopped."""
        supervisor = worker.supervisor
        for _ in range(DRAIN_LIMIT):
            if supervisor is None or not select.select([supervisor], [], [], 0)[0]:
                return
            refusal = supervisor.handle()
            if refusal is not None:
                worker.note(refusal)

    def _broke_rules(self, worker: ConfinedWorker, task: Task, why: str) -> TaskResult:
        self._drain_notifications(worker)
        self._discard(worker)
        failure = Failure(
            Coverage.BLOCKED,
            f"its worker {why}; the worker was stopped and nothing it sent for this task was kept",
        )
        return TaskResult(task, lost=failure, attempts=worker.attempts)

    def _read(self, worker: ConfinedWorker, task: Task) -> TaskResult | None:
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
            return replace(_result(task, worker, lost=why), running=worker.running)
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
        result = _result(task, worker, reply)
        self._release(worker, result)
        return result

    def _absorb(self, worker: ConfinedWorker, task: Task, data: bytes) -> tuple[Reply | None, str]:
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
                worker.running = None  # that size is over
            elif isinstance(message, Running):
                worker.running = message if message.key else None
            elif isinstance(message, Captured) and isinstance(task.request, RunSuite):
                worker.captured += message.calls
            else:
                return message, ""
        return None, ""

    def _read_rest(self, worker: ConfinedWorker, task: Task) -> str:
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


def _result(
    task: Task, worker: ConfinedWorker, reply: Reply | None = None, lost: Failure | None = None
) -> TaskResult:
    """The task's result with everything its worker sent before the end."""
    return TaskResult(
        task,
        reply,
        lost,
        partials=worker.partials,
        attempts=worker.attempts,
        captured=worker.captured,
    )
