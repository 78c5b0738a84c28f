"""The worker: the only apiprof code that runs inside the sandbox, next to the scanned package.

Started by :mod:`apiprof.engine.isolation.pool` as ``python -m apiprof.engine.isolation.worker``
(under bubblewrap at the strict isolation level, :mod:`~apiprof.engine.isolation.confine`) with
a fresh sandbox directory as cwd, an allow-listed environment, and two private pipes: requests
arrive on ``--request-fd`` and replies leave on ``--result-fd``, one message per line
(:mod:`~apiprof.engine.isolation.protocol`). stdout and stderr belong to the package (the parent
discards stdout and keeps the tail of stderr for crash reports), so nothing a package prints can
corrupt a result.

Start-up order matters: apiprof's own modules are imported first (they are trusted); then the
worker confines itself (a worker forked by a zygote, :mod:`~apiprof.engine.isolation.zygote`,
does the same from here on) — its own user namespace when bubblewrap ran as root, death with its
parent, resource limits, the system-call filter (:mod:`~apiprof.engine.isolation.seccomp`),
the reporter (:mod:`~apiprof.engine.isolation.sandbox`) — and says :class:`Ready`, naming its
filter's listener for the scanner to take. It closes its own copy of the listener when the
first request arrives, before any package code runs.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.util
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from apiprof.engine import timeouts
from apiprof.engine.discovery.discover import Discovery, discover, measurable, resolve_object
from apiprof.engine.isolation import sandbox, seccomp
from apiprof.engine.isolation.protocol import (
    REQUESTS,
    Attempted,
    Blame,
    Calibrate,
    Calibrated,
    Call,
    CallDone,
    Captured,
    CaptureExamples,
    Discover,
    Discovered,
    DriveCapture,
    Driven,
    EntryFinished,
    Failed,
    Imported,
    LineReader,
    MeasureSettings,
    Ping,
    Pong,
    ProfileEntry,
    Ready,
    Refused,
    Reply,
    Request,
    RunSuite,
    ScenarioOutcome,
    write_message,
)
from apiprof.engine.isolation.suitework import run_suite
from apiprof.engine.isolation.syscalls import native_arch
from apiprof.engine.isolation.userns import enter_user_namespace
from apiprof.engine.isolation.zygote import serve_forks
from apiprof.engine.measure import calibrate, profiler
from apiprof.engine.measure.batch import repeated
from apiprof.engine.measure.probes import resolve_site
from apiprof.engine.measure.standins import stand_ins_for
from apiprof.engine.scenarios.building import RANK
from apiprof.engine.scenarios.capture import capture_examples
from apiprof.engine.scenarios.collect import gather_scenarios
from apiprof.engine.scenarios.drive import drive_capture
from apiprof.engine.scenarios.files import check_targets, load_scenario_file
from apiprof.engine.scenarios.partial import PartialArgument, partial_arguments
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, ScenarioSpec, compile_scenario
from apiprof.engine.scenarios.stops import WATCH, scenario_key, watching
from apiprof.engine.scenarios.trial import failure_from, plain_process_state, try_scenario
from apiprof.errors import ApiprofError, MeasurementError
from apiprof.model.records import NO_SIZE, Coverage, Failure, Phase, ScenarioSource

Send = Callable[[str, Reply], None]


class Worker:
    """Request handlers; state is the guard, the limits and the request being answered."""

    def __init__(self, guard: sandbox.Guard | None, memory_mb: int, send: Send) -> None:
        self.guard = guard
        self.memory_mb = memory_mb
        self.send = send  # writes one message to the parent
        self.task_id = ""

    def emit(self, reply: Reply) -> None:
        """Send a partial reply for the request being answered, before its final reply."""
        self.send(self.task_id, reply)

    def handle(self, request: Request) -> Reply:
        handler: Callable[[Any], Reply] = getattr(self, f"on_{type(request).__name__}")
        self.enter_phase(request)
        if not isinstance(request, (ProfileEntry, CaptureExamples)):
            return handler(request)
        with watching(self.emit, request.stops):  # say what runs, in case it stops the worker
            return handler(request)

    def enter_phase(self, request: Request) -> None:
        """Tell the reporter (and the scanner) whose code runs next. An entry point's module is
        imported first, so what its top-level code tries is blamed on the import, not on the
        entry point; discovery is importing throughout."""
        package = request.package if isinstance(request, Discover) else ""
        self.set_phase(Blame.IMPORT if package else Blame.ENTRY, package)
        if isinstance(request, ProfileEntry):
            self.set_phase(Blame.IMPORT, request.entry.module)
            with contextlib.suppress(BaseException):  # the handler meets it again and reports it
                importlib.import_module(request.entry.module)
            self.set_phase(Blame.ENTRY, "")
            self.emit(Imported())

    def set_phase(self, blame: Blame, module: str) -> None:
        if self.guard is not None:
            self.guard.phase = (blame, module)

    # -- operations ---------------------------------------------------------------------------
    def on_Ping(self, request: Ping) -> Reply:
        return Pong(os.getpid(), os.getcwd())

    def on_Call(self, request: Call) -> Reply:
        module_name, _, attr = request.target.partition(":")
        fn = getattr(importlib.import_module(module_name), attr)
        call = timeouts.limit_each_call(lambda: fn(*request.args), request.call_timeout)
        with timeouts.stretch():
            return self.attempt(lambda: CallDone(repr(call())[:2000]))

    def on_Discover(self, request: Discover) -> Reply:
        """Import the package and list entry points; parse scenario files (their specs)."""
        found = discover(request.package)
        specs = [spec for path in request.scenario_files for spec in load_scenario_file(path)]
        known = [name for ep in found.entry_points for name in (ep.qualname, *ep.aliases)]
        check_targets(specs, known)
        return Discovered(found, specs)

    def on_CaptureExamples(self, request: CaptureExamples) -> Reply:
        """Run the docstring examples, recording the arguments entry points receive."""
        discovery = Discovery(request.package, "", list(request.entries))
        return Captured(capture_examples(discovery, budget=request.budget))

    def on_DriveCapture(self, request: DriveCapture) -> Reply:
        """Run the package's working scenarios, recording what the watched entry points get."""
        found = drive_capture(request.watched, request.drivers, budget=request.budget)
        return Driven(found.calls, found.reach, found.drivers_run)

    def on_Calibrate(self, request: Calibrate) -> Reply:
        return Calibrated(calibrate.calibrate())

    def on_ProfileEntry(self, request: ProfileEntry) -> Reply:
        """Collect the docstring/synthesised scenarios of one entry point (each tried once, as
        collection does) and profile them and its file scenarios, one after another.

        Each size of each scenario is sent at once as a :class:`ScenarioOutcome`, so a later
        crash or timeout of this worker loses nothing already measured — an O(n!) function keeps
        its small sizes when a large one runs out of time. A scenario stops at its first failing
        size (larger inputs fail the same way or worse), and after a size whose calls already
        take a fifth of the per-call timeout: the next, larger size would most likely run out of
        time, after minutes of allocation and timing passes.
        """
        collected = self.attempt(lambda: self.collect_for_entry(request))
        if isinstance(
            collected, Failed
        ):  # collection itself was blocked, timed out or ran out of memory
            return collected
        assert isinstance(collected, EntryFinished)
        specs = [*request.specs, *collected.specs]
        if not request.profile:  # collection only (`apiprof scenarios init`)
            partial = [] if specs else self.attempt_partial(request)
            return EntryFinished(specs, collected.unscenarioed, collected.failures, partial)
        if not specs:
            why = self.no_scenario_failure(collected.unscenarioed)
            return EntryFinished(unscenarioed=why, failures=collected.failures)
        measured = {(run.key, run.size) for run in request.measured}  # by an earlier worker
        ended = {(run.key, run.size) for run in request.ended}
        for spec in specs:
            key = scenario_key(spec)
            for size in scenario_sizes(spec):
                if (key, size) in measured:
                    continue
                if (key, size) in ended or WATCH.stop_for(spec, size, Phase.CALL):
                    break
                work = functools.partial(self.profile_size, spec, size, request.settings)
                with timeouts.stretch():  # the call limits' timers, armed once for all runs
                    outcome = self.attempt(work, source=spec.source, scenario=spec.id)
                if isinstance(outcome, Failed):
                    outcome = ScenarioOutcome(spec, size, failure=outcome.failure)
                assert isinstance(outcome, ScenarioOutcome)
                self.emit(outcome)
                if outcome.failure or too_slow_to_grow(outcome, request.settings):
                    break
        return EntryFinished(unscenarioed=collected.unscenarioed, failures=collected.failures)

    def attempt_partial(self, request: ProfileEntry) -> list[PartialArgument]:
        """The best arguments found for an entry point nothing could call (for a scaffold)."""
        try:
            return partial_arguments(request.entry.qualname, tuple(request.sources))
        except Exception:  # the package's code misbehaved while building: nothing to offer
            return []

    def no_scenario_failure(self, why: Failure | None) -> Failure:
        """Why an entry point has nothing to profile, said for the coverage report."""
        if why is None:
            return Failure(
                Coverage.NO_ARGUMENTS,
                "no scenario source could call it; add one to a scenario file",
            )
        if why.kind == Coverage.MEMORY:
            reason = f"ran out of memory (worker cap {self.memory_mb} MiB) when its scenarios were tried: {why.reason}"
            return Failure(why.kind, reason)
        if why.kind == Coverage.TIMED_OUT:
            return Failure(why.kind, f"its scenarios hit the trial timeout: {why.reason}")
        return why

    def collect_for_entry(self, request: ProfileEntry) -> EntryFinished:
        if not (request.docstrings or request.synthesize or request.captured or request.drivers):
            why = Failure(
                Coverage.NO_ARGUMENTS, "docstring examples and argument synthesis are off"
            )
            return EntryFinished([], why)
        gathered = gather_scenarios(
            Discovery(request.package, "", [request.entry]),
            (),
            docstrings=request.docstrings,
            synthesize=request.synthesize,
            sizes=tuple(request.sizes or DEFAULT_SIZES),
            sources=tuple(request.sources),
            captured=request.captured,
        )
        qualname = request.entry.qualname
        if not gathered.specs and request.drivers:  # the package's own run, measuring its calls
            gathered.specs += first_working(request.drivers, gathered.failures[qualname])
        return EntryFinished(
            gathered.specs,
            gathered.unscenarioed().get(qualname),
            gathered.failures.get(qualname, []),
        )

    def profile_size(self, spec: ScenarioSpec, size: int, settings: MeasureSettings) -> Reply:
        """Run one scenario at one size (``NO_SIZE`` when it has no size axis) under the profiler."""
        objects = {name: measurable(resolve_object(name)) for name in spec.measured}
        stand_ins = stand_ins_for(objects.values())
        targets = [
            profiler.Target(name, stand_ins.get(id(obj), obj)) for name, obj in objects.items()
        ]
        limit = settings.call_timeout
        setup = timeouts.limit_each_call(
            lambda: compile_scenario(spec, size if spec.size_axis else None, stand_ins=stand_ins),
            limit,
        )
        scenario: Callable[[], object] = setup()  # type: ignore[assignment]
        run_once = timeouts.limit_each_call(scenario, limit)
        slowest = [0.0]

        # the slowest run (under the allocation pass) decides whether to grow
        def timed_run() -> object:
            started = time.perf_counter()
            try:
                return run_once()
            finally:
                slowest[0] = max(slowest[0], time.perf_counter() - started)

        report = profiler.profile(
            timed_run,
            targets,
            scenario_id=spec.id,
            size=size,
            repeat=int(spec.repeat or settings.repeat),
            max_seconds=settings.max_seconds,
            time_budget=settings.time_budget,
            calibration=settings.calibration,
            batch=lambda times: timeouts.limit_each_call(repeated(scenario, times), limit),
        )
        if not any(m.qualname == spec.qualname for m in report.measurements):
            if id(objects.get(spec.qualname)) in stand_ins:  # the call reached the real class
                resolve_site(objects[spec.qualname])  # raises why 3.11 cannot time it
            why = Failure(
                Coverage.NO_ARGUMENTS,
                "its scenario ran but never called it (the call reached other code: an "
                "override in a subclass, a cached result, or a different copy of the module)",
                scenario=spec.id,
                phase=Phase.CALL,
            )
            return ScenarioOutcome(spec, size, failure=why)
        return ScenarioOutcome(
            spec,
            size,
            measurements=report.measurements,
            edges=report.edges,
            slowest_run_seconds=slowest[0],
            disturbance=report.disturbance,
        )

    def on_RunSuite(self, request: RunSuite) -> Reply:
        """Run the package's own pytest suite under the profiler (:mod:`~apiprof.engine.
        isolation.suitework`): one scenario whose targets are every entry point."""
        return run_suite(request, self.guard, self.emit)

    def attempt(self, work: Callable[[], Reply], source: str = "", scenario: str = "") -> Reply:
        """Run ``work``; what went wrong becomes a :class:`Failed` reply whose kind is decided
        here, where the exception is caught. Refusals of the guard outrank anything measured:
        numbers from a call that was refused something describe a failed call."""
        try:
            reply = work()
        except timeouts.CallTimeout as exc:  # phase and location: where the interrupt landed
            why = "a single call ran past the per-call timeout"
            reply = Failed(failure_from(exc, Coverage.TIMED_OUT, scenario, why))
        except MemoryError:
            reply = Failed(self.out_of_memory())
        except sandbox.SandboxViolation as exc:
            reason = str(exc).removeprefix("apiprof sandbox: ")
            reply = Failed(Failure(Coverage.BLOCKED, reason))
        except (
            MeasurementError
        ) as exc:  # the profiler cannot time it here (not the package's fault)
            reply = Failed(Failure(Coverage.UNSUPPORTED, str(exc)))
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}".strip()[:500]
            if source in MADE_UP:  # arguments apiprof made up: another source may do better
                reason = f"synthesised arguments were rejected ({problem})"
                reply = Failed(failure_from(exc, Coverage.NO_ARGUMENTS, scenario, reason))
            else:
                reply = Failed(failure_from(exc, Coverage.CRASHED, scenario, f"raised {problem}"))
        # every attempt already went to the scanner; those of this entry point (or its
        # threads) fail the work, those of an import it triggered are the import's
        events = self.guard.take_events() if self.guard else []
        blocked = [event.reason for event in events if event.attempt().by_entry]
        if blocked:
            reply = Failed(Failure(Coverage.BLOCKED, blocked[0]))
        return reply

    def out_of_memory(self) -> Failure:
        return Failure(Coverage.MEMORY, f"ran out of memory (worker cap {self.memory_mb} MiB)")


MADE_UP = frozenset(RANK) | {ScenarioSource.DRIVEN}
"""Sources whose arguments apiprof made up (or copied mid-stream): when a call rejects them,
that is no crash."""


def first_working(drivers: list[ScenarioSpec], failures: list[Failure]) -> list[ScenarioSpec]:
    """The first of ``drivers`` whose trial runs (the failures of the others go to
    ``failures``)."""
    for spec in drivers:
        failure, _ = try_scenario(spec)
        if failure is None:
            return [spec]
        failures.append(failure)
    return []


def too_slow_to_grow(outcome: ScenarioOutcome, settings: MeasureSettings) -> bool:
    """Whether this size's slowest scenario run took over a fifth of the per-call timeout, so a
    larger size is not worth starting. The slowest run is one under the allocation pass, which
    hooks every call and is where a larger input would run out of time first."""
    limit = settings.call_timeout
    return limit > 0 and outcome.slowest_run_seconds > limit / 5


def scenario_sizes(spec: ScenarioSpec) -> list[int]:
    """The sizes a scenario runs at: its size axis values, or just ``NO_SIZE``."""
    return list(spec.sizes) if spec.size_axis and spec.sizes else [NO_SIZE]


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.splitlines()[-lines:])


def serve(request_fd: int, result_fd: int, worker: Worker, listener: int = -1) -> None:
    """Answer requests until the parent closes the request pipe. The filter's ``listener`` is
    closed when the first request arrives: by then the scanner holds its own copy."""
    reader = LineReader(REQUESTS)
    worker.send("", Ready(os.getpid(), listener))
    while True:
        data = os.read(request_fd, 1 << 16)
        if listener >= 0:
            os.close(listener)
            listener = -1
        if not data:
            return
        for envelope in reader.feed(data):
            worker.task_id = envelope.id
            reply = answer(worker, envelope.message)
            try:
                worker.send(envelope.id, reply)
            except (TypeError, ValueError) as exc:  # unencodable result (e.g. NaN in a histogram)
                failure = Failure(Coverage.CRASHED, f"apiprof could not encode its reply: {exc}")
                worker.send(envelope.id, Failed(failure))


def answer(worker: Worker, request: Request) -> Reply:
    """The reply to one request; nothing raised while handling it escapes."""
    try:
        return worker.handle(request)
    except ApiprofError as exc:  # e.g. PackageNotFound: the scanner raises the same class
        return Refused(exc.code, str(exc))
    except MemoryError:
        return Failed(worker.out_of_memory())
    except Exception as exc:
        tail = _tail(traceback.format_exc())
        return Failed(Failure(Coverage.CRASHED, f"{type(exc).__name__}: {exc}", tail))


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m apiprof.engine.isolation.worker", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--request-fd", type=int, default=-1)
    parser.add_argument("--result-fd", type=int, default=-1)
    parser.add_argument(
        "--zygote-fd",
        type=int,
        default=-1,
        help="be a zygote: fork a worker per request on this socket (see isolation.zygote)",
    )
    parser.add_argument(
        "--private-ipc",
        action="store_true",
        help="(zygote) the IPC namespace is its own: remove what each child left in it",
    )
    parser.add_argument(
        "--sandbox", required=True, help="the only directory the worker may write to"
    )
    parser.add_argument("--memory-mb", type=int, default=2048)
    parser.add_argument("--cpu-seconds", type=int, default=600)
    parser.add_argument(
        "--no-guard", action="store_true", help="skip the audit-hook reporter (limits still apply)"
    )
    parser.add_argument(
        "--filter", choices=[*seccomp.Mode, "none"], default="none", help="system-call filter"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="the reporter names attempts without refusing them (the OS sandbox refuses)",
    )
    parser.add_argument(
        "--user-namespace",
        action="store_true",
        help="enter a user namespace of its own first (bubblewrap ran as root, setpriv dropped uid)",
    )
    parser.add_argument(
        "--parent", type=int, default=0, help="die with this parent process (process level)"
    )
    args = parser.parse_args(argv)
    if args.zygote_fd < 0 and (args.request_fd < 0 or args.result_fd < 0):
        parser.error("--request-fd and --result-fd are required (or --zygote-fd)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(argv)
    sys.dont_write_bytecode = True  # importing must not try to write .pyc files beside the package
    if args.user_namespace:
        enter_user_namespace()
    if args.parent:
        sandbox.die_with_parent(args.parent)
    if args.zygote_fd >= 0:
        args = serve_forks(args)  # returns in each forked child, as that child's worker
    run_worker(args)


def run_worker(args: argparse.Namespace) -> None:
    """Confine this process (limits, system-call filter, reporter) and answer requests."""
    timeouts.install_alarm_handler()
    timeouts.enable_stuck_call_stop()
    plain_process_state()  # stdin no call can close; sys.argv without the worker's options
    sandbox.apply_limits(sandbox.Limits(memory_mb=args.memory_mb, cpu_seconds=args.cpu_seconds))
    listener = -1
    if args.filter != "none":
        listener = seccomp.install_filter(native_arch() or "", seccomp.Mode(args.filter))
    lock = threading.RLock()  # the reporter sends from whichever thread made the attempt

    def send(task_id: str, message: Reply) -> None:
        with lock:
            write_message(args.result_fd, task_id, message)

    worker = Worker(None, args.memory_mb, send=send)
    if not args.no_guard:
        worker.guard = sandbox.install_guard(
            args.sandbox,
            refuse=not args.report_only,
            report=lambda attempt: send(worker.task_id, Attempted(attempt)),
        )
    serve(args.request_fd, args.result_fd, worker, listener)


if __name__ == "__main__":
    main()
