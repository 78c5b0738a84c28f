"""Scenarios a worker died running, so that a new worker skips them and runs the rest.

A call stuck in C code (``derangements`` of 30 items drains ``itertools.permutations`` for
ever) cannot be interrupted: the worker's CPU-time stop ends the process, and a segmentation
fault or the memory cap ends it just as abruptly. So before each trial call and each measured
size the worker says which scenario runs (:class:`Running`); when the worker dies, the scanner
turns the last one into a :class:`Stop` and asks a new worker for the same entry point with the
stops so far. That worker drops each stopped scenario from its stopped size up — a smaller
size, another variant or another source still gets its chance — instead of losing the entry
point and every other scenario of it.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.model.records import NO_SIZE, Coverage, Failure, Phase


@dataclass(frozen=True)
class Running:
    """Sent by a worker just before it runs a scenario at a size: in a trial (phase
    ``collect``) or measured (phase ``call``). ``key`` tells variants sharing an id apart; an
    empty key says the trial is over (a death after it is no scenario's doing)."""

    key: str
    scenario: str
    size: int = NO_SIZE
    phase: str = "collect"


@dataclass(frozen=True)
class Stop:
    """A scenario size a worker died running, and why it died: not run again, nor larger sizes."""

    key: str
    scenario: str
    size: int = NO_SIZE
    phase: str = "collect"
    kind: Coverage = Coverage.TIMED_OUT
    reason: str = ""

    @classmethod
    def of(cls, running: Running, death: Failure) -> Stop:
        return cls(
            running.key, running.scenario, running.size, running.phase, death.kind, death.reason
        )

    def covers(self, key: str, size: int) -> bool:
        """Whether running ``key`` at ``size`` would meet this stop (this size or a larger one)."""
        if key != self.key:
            return False
        return size == self.size if NO_SIZE in (size, self.size) else size >= self.size

    def failure(self) -> Failure:
        """The failure this stop stands for, said for the coverage report."""
        at = "" if self.size == NO_SIZE else f" at size {self.size}"
        larger = "" if self.size == NO_SIZE else " (and its larger sizes)"
        where = (
            f"stopped its worker{at} in a trial call"
            if self.phase == Phase.COLLECT
            else (f"stopped its worker{at} in a measured call")
        )
        reason = (
            f"{where} ({self.reason}); this scenario{larger} was dropped and the entry point's "
            "other scenarios ran in a new worker"
        )
        return Failure(self.kind, reason, scenario=self.scenario, phase=self.phase)


def scenario_key(spec: ScenarioSpec) -> str:
    """A name for this exact scenario: its id and a digest of its code (synthesised variants
    share an id), the same in every worker."""
    digest = hashlib.sha1(f"{spec.setup}\0{spec.call}".encode(), usedforsecurity=False)
    return f"{spec.id[:400]}@{digest.hexdigest()[:12]}"


@dataclass
class Watch:
    """What the worker answering a request says before each run, and the stops it honours."""

    announce: Callable[[Running], None] = lambda running: None
    stops: Sequence[Stop] = field(default_factory=tuple)

    def stop_for(self, spec: ScenarioSpec, size: int, phase: str) -> Stop | None:
        """The stop that ``spec`` at ``size`` meets, or None after announcing that it runs."""
        key = scenario_key(spec)
        stop = next((stop for stop in self.stops if stop.covers(key, size)), None)
        if stop is None:
            self.announce(Running(key, spec.id, size, phase))
        return stop

    def idle(self) -> None:
        """Say that no scenario runs now."""
        self.announce(IDLE)


IDLE = Running("", "")


WATCH = Watch()
"""The watch of the request being answered (the default one announces to nobody)."""


@contextlib.contextmanager
def watching(announce: Callable[[Running], None], stops: Sequence[Stop]) -> Iterator[Watch]:
    """Announce runs to ``announce`` and honour ``stops`` while a request is answered."""
    saved = WATCH.announce, WATCH.stops
    WATCH.announce, WATCH.stops = announce, tuple(stops)
    try:
        yield WATCH
    finally:
        WATCH.announce, WATCH.stops = saved
