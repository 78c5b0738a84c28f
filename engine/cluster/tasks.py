"""What runs on a Dask worker: one scan task in a child process, its database handed back.

A task never runs package code in the Dask worker's own process. It starts
``python -m apiprof.engine.cluster.runner`` — an ordinary ``apiprof-scan`` of one package or
batch, with its own sandboxed scan workers, limits and timeouts — and waits for it with a
deadline, killing its whole process group when the deadline passes. Whatever happens to the
scan (a crash, a hang, memory), the Dask worker lives on and returns a :class:`TaskOutput` that
says what happened, with the scan's SQLite file as bytes when there is one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiprof.engine.cluster.environments import environment_for, requested_distribution

RUNNER = "apiprof.engine.cluster.runner"
OUTPUT_TAIL = 2000
"""Characters of a failed runner's output kept for the report."""


@dataclass(frozen=True)
class ScanTask:
    """One unit of cluster work: scan ``package`` (only the entry points in ``only``, when
    given) with ``options``, in a virtualenv built from ``requirement`` when there is one.

    A package's first task (``only`` empty) discovers it; when it has more than ``batch_size``
    entry points it scans the first ``batch_size`` of them (in name order) and hands the full
    list back, so the rest become batches of their own."""

    package: str
    options: dict[str, Any]  # ScanOptions.to_json()
    requirement: str = ""  # a pip requirement line; "" = the Dask worker's own environment
    only: tuple[str, ...] = ()
    batch: int = 0  # which batch of the package this is
    batch_size: int = 0  # entry points per batch; 0 = never split
    timeout: float = 3600.0  # seconds for the whole task; its scan is killed after

    @property
    def id(self) -> str:
        """Stable for the same inputs, so a resumed or retried task is recognised."""
        key = [self.package, self.requirement, sorted(self.only), self.batch_size, self.options]
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class TaskOutput:
    """What became of a task on its Dask worker."""

    task_id: str
    package: str
    status: str  # the scan's status ("finished"), or "failed": no database, nothing to add
    reason: str = ""
    database: bytes = b""  # the task's own SQLite file, added to the local store by the client
    summary: dict[str, Any] = field(default_factory=dict)  # ScanSummary.to_json()
    worker: str = ""  # where it ran: host name, Python, machine
    elapsed_seconds: float = 0.0
    # a first task's whole package, when it was too large for one task (the rest to plan)
    entry_points: tuple[str, ...] = ()


def run_task(task: ScanTask) -> TaskOutput:
    """Run one scan task in a child process (called on a Dask worker)."""
    started = time.monotonic()
    where = f"{socket.gethostname()} (Python {platform.python_version()}, {platform.machine()})"
    with tempfile.TemporaryDirectory(prefix="apiprof-cluster-") as scratch:
        try:
            python = environment_for(task.requirement) if task.requirement else sys.executable
        except RuntimeError as error:
            return TaskOutput(task.id, task.package, "failed", str(error), worker=where)
        db_path, summary_path = Path(scratch, "scan.db"), Path(scratch, "summary.json")
        listing = Path(scratch, "entry_points.json")
        spec = {
            "mode": "scan",
            "package": task.package,
            # a batch's entry points, or else those the user chose with --only (if any)
            "options": {**task.options, "only": list(task.only or task.options.get("only", ()))},
            "db": str(db_path),
            "summary": str(summary_path),
            "batch_size": 0 if task.only else task.batch_size,
            "entry_points": str(listing),
        }
        status, reason = run_runner(python, spec, scratch, task.timeout)
        elapsed = time.monotonic() - started
        # all or nothing: a task that did not finish its scan adds nothing (--resume reruns it)
        if status != "finished" or not summary_path.exists():
            return TaskOutput(
                task.id, task.package, "failed", reason, worker=where, elapsed_seconds=elapsed
            )
        summary = json.loads(summary_path.read_text())
        names = tuple(json.loads(listing.read_text())) if listing.exists() else ()
        return TaskOutput(
            task.id,
            task.package,
            str(summary.get("status", "finished")),
            reason,
            db_path.read_bytes(),
            summary,
            where,
            elapsed,
            names,
        )


def packages_of(requirement: str, timeout: float = 600.0) -> list[str]:
    """The import packages the distribution of a requirement line installs, in its own
    virtualenv (called on a Dask worker; builds the environment on first use)."""
    with tempfile.TemporaryDirectory(prefix="apiprof-cluster-") as scratch:
        python = environment_for(requirement)
        listing = Path(scratch, "packages.json")
        distribution = requested_distribution(requirement)
        spec = {"mode": "packages", "distribution": distribution, "output": str(listing)}
        status, reason = run_runner(python, spec, scratch, timeout)
        if status != "finished" or not listing.exists():
            raise RuntimeError(f"{requirement}: {reason}")
        return list(json.loads(listing.read_text()))


def run_runner(python: str, spec: dict[str, Any], scratch: str, timeout: float) -> tuple[str, str]:
    """Run the scan runner on ``spec`` with a deadline: ("finished", "") or (status, reason)."""
    spec_path = Path(scratch, "task.json")
    spec_path.write_text(json.dumps(spec))
    log_path = Path(scratch, "runner.log")
    with open(log_path, "w+b") as log:
        process = subprocess.Popen(
            [python, "-m", RUNNER, str(spec_path)],
            cwd=scratch,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its scan workers too: one killpg ends them all
        )
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return "failed", f"the task ran past its {timeout:g} s limit and was stopped"
        finally:
            _kill_group(process.pid)
        if code == 0:
            return "finished", ""
        log.seek(max(0, log.seek(0, os.SEEK_END) - OUTPUT_TAIL))
        tail = log.read().decode(errors="replace").strip().splitlines()
        last = tail[-1] if tail else "no output"
        return "failed", f"the scan exited with code {code}: {last}"


def _kill_group(pid: int) -> None:
    """Whatever the runner left behind in its process group (stray scan workers) ends now."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
