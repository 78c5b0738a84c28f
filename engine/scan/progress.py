"""Progress of a running scan: the events a display is fed, and which entry points run now."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ScanProgress:
    """Reported to the ``progress`` callback after every step."""

    # "isolation", "calibrate", "discover", "capture", "tests" (only with --tests), "profile",
    # "drive" (the self-driven capture, after the others), "done"
    stage: str
    done: int = 0
    total: int = 0
    qualname: str = ""  # the entry point just finished (profile stage)
    status: str = ""  # its coverage status; the level reached (isolation stage)
    detail: str = ""  # what that level consists of, and why it is not strict (isolation stage)
    running: tuple[str, ...] = ()  # the entry points being profiled now
    eta_seconds: float | None = None  # estimated seconds until the profile stage ends


class ProgressTracker:
    """Which entry points are running now and when the rest should be done.

    The pool starts tasks in plan order and starts the next one as soon as one finishes, so the
    ones running are the first ``jobs`` of the plan that have not finished. The ETA is the mean
    time per finished entry point so far times those left, divided among the workers' finishes.
    """

    def __init__(self, order: list[str], jobs: int, clock: Callable[[], float] = time.monotonic):
        self.order, self.jobs, self.clock = order, max(jobs, 1), clock
        self.done: set[str] = set()
        self.started = clock()
        self.last = ("", "")

    def finished(self, qualname: str, status: str) -> None:
        self.done.add(qualname)
        self.last = (qualname, status)

    def running(self) -> tuple[str, ...]:
        pending = (name for name in self.order if name not in self.done)
        return tuple(itertools.islice(pending, self.jobs))

    def eta_seconds(self) -> float | None:
        if not self.done:
            return None
        per_entry = (self.clock() - self.started) / len(self.done)
        return per_entry * (len(self.order) - len(self.done))

    def event(self) -> ScanProgress:
        return ScanProgress(
            "profile",
            len(self.done),
            len(self.order),
            self.last[0],
            self.last[1],
            running=self.running(),
            eta_seconds=self.eta_seconds(),
        )
