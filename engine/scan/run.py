"""Run: calibrate the probes and run the plan's tasks on the worker pool."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from apiprof.engine.isolation.pool import Task, TaskResult, WorkerPool
from apiprof.engine.isolation.protocol import (
    Calibrate,
    Calibrated,
    MeasureSettings,
)
from apiprof.engine.isolation.rerun import rerun_task
from apiprof.engine.scan.discover import expect
from apiprof.engine.scan.options import ScanOptions
from apiprof.engine.scan.plan import Plan
from apiprof.model.records import (
    Calibration,
)


def calibrate_in_worker(pool: WorkerPool) -> Calibration:
    """Probe costs, measured in a worker (the interpreter and settings that will be measured)."""
    reply = expect(pool.request(Calibrate(), timeout=120), Calibrated, "calibrating the profiler")
    return reply.calibration


def measure_settings(options: ScanOptions, calibration: Calibration | None) -> MeasureSettings:
    """How hard each scenario is measured, as the options say."""
    return MeasureSettings(
        calibration, options.repeat, options.max_seconds, options.call_timeout, options.time_budget
    )


def run_plan(
    pool: WorkerPool, plan: Plan, options: ScanOptions, calibration: Calibration | None
) -> Iterator[TaskResult]:
    """Run every task on the pool; results arrive in completion order. An entry point whose
    worker dies in one of its scenarios runs again without it (:mod:`~apiprof.engine.
    isolation.rerun`)."""
    settings = measure_settings(options, calibration)
    tasks = (
        Task(request.entry.qualname, replace(request, settings=settings))
        for request in plan.requests
    )
    return pool.run(tasks, rerun_task)
