"""What crosses the pipe between the scanner and a worker: typed messages, checked on arrival.

Requests (scanner → worker) and replies (worker → scanner) are frozen dataclasses. On the wire
each is one line of UTF-8 JSON, ``{"type": NAME, "id": TASK_ID, "body": {...}}``, encoded and
decoded by :mod:`apiprof.model.codec`, so a field is declared once, here or on the record it
carries. The scanner trusts nothing a worker sends: a line longer than
:data:`MAX_MESSAGE_BYTES` (or more than :data:`MAX_TASK_BYTES` for one task), JSON nested too
deep, an unknown message type or a body that does not match its declared types is a
:class:`ProtocolError`, which ends that worker — never the scan. What a well-formed reply says is
then checked against the task it answers (:mod:`~apiprof.engine.isolation.contract`).

A request that fails carries a :class:`~apiprof.model.records.Failure` whose kind was decided
where the failure happened (a timeout, a refusal of the guard, a crash), so the scanner never
infers it from message text.
"""

from __future__ import annotations

import enum
import json
import os
import signal
from dataclasses import dataclass, field
from typing import Any

from apiprof.engine.discovery.discover import Discovery
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.partial import PartialArgument
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.engine.scenarios.stops import Running, Stop
from apiprof.model.codec import DecodeError, from_data, to_data
from apiprof.model.records import (
    NO_SIZE,
    Calibration,
    CallEdge,
    Disturbance,
    EntryPoint,
    Failure,
    Measurement,
)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""A line longer than this is a broken or hostile worker, not something to buffer."""
MAX_TASK_BYTES = 48 * 1024 * 1024
"""All a worker may send for one task (its final reply and every partial one together)."""


class ProtocolError(Exception):
    """A worker sent something that is not a valid message; the worker is ended for it."""


# -- requests: scanner -> worker -----------------------------------------------------------------


@dataclass(frozen=True)
class MeasureSettings:
    """How hard to measure: probe costs, and per-pass and per-call bounds. Each timing pass
    runs at least ``repeat`` times and for ``time_budget`` seconds, never past
    ``max_seconds``."""

    calibration: Calibration | None = None
    repeat: int = 20
    max_seconds: float = 2.0
    call_timeout: float = 10.0
    time_budget: float = 0.01


@dataclass(frozen=True)
class Ping:
    """Is the worker alive? Answered with :class:`Pong`."""


@dataclass(frozen=True)
class Call:
    """Call ``module:function`` with JSON arguments (tests of isolation, without the profiler)."""

    target: str
    args: list[Any] = field(default_factory=list)
    call_timeout: float = 0.0


@dataclass(frozen=True)
class Calibrate:
    """Measure probe costs in the interpreter that will be measured."""


@dataclass(frozen=True)
class Discover:
    """Import the package, list its entry points, read scenario files."""

    package: str
    scenario_files: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ProfileEntry:
    """Collect an entry point's docstring and synthesised scenarios (``profile=False``: only
    that) and profile them with its file scenarios, streaming one :class:`ScenarioOutcome` per
    scenario size before the final :class:`EntryFinished`."""

    package: str
    entry: EntryPoint
    specs: list[ScenarioSpec] = field(default_factory=list)
    docstrings: bool = True
    synthesize: bool = True
    sizes: list[int] = field(default_factory=list)
    profile: bool = True
    # argument sources beyond annotations (engine.scenarios.synth.SOURCES), the enabled ones
    sources: list[str] = field(default_factory=list)
    captured: list[CapturedCall] = field(default_factory=list)  # calls seen in examples/tests
    # drivers re-run measuring only this entry point (self-driven capture), tried in order
    # when nothing else gives it a scenario
    drivers: list[ScenarioSpec] = field(default_factory=list)
    settings: MeasureSettings = field(default_factory=MeasureSettings)
    # after a worker died on this entry point: what stopped it (not run again), and the sizes
    # it sent already (measured, or failed: not run again either)
    stops: list[Stop] = field(default_factory=list)
    measured: list[Running] = field(default_factory=list)
    ended: list[Running] = field(default_factory=list)


@dataclass(frozen=True)
class CaptureExamples:
    """Run the package's docstring examples and record the arguments its entry points get."""

    package: str
    entries: list[EntryPoint] = field(default_factory=list)
    budget: float = 90.0
    stops: list[Stop] = field(default_factory=list)  # examples that stopped an earlier worker


@dataclass(frozen=True)
class DriveCapture:
    """Run the package's working scenarios as drivers and record the arguments the watched
    entry points receive mid-stream (:mod:`~apiprof.engine.scenarios.drive`)."""

    package: str
    watched: list[str] = field(default_factory=list)
    drivers: list[ScenarioSpec] = field(default_factory=list)
    budget: float = 30.0


@dataclass(frozen=True)
class RunSuite:
    """Run the package's pytest suite under the profiler, every entry point a target."""

    package: str
    path: str
    scenario_id: str
    targets: list[str] = field(default_factory=list)
    settings: MeasureSettings = field(default_factory=MeasureSettings)
    capture: bool = True  # record the arguments entry points receive in the warm-up run
    # the entry points with their source locations, matched however the suite imports them
    entries: list[EntryPoint] = field(default_factory=list)
    budget: float = 0.0  # seconds all runs may take (--tests-timeout); 0: no limit


Request = (
    Ping | Call | Calibrate | Discover | CaptureExamples | DriveCapture | ProfileEntry | RunSuite
)

# -- replies: worker -> scanner ------------------------------------------------------------------


@dataclass(frozen=True)
class Ready:
    """The first line a worker writes: it started, confined itself and installed its reporter.
    ``listener`` is the descriptor of its system-call filter's notifications (-1: none), for
    the scanner to take before it sends the first request."""

    pid: int
    listener: int = -1


class Blame(enum.StrEnum):
    """Whose code made an attempt."""

    ENTRY = "entry"  # the entry point being profiled (or the request being answered)
    IMPORT = "import"  # a module's top-level code, while it was being imported
    THREAD = "thread"  # a background thread (of the entry point, or of an import: ``module``)


@dataclass(frozen=True)
class Attempt:
    """Something package code tried that the sandbox forbids, and whose code tried it."""

    reason: str  # e.g. "tried to delete /home/me/notes.txt outside the sandbox"
    blame: Blame = Blame.ENTRY
    module: str = ""  # the module being imported (IMPORT, or a THREAD started by an import)

    @property
    def by_entry(self) -> bool:
        """The entry point's own doing (its code, or a thread it started), not an import's."""
        return self.blame is Blame.ENTRY or not self.module


@dataclass(frozen=True)
class Attempted:
    """Sent the moment the in-process reporter sees an attempt (so erasing a log later cannot
    hide it)."""

    attempt: Attempt


@dataclass(frozen=True)
class Imported:
    """The modules a request needs are imported: what follows is the request's own work."""


@dataclass(frozen=True)
class Pong:
    pid: int
    cwd: str


@dataclass(frozen=True)
class CallDone:
    result: str  # repr of the return value, truncated


@dataclass(frozen=True)
class Calibrated:
    calibration: Calibration


@dataclass(frozen=True)
class Discovered:
    discovery: Discovery
    specs: list[ScenarioSpec] = field(default_factory=list)


@dataclass(frozen=True)
class Captured:
    calls: list[CapturedCall] = field(default_factory=list)


@dataclass(frozen=True)
class Driven:
    """The answer to :class:`DriveCapture`: the calls captured, and which watched entry points
    each driver (a scenario id, or a round trip ``CONSUMER <- PRODUCER``) reached."""

    calls: list[CapturedCall] = field(default_factory=list)
    reach: dict[str, list[str]] = field(default_factory=dict)
    drivers_run: int = 0


@dataclass(frozen=True)
class ScenarioOutcome:
    """One size of one scenario: its measurements, or why there are none (sent at once, so a
    later crash of the worker loses nothing already measured)."""

    scenario: ScenarioSpec
    size: int = NO_SIZE
    measurements: list[Measurement] = field(default_factory=list)
    edges: list[CallEdge] = field(default_factory=list)
    failure: Failure | None = None
    slowest_run_seconds: float = 0.0
    disturbance: Disturbance = field(default_factory=Disturbance)  # load seen while measuring


@dataclass(frozen=True)
class EntryFinished:
    """The end of a :class:`ProfileEntry`: the collected scenarios when only collecting, and
    why the automatic sources found none (``unscenarioed``), if they did not."""

    specs: list[ScenarioSpec] = field(default_factory=list)
    unscenarioed: Failure | None = None
    failures: list[Failure] = field(default_factory=list)  # every failed attempt to collect
    # when only collecting and nothing worked: the best value found per parameter (scaffolds)
    partial: list[PartialArgument] = field(default_factory=list)


@dataclass(frozen=True)
class SuiteFinished:
    """What one profiled test-suite run produced."""

    runs: int
    exit_code: int
    outcomes: dict[str, int]
    measurements: list[Measurement] = field(default_factory=list)
    edges: list[CallEdge] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    problem: str = ""  # why no test ran, when none did
    captured: list[CapturedCall] = field(default_factory=list)  # arguments seen in the warm-up
    seconds: list[float] = field(default_factory=list)  # wall time of each run, warm-up first
    notes: list[str] = field(default_factory=list)  # e.g. options dropped for absent plugins
    phases: dict[str, float] = field(default_factory=dict)  # seconds by step (SuiteRunner.phases)
    failures: dict[str, str] = field(default_factory=dict)  # failing tests of the warm-up: why


@dataclass(frozen=True)
class Failed:
    """The request failed as a whole (its kind says how)."""

    failure: Failure


@dataclass(frozen=True)
class Refused:
    """apiprof itself refused the request (e.g. the package is not installed): the scanner
    raises the same :class:`~apiprof.errors.ApiprofError` subclass, named by ``code``."""

    code: str
    message: str


Reply = (
    Ready
    | Attempted
    | Imported
    | Pong
    | CallDone
    | Calibrated
    | Discovered
    | Captured
    | Driven
    | ScenarioOutcome
    | Running
    | EntryFinished
    | SuiteFinished
    | Failed
    | Refused
)

REQUESTS: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Ping,
        Call,
        Calibrate,
        Discover,
        CaptureExamples,
        DriveCapture,
        ProfileEntry,
        RunSuite,
    )
}
REPLIES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Ready,
        Attempted,
        Imported,
        Pong,
        CallDone,
        Calibrated,
        Discovered,
        Captured,
        Driven,
        ScenarioOutcome,
        Running,
        EntryFinished,
        SuiteFinished,
        Failed,
        Refused,
    )
}
PARTIAL = (ScenarioOutcome, Running, Attempted, Imported)
"""Replies that come before a request's final reply."""


@dataclass(frozen=True)
class Envelope:
    """A message and the task it belongs to."""

    id: str
    message: Any


# -- encoding ------------------------------------------------------------------------------------


def encode(task_id: str, message: object) -> bytes:
    body = to_data(message)
    line = {"type": type(message).__name__, "id": task_id, "body": body}
    return (json.dumps(line, separators=(",", ":"), allow_nan=False) + "\n").encode()


_TIMER_SIGNALS = {signal.SIGALRM, signal.SIGPROF}


def write_message(fd: int, task_id: str, message: object) -> None:
    """Write one message to a raw file descriptor, retrying short writes. The call timers are
    held off meanwhile, so a timeout cannot leave half a line on the pipe."""
    data = memoryview(encode(task_id, message))
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _TIMER_SIGNALS)
    try:
        while data:
            written = os.write(fd, data)
            data = data[written:]
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def decode(line: bytes, allowed: dict[str, type]) -> Envelope:
    """One message from one line, or :class:`ProtocolError` saying what is wrong with it."""
    try:
        raw = json.loads(line)
    except RecursionError:
        raise ProtocolError("a message nests deeper than JSON decoding allows") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ProtocolError(f"a message is not valid JSON ({error})") from None
    if not (isinstance(raw, dict) and set(raw) == {"type", "id", "body"}):
        raise ProtocolError("a message is not an object with exactly type, id and body")
    kind, task_id = raw["type"], raw["id"]
    if not isinstance(task_id, str) or len(task_id) > 4096:
        raise ProtocolError("a message has no valid task id")
    cls = allowed.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ProtocolError(f"unknown message type {str(kind)[:60]!r}")
    try:
        return Envelope(task_id, from_data(cls, raw["body"]))
    except DecodeError as error:
        raise ProtocolError(f"malformed {kind} message: {error}") from None
    except RecursionError:
        raise ProtocolError(f"a {kind} message nests too deep") from None


class LineReader:
    """Splits bytes arriving on a pipe into complete messages of the ``allowed`` types, and
    counts them: :meth:`start_task` sets how many more bytes may arrive."""

    def __init__(self, allowed: dict[str, type], budget: int = MAX_TASK_BYTES) -> None:
        self.allowed = allowed
        self._buffer = bytearray()
        self.budget = budget

    def start_task(self, budget: int = MAX_TASK_BYTES) -> None:
        self.budget = budget

    def feed(self, data: bytes) -> list[Envelope]:
        self.budget -= len(data)
        if self.budget < 0:
            raise ProtocolError(
                f"sent more than {MAX_TASK_BYTES // (1024 * 1024)} MiB for one task"
            )
        self._buffer += data
        messages = []
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if len(line) > MAX_MESSAGE_BYTES:
                raise ProtocolError(f"a message of {len(line)} bytes is over the limit")
            if line.strip():
                messages.append(decode(line, self.allowed))
        if len(self._buffer) > MAX_MESSAGE_BYTES:
            raise ProtocolError("a message grew past the size limit without ending")
        return messages
