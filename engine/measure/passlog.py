"""What a timing pass records and how long it runs: the :class:`PassLog` every mechanism fills,
the :class:`Budget` it runs for, and the sampling constants the probes and the arithmetic share.

Records (constant-time lookup, docs/mechanisms.rst): one
:class:`~apiprof.engine.measure.probes.Record` per site, indexed by dense id. Entry appends
``(cpu, wall)`` with the wall clock read last, exit ``(wall, cpu)`` with it read first. ``cpu``
is the thread-CPU clock, or -1 when that call was not sampled: the clock is a system call
(~0.3–0.6 µs), so it is read on *every* call only for sites whose calls are long (median ≥
``LONG_NS`` in the warm-up run, where two reads are a small, subtracted fraction) and on a
random 1 in ``SAMPLE_EVERY`` calls otherwise — at one rate for the whole pass
(``PassLog.cpu_every``), lowered for a site whose calls are too few for that rate to give
``MIN_CPU_SAMPLES`` in the pass's budget. Each CPU sample is stored with that rate as its weight, so CPU
histograms of passes sampled at different rates merge into an unbiased picture of the same
calls the WALL metric covers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apiprof.engine.measure.probes import Record, Site

LONG_NS = 20_000
SAMPLE_EVERY = 16
REFERENCE_EVERY = 4  # every 4th reference call also reads the CPU clock
REFERENCE_CALLS = 128
STRETCH_SECONDS = 0.002
MAX_STRETCH_RUNS = 4096
CPU_SUFFIX = "+cpu"  # calibration key suffix of probes that also read the thread-CPU clock
SAMPLED = "cpu"  # name of the wall-clock opening event of a call whose CPU clock was read


MIN_CPU_SAMPLES = 134
"""CPU samples a pass of a time budget takes of each site sampled at a rate before it ends
(unless ``CPU_EXTENSION`` budgets or ``max_seconds`` are spent): 100 after up to a quarter of
the calls are left out as preempted (costs.PREEMPTED_SHARE). A cheap function's calls are
plentiful, its CPU samples one in ``SAMPLE_EVERY``: a pass cut short on a busy machine (a few
ms of a ~200 ns leaf) kept 60–93 of them."""
CPU_EXTENSION = 4.0
"""A pass short of CPU samples runs on until this many budgets of its own time at most."""

WALL_FACTOR = 2.0
"""A pass with its minimum runs ends after this many times its budget in wall time, even when
the thread ran for less of it (:class:`Budget`)..."""
OWN_FLOOR = 0.25
"""...once the thread ran for at least this share of the budget."""


@dataclass(frozen=True)
class Budget:
    """How long one timing pass measures: at least ``min_runs`` recorded runs and ``seconds``
    of runs, never past ``max_seconds`` (an expensive scenario keeps at least one run).

    ``seconds`` is time the thread ran (preempted time does not count), but a pass that has
    its ``min_runs`` also ends after ``wall_factor × seconds`` of wall time: on a machine that
    runs the scan a third of the time a pass would otherwise last three budgets, and the
    scan's time would grow with the load while the rest of it (starting workers, storing)
    does not. At half a CPU or more a pass still gets its whole budget; below that it keeps
    ``wall_factor × seconds`` × its share of the CPU (a 200 ns function at a quarter of a CPU:
    ~5 ms of runs, about 20,000 timed calls), and never less than ``own_floor × seconds``:
    preemption comes in bursts (at load 12 on 2 cores, with the cap alone deciding, a cheap
    function was left with 100 samples)."""

    min_runs: int = 20
    seconds: float = 0.0
    max_seconds: float = 2.0
    warmup: bool = True
    wall_factor: float = WALL_FACTOR
    own_floor: float = OWN_FLOOR
    min_cpu_samples: int = MIN_CPU_SAMPLES

    def done(self, runs: int, own: float, wall: float) -> bool:
        """Whether a pass that recorded ``runs`` runs, ran ``own`` seconds and took ``wall``
        seconds (since its first stretch) has measured enough."""
        if wall > self.max_seconds:
            return True
        if runs < self.min_runs:
            return False
        if own >= self.seconds:
            return True
        return wall >= self.wall_factor * self.seconds and own >= self.own_floor * self.seconds

    def expected_runs(self, run_seconds: float) -> float:
        """Runs a pass of this budget records when each takes ``run_seconds`` (its own time);
        0 for a pass of a fixed count (no time budget), which samples at the fixed rate."""
        if self.seconds <= 0 or run_seconds <= 0:
            return 0.0
        return max(float(self.min_runs), min(self.seconds, self.max_seconds) / run_seconds)

    def wants_cpu_samples(self, own: float, wall: float) -> bool:
        """Whether a pass that has measured enough otherwise may still run for CPU samples:
        only a pass of a time budget, within ``CPU_EXTENSION`` budgets of its own time and
        ``max_seconds`` of wall time (an expensive scenario keeps its floor)."""
        return self.seconds > 0 and own < CPU_EXTENSION * self.seconds and wall <= self.max_seconds

    def remeasure_allowance(self) -> float:
        """Seconds of stretches a pass may measure again (disturbed or stalled ones): its own
        budget — a machine that stays busy would otherwise make every pass cost up to half of
        ``max_seconds`` — or, for a pass of a fixed count (no budget), half of its cap."""
        return self.seconds if self.seconds > 0 else self.max_seconds / 2


@dataclass
class PassLog:
    """Raw probe records of one timing pass, indexed by the sites' dense ids. ``ticks[i]`` holds
    the hook-call counter at each entry / exit of a ``setprofile`` site (empty otherwise);
    ``reference`` the (entries, exits) of the empty reference function; ``preempted`` the
    intervals the thread was preempted (perf records), which :func:`measure_calls` subtracts."""

    sites: list[Site]
    enters: list[Record]
    exits: list[Record]
    runs: int
    ticks: list[tuple[list[int], list[int]]] = field(default_factory=list)
    hooked: list[bool] = field(default_factory=list)
    reference: tuple[Record, Record] = field(default_factory=lambda: (Record(), Record()))
    preempted: list[tuple[int, int]] = field(default_factory=list)
    disturbed_runs: int = 0
    stalled_runs: int = 0  # runs of stretches the CPU ran slow around (timing.py)
    probes: str = ""  # "c" or "python" for monitoring passes
    # per site: 1 in how many calls read the CPU clock (the weight of each CPU sample)
    cpu_every: list[int] = field(default_factory=list)
    # steps (ns) of the wall and thread-CPU clocks the records were read on (clockgrain)
    clock_steps: tuple[int, int] = (1, 1)

    @property
    def preempted_ns(self) -> int:
        return sum(back - out for out, back in self.preempted)
