"""How a pool's workers are started and policed (shared by the pool and the ways of starting)."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from apiprof.engine.isolation import confine
from apiprof.engine.isolation.confine import Isolation


class Start(enum.StrEnum):
    """How a fresh worker comes to be (``--worker-start``)."""

    ZYGOTE = "zygote"  # forked from a confined process that did the interpreter's set-up once
    FRESH = "fresh"  # a new interpreter under its own sandbox for every worker


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
    start: Start = Start.ZYGOTE

    def readable_paths(self) -> list[str]:
        """Everything a confined worker must be able to read (bound read-only)."""
        extra = self.env.get("PYTHONPATH", "").split(os.pathsep)
        return confine.python_paths([*self.readable, *extra])
