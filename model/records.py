"""The records that flow between pipeline stages: discover → plan → run → bucket → store.

Frozen dataclasses with documented fields; the database layer converts them to rows in one
place (``apiprof.db.store``) so fields are not spelled out again elsewhere.
"""

from __future__ import annotations

import enum
import json
import platform
import sys
import typing
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from apiprof.model.codec import from_data, to_data
from apiprof.model.histogram import Histogram

NO_SIZE = -1
"""Size value for measurements without a size axis (kept as an integer so it can be a key)."""


class Metric(enum.StrEnum):
    """What a histogram measures. The value is the stored name; ``unit`` is its native unit."""

    WALL = "wall_ns"  # elapsed wall time per call, probe overhead subtracted
    # thread CPU ("active") time per call, probe overhead subtracted; read on a sample of calls,
    # each sample counted as the calls it stands for (1 in 16 → 16), so CPU and WALL histograms
    # describe the same calls and pool alike
    CPU = "cpu_ns"
    ALLOC_INCL = "alloc_incl_bytes"  # bytes allocated by the call and everything it calls
    ALLOC_EXCL = "alloc_excl_bytes"  # bytes allocated by the function's own code only
    CALLS = "calls_per_run"  # how many times one scenario run called the function
    IO_READ = "io_read_bytes"  # bytes the call's read-family system calls returned (Linux)
    IO_WRITE = "io_write_bytes"  # bytes the call's write-family system calls accepted (Linux)
    # for APIs returning an iterator or generator: the call plus exhausting what it returned
    CONSUME_WALL = "consume_wall_ns"
    CONSUME_ALLOC = "consume_alloc_bytes"

    @property
    def unit(self) -> str:
        return _UNITS.get(self.value, "B")

    @property
    def label(self) -> str:
        return _METRIC_LABELS[self]

    @property
    def is_time(self) -> bool:
        return self.unit == "ns"

    @property
    def is_io(self) -> bool:
        return self in (Metric.IO_READ, Metric.IO_WRITE)


# read for every number a page formats (is_time): one dict, not one per call
_UNITS = {"wall_ns": "ns", "cpu_ns": "ns", "consume_wall_ns": "ns", "calls_per_run": "calls"}
_METRIC_LABELS = {
    Metric.WALL: "wall time",
    Metric.CPU: "CPU time (sampled calls)",
    Metric.ALLOC_INCL: "allocated (inclusive)",
    Metric.ALLOC_EXCL: "allocated (exclusive)",
    Metric.CALLS: "calls per run",
    Metric.IO_READ: "I/O read",
    Metric.IO_WRITE: "I/O written",
    Metric.CONSUME_WALL: "wall time to call and consume the returned iterator",
    Metric.CONSUME_ALLOC: "allocated to call and consume the returned iterator",
}


class Coverage(enum.StrEnum):
    """Why an entry point has (or lacks) a profile after a scan."""

    PROFILED = "profiled"
    NO_ARGUMENTS = "no_arguments"  # needs arguments we could not synthesise; add a scenario
    IMPORT_FAILED = "import_failed"
    BLOCKED = "blocked"  # the sandbox stopped a forbidden operation
    CRASHED = "crashed"  # the worker died (segfault, abort) or the call raised every time
    TIMED_OUT = "timed_out"
    MEMORY = "memory"  # exceeded the worker's memory cap
    SKIPPED = "skipped"  # excluded by the user or by policy (e.g. interactive/blocking APIs)
    # its module needs an optional dependency that is not installed (not a fault of the package)
    MISSING_DEPENDENCY = "missing_dependency"
    # this interpreter cannot measure it (e.g. a C-only class's constructor on Python 3.11)
    UNSUPPORTED = "unsupported"


class EntryKind(enum.StrEnum):
    FUNCTION = "function"
    BUILTIN = "builtin"  # a C function
    CLASS = "class"  # profiled as its constructor
    METHOD = "method"
    CLASSMETHOD = "classmethod"
    STATICMETHOD = "staticmethod"
    PROPERTY = "property"


class ScenarioSource(enum.StrEnum):
    FILE = "file"  # a user-written scenario file
    DOCSTRING = "docstring"  # ``>>>`` examples in the API's docstring
    SYNTHESIZED = "synthesized"  # arguments generated from annotations and defaults
    STUBS = "stubs"  # arguments typed by stub files (.pyi beside the code, types-*, typeshed)
    DOCSTRING_TYPES = "docstring_types"  # typed by the docstring (Sphinx, numpydoc, Google)
    EXAMPLES = "examples"  # literal values the package's own text passes to the callable
    FACTORIES = "factories"  # an instance from a concrete subclass or a factory of the package
    OBSERVED = "observed"  # a value an entry point of the package returned, where one was wanted
    RESULTS = "results"  # an object a working call of the package made (returned or holds)
    NODES = "nodes"  # tree nodes built from their classes' child lists; visit_X takes an X
    PATTERNS = "patterns"  # matches of the package's own regular expressions, texts they accept
    PACKAGE_DATA = "package_data"  # the package's own data files, where a path or file is wanted
    HEURISTICS = "heuristics"  # typed from parameter names and how the body uses them
    CAPTURED = "captured"  # arguments recorded while the test suite or docstring examples ran
    TESTS = "tests"  # the package's own test suite
    DRIVEN = "driven"  # arguments the package passed mid-stream while its working scenarios ran
    COLLECTED = "collected"  # measured in real programs (in-the-wild collection), not a scan
    PREPARED = "prepared"  # the receiver prepared by the sibling method that sets what it reads
    REPAIRED = "repaired"  # synthesised arguments mended by what a rejected call's error asked for


@dataclass(frozen=True)
class EntryPoint:
    """A public, callable API of a package under its one canonical qualified name."""

    qualname: str  # canonical dotted name, e.g. "json.dumps", "textwrap.TextWrapper.wrap"
    package: str
    module: str  # module the canonical name lives in, e.g. "json"
    kind: EntryKind
    signature: str = ""
    summary: str = ""  # first line of the docstring
    source_file: str = ""
    source_line: int = 0
    aliases: tuple[str, ...] = ()  # other public names re-exporting the same object

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Scenario:
    """A repeatable way to exercise one entry point (possibly at several sizes)."""

    id: str  # stable across scans, e.g. "file:scenarios/json.toml#dumps-list"
    qualname: str  # the entry point it is for
    source: ScenarioSource
    description: str = ""
    size_axis: str = ""  # name of the size parameter ("n"), empty when there is none
    setup: str = ""  # the code run before measuring (unmeasured)
    call: str = ""  # the measured code
    inputs: str = ""  # the arguments as a person reads them, to reproduce the call by hand


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


@dataclass(frozen=True)
class Environment:
    """Where a measurement was taken. Profiles merge within and across environments; the id
    lets readers split them again (e.g. "only CPython 3.12 on x86_64")."""

    python: str  # "3.12.1"
    implementation: str  # "cpython"
    system: str  # "Linux"
    machine: str  # "x86_64"
    cpu: str  # CPU model name

    @classmethod
    def current(cls) -> Environment:
        return cls(
            python=platform.python_version(),
            implementation=sys.implementation.name,
            system=platform.system(),
            machine=platform.machine(),
            cpu=_cpu_model(),
        )

    @property
    def id(self) -> str:
        import hashlib  # here: it loads OpenSSL, which collected programs need not pay for

        canonical = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Calibration:
    """Per-machine, per-interpreter probe costs measured when a profiler starts.

    ``overhead_ns`` maps an event type ("enter", "exit") to the wall-clock cost one probe adds
    inside a measured interval; ``cpu_overhead_ns`` is the same in thread CPU time.
    """

    overhead_ns: dict[str, float] = field(default_factory=dict)
    cpu_overhead_ns: dict[str, float] = field(default_factory=dict)
    timer_resolution_ns: float = 1.0
    mechanism: str = ""  # e.g. "sys.monitoring" or "sys.setprofile"
    alloc_mechanism: str = ""  # e.g. "allocator hook (_alloccount)" or "tracemalloc"
    io_mechanism: str = ""  # what counts I/O bytes; "" where nothing does (no I/O metrics then)
    # how preempted (switched-out) time is found: perf context-switch records, the involuntary
    # switch counter (flag and re-measure), or "" (nothing: wall time includes preemption)
    switch_mechanism: str = ""
    # ns the fixed reference workload took here (lower is faster): the machine-speed index
    machine_speed_ns: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return typing.cast(dict[str, Any], to_data(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        return from_data(cls, data)


@dataclass(frozen=True)
class Disturbance:
    """What measuring saw of other load on the machine; additive over passes and scenarios.

    ``runs`` scenario runs were timed; ``disturbed_runs`` of them were preempted and measured
    again (or, when no clean run came within the budget, kept); ``preempted_ns`` is the
    switched-out time subtracted from timed calls; ``reference_ns`` sums ``references`` timings of
    the short reference workload run before and after every timing pass, ``slow_references``
    of which took more than ``engine.measure.pace.SLOW_FACTOR`` times the fastest the process
    had seen (a slow phase of the CPU). ``passes`` timing
    passes were kept; ``remeasured_passes`` more were run because the machine stalled around
    one (a slow reference timing, most of a target's calls preempted), and ``stalled_passes`` of
    the kept ones still showed a stall after every attempt. ``stalled_runs`` ran in stretches of
    a pass that the reference calls around each stretch showed the CPU ran slow in (a stall in
    the middle of a pass); they were measured again, or kept when that took too long.
    ``slow_windows`` windows of passes measured in several (few runs each: a target's median
    hinges on the machine's pace in them) were left out of a target's figures for reading
    slower than its fastest window (:mod:`~apiprof.engine.measure.spread`).
    """

    runs: int = 0
    disturbed_runs: int = 0
    preempted_ns: float = 0.0
    references: int = 0
    reference_ns: float = 0.0
    slow_references: int = 0
    passes: int = 0
    remeasured_passes: int = 0
    stalled_passes: int = 0
    stalled_runs: int = 0
    slow_windows: int = 0

    def __add__(self, other: Disturbance) -> Disturbance:
        return Disturbance(
            *(getattr(self, f.name) + getattr(other, f.name) for f in fields(Disturbance))
        )

    @property
    def busy(self) -> bool:
        """Whether the machine stayed too busy for reference numbers: a quarter of the reference
        timings ran slow (the CPU was shared), half the runs were preempted, or a pass was still
        stalled after every attempt to measure it again."""
        slow = self.references and self.slow_references / self.references > 0.25
        disturbed = self.runs and (self.disturbed_runs + self.stalled_runs) / self.runs > 0.5
        return bool(slow or disturbed or self.stalled_passes)

    def to_json(self) -> dict[str, Any]:
        return typing.cast(dict[str, Any], to_data(self))


@dataclass(frozen=True)
class Measurement:
    """One profile's worth of observations: a histogram for (entry point, scenario, size, metric)."""

    qualname: str
    scenario_id: str
    metric: Metric
    histogram: Histogram
    size: int = NO_SIZE


@dataclass(frozen=True)
class CallEdge:
    """``caller`` called ``callee`` ``count`` times (qualified names, additive)."""

    caller: str
    callee: str
    count: int


class Phase(enum.StrEnum):
    """Where in a scenario something went wrong."""

    COLLECT = "collect"  # building the scenario: arguments, an instance to call a method on
    SETUP = "setup"  # the scenario's setup code
    CALL = "call"  # the measured call
    CONSUME = "consume"  # iterating the lazy result of the call


@dataclass(frozen=True)
class Failure:
    """Why something could not be measured: the kind, decided where it went wrong (a timeout,
    a refusal of the sandbox, a crash...), a sentence for a person, and — when code raised —
    the scenario, the phase, where the exception was raised and the last frames of the
    traceback."""

    kind: Coverage
    reason: str
    traceback: str = ""
    scenario: str = ""  # the scenario id ("" when no scenario was involved)
    phase: str = ""  # a Phase value, or ""
    location: str = ""  # "file:line in function" of the innermost frame of the package


@dataclass(frozen=True)
class CoverageRecord:
    qualname: str
    status: Coverage
    reason: str = ""
    failures: tuple[Failure, ...] = ()  # every failing scenario or source, in the order tried


@dataclass
class ScanBatch:
    """Everything one unit of scan work produced; stored in one transaction."""

    measurements: list[Measurement] = field(default_factory=list)
    edges: list[CallEdge] = field(default_factory=list)
    coverage: list[CoverageRecord] = field(default_factory=list)
    scenarios: list[Scenario] = field(default_factory=list)
    disturbance: Disturbance = field(default_factory=Disturbance)  # load seen while measuring
