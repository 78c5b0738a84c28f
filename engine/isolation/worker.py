"""The worker: the only apiprof code that runs inside the sandbox, next to the scanned package.

Started by :mod:`apiprof.engine.isolation.pool` as ``python -m apiprof.engine.isolation.worker`` with a fresh
temporary directory as cwd, an allow-listed environment, and two private pipes: requests arrive
on ``--request-fd`` and replies leave on ``--result-fd``, one JSON object per line. stdout and
stderr belong to the package (the parent discards stdout and keeps the tail of stderr for crash
reports), so nothing a package prints can corrupt a result.

Start-up order matters: apply resource limits, import apiprof's own engine modules (trusted),
then install the sandbox guard, then serve requests. Each reply carries the guard's refusals
since the previous reply.

Operations: ``discover`` (import the package, list entry points, read scenario files),
``calibrate`` (probe costs), ``entry`` (collect and profile every scenario of one entry point,
streaming each scenario's outcome), ``tests`` (run the package's pytest suite under the
profiler, all entry points as targets), ``call`` (call a function by name — used to test
isolation without the profiler), ``ping``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

from apiprof.engine import timeouts
from apiprof.engine.discovery import discover
from apiprof.engine.isolation import protocol as wire
from apiprof.engine.isolation import sandbox
from apiprof.engine.measure import calibrate, profiler
from apiprof.engine.scenarios.collect import collect_scenarios
from apiprof.engine.scenarios.files import load_scenario_file
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, ScenarioSpec, compile_scenario
from apiprof.errors import ApiprofError
from apiprof.model.records import NO_SIZE, Coverage, ScenarioSource


class Worker:
    """Request handlers; state is the guard and the limits."""

    def __init__(
        self,
        guard: sandbox.Guard | None,
        memory_mb: int,
        emit: Callable[[dict], None],
    ) -> None:
        self.guard = guard
        self.memory_mb = memory_mb
        self.emit = emit  # sends a message to the parent before the final reply

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        handler = getattr(self, f"op_{op}", None)
        if handler is None:
            return {"status": "error", "reason": f"unknown operation {op!r}"}
        return handler(request)

    # -- operations ---------------------------------------------------------------------------
    def op_ping(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"status": "ok", "pid": os.getpid(), "cwd": os.getcwd()}

    def op_call(self, request: dict[str, Any]) -> dict[str, Any]:
        module_name, _, attr = request["target"].partition(":")
        fn = getattr(importlib.import_module(module_name), attr)
        call = timeouts.limit_each_call(
            lambda: fn(*request.get("args", [])), request.get("call_timeout", 0)
        )
        return self.attempt(lambda: {"status": "ok", "result": repr(call())[:2000]})

    def op_discover(self, request: dict[str, Any]) -> dict[str, Any]:
        """Import the package and list entry points; parse scenario files (their specs)."""
        discovery = discover.discover(request["package"])
        specs = [
            spec for path in request.get("scenario_files", []) for spec in load_scenario_file(path)
        ]
        return {
            "status": "ok",
            "discovery": discovery.to_json(),
            "specs": [spec.to_json() for spec in specs],
        }

    def op_calibrate(self, request: dict[str, Any]) -> dict[str, Any]:
        calibration = calibrate.calibrate()
        return {"status": "ok", "calibration": calibration.to_json()}

    def op_entry(self, request: dict[str, Any]) -> dict[str, Any]:
        """Collect the docstring/synthesised scenarios of one entry point (each tried once, as
        collection does) and profile them and its file scenarios, one after another.

        Each size of each scenario is sent at once as a ``partial`` message, so a later crash or
        timeout of this worker loses nothing already measured — an O(n!) function keeps its
        small sizes when a large one runs out of time. A scenario stops at its first failing
        size (larger inputs fail the same way or worse), and after a size whose calls already
        take a fifth of the per-call timeout: the next, larger size would most likely run out of
        time, after minutes of allocation and timing passes.
        """
        specs = [ScenarioSpec.from_json(s) for s in request.get("specs", [])]
        # trials carry their own alarm
        collected = self.attempt(lambda: self.collect_for_entry(request))
        if collected["status"] != "ok":
            return collected  # collection itself was blocked, timed out or ran out of memory
        specs += [ScenarioSpec.from_json(s) for s in collected["specs"]]
        if not request.get("profile", True):  # collection only (`apiprof scenarios init`)
            return {
                "status": "done",
                "specs": [spec.to_json() for spec in specs],
                "reason": collected.get("reason", ""),
            }
        if not specs:
            reason = (
                collected.get("reason")
                or "no scenario source could call it; add one to a scenario file"
            )
            status = classify_trial_failure(reason)
            if status == Coverage.MEMORY:
                reason = f"ran out of memory (worker cap {self.memory_mb} MiB) when its scenarios were tried: {reason}"
            elif status == Coverage.TIMED_OUT:
                reason = f"its scenarios hit the trial timeout: {reason}"
            return {"status": status, "reason": reason}
        for spec in specs:
            for size in scenario_sizes(spec):
                outcome = self.attempt(
                    lambda spec=spec, size=size: self.profile_size(spec, size, request),
                    source=spec.source,
                )
                self.emit(
                    {
                        "id": request.get("id"),
                        "partial": True,
                        "scenario": spec.to_json(),
                        **outcome,
                    }
                )
                if outcome["status"] != Coverage.PROFILED or too_slow_to_grow(outcome, request):
                    break
        return {"status": "done", "reason": collected.get("reason", "")}

    def collect_for_entry(self, request: dict[str, Any]) -> dict[str, Any]:
        entry = request["entry"]
        discovery = discover.Discovery.from_json(
            {
                "package": request["package"],
                "version": "",
                "entry_points": [entry],
                "import_failures": {},
            }
        )
        if not (request.get("docstrings", True) or request.get("synthesize", True)):
            return {
                "status": "ok",
                "specs": [],
                "reason": "docstring examples and argument synthesis are off",
            }
        specs, unscenarioed = collect_scenarios(
            discovery,
            (),
            docstrings=request.get("docstrings", True),
            synthesize=request.get("synthesize", True),
            sizes=tuple(request.get("sizes", DEFAULT_SIZES)),
        )
        return {
            "status": "ok",
            "specs": [spec.to_json() for spec in specs],
            "reason": unscenarioed.get(entry["qualname"], ""),
        }

    def profile_size(self, spec: Any, size: int, request: dict[str, Any]) -> dict[str, Any]:
        """Run one scenario at one size (``NO_SIZE`` when it has no size axis) under the profiler."""
        from apiprof.model.records import Calibration

        calibration = (
            Calibration.from_json(request["calibration"]) if request.get("calibration") else None
        )
        targets = [profiler.Target(name, discover.resolve_object(name)) for name in spec.measured]
        call_timeout = float(request.get("call_timeout", 0))
        setup = timeouts.limit_each_call(
            lambda: compile_scenario(spec, size if spec.size_axis else None), call_timeout
        )
        run_once = timeouts.limit_each_call(setup(), call_timeout)
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
            repeat=int(spec.repeat or request.get("repeat", 20)),
            max_seconds=float(request.get("max_seconds", 2.0)),
            calibration=calibration,
        )
        if not any(m.qualname == spec.qualname for m in report.measurements):
            return {
                "status": Coverage.NO_ARGUMENTS,
                "reason": "its scenario ran but never called it",
            }
        return {
            "status": Coverage.PROFILED,
            "measurements": [wire.measurement_to_json(m) for m in report.measurements],
            "edges": [wire.edge_to_json(e) for e in report.edges],
            "slowest_run_seconds": slowest[0],
        }

    def op_tests(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run the package's own pytest suite under the profiler: one scenario whose targets are
        every entry point. pytest runs in this process once unprofiled (warm-up, test outcomes),
        then once per profiler pass (repeat 1); failing tests and tests the guard refuses count
        as failures, not as errors of the scenario."""
        try:
            import pytest
        except ImportError as exc:
            return {
                "status": "unavailable",
                "reason": f"pytest is not installed where {request['package']} is scanned "
                f"({exc}); install pytest into that environment or scan without --tests",
            }
        from apiprof.model.records import Calibration

        targets, unresolved = [], []
        for name in request["targets"]:
            try:
                obj = discover.resolve_object(name)
                profiler.resolve_site(obj)
            # a name the suite cannot be measured on; its own scenarios report why
            except Exception:
                unresolved.append(name)
                continue
            targets.append(profiler.Target(name, obj))
        runs: list[TestTally] = []
        output = io.StringIO()
        args = [request["path"], "-q", "-p", "no:cacheprovider", "-p", "no:faulthandler"]

        def run_suite() -> None:
            tally = TestTally()
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                tally.exit_code = int(pytest.main(args, plugins=[tally]))
            runs.append(tally)

        run_suite()  # unprofiled warm-up: imports, collection and assertion rewriting stay out of the passes
        calibration = (
            Calibration.from_json(request["calibration"]) if request.get("calibration") else None
        )
        report = profiler.profile(
            run_suite,
            targets,
            scenario_id=request["scenario_id"],
            repeat=1,
            max_seconds=float(request.get("max_seconds", 2.0)),
            calibration=calibration,
        )
        blocked = [event.reason for event in self.guard.take_events()] if self.guard else []
        first = runs[0]  # the warm-up: its outcomes are the suite's, unaffected by the probes
        reply = {
            "status": "ok",
            "runs": len(runs) - 1,
            "exit_code": first.exit_code,
            "outcomes": dict(first.outcomes),
            "blocked": sorted(set(blocked)),
            "unresolved": unresolved,
            "measurements": [wire.measurement_to_json(m) for m in report.measurements],
            "edges": [wire.edge_to_json(e) for e in report.edges],
        }
        if not any(first.outcomes[k] for k in ("passed", "failed")):  # collection or usage failed
            tail = [line for line in output.getvalue().splitlines() if line.strip()][-3:]
            reply.update(
                status="failed",
                reason=f"pytest exited with code {first.exit_code} without running a test"
                + (f": {' | '.join(tail)[:400]}" if tail else ""),
            )
        return reply

    def attempt(
        self,
        work: Callable[[], dict[str, Any]],
        source: str = "",
        timeout_reason: str = "a single call ran past the per-call timeout",
    ) -> dict[str, Any]:
        """Run ``work`` and turn what went wrong into a coverage status with a reason."""
        try:
            reply = work()
        except timeouts.CallTimeout:
            reply = {"status": Coverage.TIMED_OUT, "reason": timeout_reason}
        except MemoryError:
            reply = {
                "status": Coverage.MEMORY,
                "reason": f"ran out of memory (worker cap {self.memory_mb} MiB)",
            }
        except sandbox.SandboxViolation as exc:
            reply = {
                "status": Coverage.BLOCKED,
                "reason": str(exc).removeprefix("apiprof sandbox: "),
            }
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}".strip()[:500]
            if source == ScenarioSource.SYNTHESIZED:
                reply = {
                    "status": Coverage.NO_ARGUMENTS,
                    "reason": f"synthesised arguments were rejected ({problem})",
                }
            else:
                reply = {
                    "status": Coverage.CRASHED,
                    "reason": f"raised {problem}",
                    "traceback": _tail(traceback.format_exc()),
                }
        blocked = self.guard.take_events() if self.guard else []
        # refused operations outrank anything measured: the numbers describe a failed call
        if blocked:
            reply = {"status": Coverage.BLOCKED, "reason": blocked[0].reason}
        reply["blocked"] = [event.reason for event in blocked]
        return reply


def too_slow_to_grow(outcome: dict[str, Any], request: dict[str, Any]) -> bool:
    """Whether this size's slowest scenario run took over a fifth of the per-call timeout, so a
    larger size is not worth starting. The slowest run is one under the allocation pass, which
    hooks every call and is where a larger input would run out of time first."""
    limit = float(request.get("call_timeout", 0))
    return limit > 0 and float(outcome.get("slowest_run_seconds", 0.0)) > limit / 5


def scenario_sizes(spec: Any) -> list[int]:
    """The sizes a scenario runs at: its size axis values, or just ``NO_SIZE``."""
    return list(spec.sizes) if spec.size_axis and spec.sizes else [NO_SIZE]


class TestTally:
    """A pytest plugin that counts the outcomes of one run of a test suite."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter(passed=0, failed=0, errors=0, skipped=0)
        self.exit_code = -1

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.outcomes["failed" if report.when == "call" else "errors"] += 1
        elif report.skipped:
            self.outcomes["skipped"] += 1
        elif report.when == "call":
            self.outcomes["passed"] += 1

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.outcomes["errors"] += 1


def classify_trial_failure(reason: str) -> Coverage:
    """Coverage for an entry point whose scenarios all failed their trial run (reason text from
    ``collect_scenarios``): running out of memory or time is not a lack of arguments."""
    if reason.startswith("import failed"):
        return Coverage.IMPORT_FAILED
    if "MemoryError" in reason:
        return Coverage.MEMORY
    if "took longer than" in reason:
        return Coverage.TIMED_OUT
    return Coverage.NO_ARGUMENTS


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.splitlines()[-lines:])


def serve(request_fd: int, result_fd: int, worker: Worker) -> None:
    """Answer requests until the parent closes the request pipe."""
    reader = wire.LineReader()
    wire.write_message(result_fd, {"op": "ready", "pid": os.getpid()})
    while True:
        data = os.read(request_fd, 1 << 16)
        if not data:
            return
        for request in reader.feed(data):
            try:
                reply = worker.handle(request)
            # e.g. PackageNotFound: the parent re-raises it by class name
            except ApiprofError as exc:
                reply = {"status": "apiprof_error", "error": type(exc).__name__, "reason": str(exc)}
            except MemoryError:
                reply = {
                    "status": Coverage.MEMORY,
                    "reason": f"ran out of memory (worker cap {worker.memory_mb} MiB)",
                }
            except Exception as exc:
                reply = {
                    "status": "error",
                    "reason": f"{type(exc).__name__}: {exc}",
                    "traceback": _tail(traceback.format_exc()),
                }
            reply["id"] = request.get("id")
            try:
                wire.write_message(result_fd, reply)
            except (TypeError, ValueError) as exc:  # unencodable result (e.g. NaN in a histogram)
                wire.write_message(
                    result_fd,
                    {
                        "id": request.get("id"),
                        "status": "error",
                        "reason": f"unencodable reply: {exc}",
                    },
                )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m apiprof.engine.isolation.worker", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--request-fd", type=int, required=True)
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument(
        "--sandbox", required=True, help="the only directory the worker may write to"
    )
    parser.add_argument("--memory-mb", type=int, default=2048)
    parser.add_argument("--cpu-seconds", type=int, default=600)
    parser.add_argument(
        "--no-guard", action="store_true", help="skip the audit-hook guard (limits still apply)"
    )
    args = parser.parse_args(argv)

    sys.dont_write_bytecode = True  # importing must not try to write .pyc files beside the package
    timeouts.install_alarm_handler()
    timeouts.enable_stuck_call_stop()
    sandbox.apply_limits(sandbox.Limits(memory_mb=args.memory_mb, cpu_seconds=args.cpu_seconds))
    guard = None if args.no_guard else sandbox.install_guard(args.sandbox)
    worker = Worker(
        guard,
        args.memory_mb,
        emit=lambda message: wire.write_message(args.result_fd, message),
    )
    serve(args.request_fd, args.result_fd, worker)


if __name__ == "__main__":
    main()
