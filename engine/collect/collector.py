"""The collector inside a collected program: choose APIs, keep their probes within budget,
summarise into the spool.

It has no thread of its own: :mod:`~apiprof.engine.collect.bootstrap` gives it a turn after the
program's garbage collections, and it ticks after every so much of the program's own CPU work
(not of wall time: on a busy machine a program may get a tenth of a CPU, and ticks paced by the
clock would then cost ten times their share):

* new modules in ``sys.modules`` bring new candidates; each is drawn with the configured rate
  and queued, and queued APIs are instrumented while fewer than the limit are, skipping one that
  shares a call stack with an instrumented API;
* the **budget**: everything collection costs the program — the start-up on the main thread,
  the CPU time of its turns (imports, choosing, reading records, writing summaries) and every probed
  call at the probes' measured cost — is kept at or below ``budget`` × the CPU time the program
  itself has used (not its wall time: on a busy machine, or in a program that mostly waits, wall
  time runs far ahead of the work done, and 1 % of it would be more than 1 % of the work). Past
  it, every probe is switched off until the program has worked long enough to pay for more; the
  ticks also come further apart the less budget is left;
* records are read into log2 tallies (WALL for every call, CPU for the sampled ones); an API
  that has given ``samples`` calls makes room for the next one drawn, and so does one the
  program has not called during ``IDLE_CPU_NS`` of its probed work while others wait (most
  drawn APIs are never called by a given program: they must not hold the few places);
* every ``interval`` seconds, and when the program exits, the tallies become one batch in the
  spool (then start from zero), and a spool past the upload threshold starts a detached
  uploader.

Nothing here may disturb the host program: every entry point catches ``Exception`` and turns
collection off rather than raise.
"""

from __future__ import annotations

import contextlib
import os
import platform
import random
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from apiprof.engine.collect.choose import (
    Candidate,
    ListedCandidates,
    ReferenceCandidates,
    draw,
    resolve,
)
from apiprof.engine.collect.config import COLLECT_ENV, CollectConfig
from apiprof.engine.collect.paths import Layout
from apiprof.engine.collect.slots import Slot, acquire_slot
from apiprof.engine.collect.spool import spool_bytes, write_batch
from apiprof.engine.collect.state import (
    machine_speed,
    save_machine_speed,
    save_program_cost,
    save_setup_cost,
)
from apiprof.engine.collect.wire import ApiSample, Batch, new_batch_id
from apiprof.engine.measure.live import LiveCosts, LiveProbes
from apiprof.engine.measure.speed import machine_speed_ns
from apiprof.model.histogram import IntTally
from apiprof.model.records import Metric

if TYPE_CHECKING:
    import subprocess

MIN_TICK = 0.05  # seconds of the program's CPU work between ticks, at least
MAX_TICK = 2.0  # seconds of the program's CPU work between ticks, at most
ASSUMED_PROBE_SHARE = 0.5  # worst-case share of program time probes take until measured
SPEED_COST_NS = 12_000_000  # what measuring the machine-speed index costs, about
IDLE_CPU_NS = 1_000_000_000  # program CPU time with probes on and no call before an API gives way


@dataclass
class _Measured:
    candidate: Candidate
    kind: str
    samples: int = 0
    seen: int = 0  # samples at the last look
    idle_ns: int = 0  # program CPU time with probes on since the last look that found calls


@dataclass
class _Tallies:
    module: str
    kind: str
    version: str
    metrics: dict[Metric, IntTally] = field(
        default_factory=lambda: {Metric.WALL: IntTally(), Metric.CPU: IntTally()}
    )

    @property
    def count(self) -> int:
        return sum(c[0] for c in self.metrics[Metric.WALL].cells.values())


def package_version(package: str) -> str:
    """The package's ``__version__``, else its installed distribution's version, else "" (the
    standard library's modules go with the Python version a batch names anyway)."""
    version = getattr(sys.modules.get(package), "__version__", None)
    if isinstance(version, str) and 0 < len(version) <= 64:
        return version
    if package in sys.stdlib_module_names:
        return ""
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except Exception:
        return ""


class Collector:
    def __init__(
        self,
        layout: Layout,
        config: CollectConfig,
        started_ns: int,
        main_thread_ns: int,
        started_cpu_ns: int = 0,
    ) -> None:
        self.layout, self.config = layout, config
        self.started_ns = started_ns
        self.started_cpu_ns = started_cpu_ns  # the process's CPU time when collection began
        self.main_thread_ns = main_thread_ns  # the start-up hook's work
        self.own_ns = 0  # CPU time of the collector's turns (imports, ticks, closing)
        self.next_tick_cpu = 0.0  # the program's CPU time at which the next tick is due
        self.slot: Slot | None = None
        self.source: ReferenceCandidates | ListedCandidates | None = None
        self.probes: LiveProbes | None = None
        self.rng = random.Random()
        self.seen_modules: set[str] = set()
        self.modules_count = 0
        self.queue: list[Candidate] = []
        self.active: dict[int, _Measured] = {}
        self.done: set[str] = set()
        self.measured: set[str] = set()  # APIs with at least one measured call
        self.tallies: dict[str, _Tallies] = {}
        self.versions: dict[str, str] = {}
        self.speed_ns: float | None = None
        self.last_flush_ns = started_ns
        self.last_spent, self.last_tick_cpu = 0.0, 0
        self.probe_share = ASSUMED_PROBE_SHARE
        self.tick_cost_ns = 0.0
        self.uploaders: list[subprocess.Popen[bytes]] = []
        self.closed = False

    # -- lifecycle ---------------------------------------------------------------------------
    def begin(self) -> bool:
        """Take a program slot (unless the machine is busy or every slot is taken) and set the
        probes up; False if this program is not collected."""
        cpu0 = time.thread_time_ns()
        try:
            if self.config.max_load and _load_per_cpu() > self.config.max_load:
                ready = False
            else:
                self.slot = acquire_slot(self.layout, self.config.max_programs)
                ready = self.slot is not None and self._setup()
        except Exception:
            ready = False
        self.own_ns += time.thread_time_ns() - cpu0
        if not ready:
            self._shutdown()
            return False
        save_setup_cost(self.layout, self.own_ns)
        return True

    def turn(self) -> float:
        """The collector's turn (after a garbage collection): tick if the program has done
        enough work since the last tick or a summary is due. Returns the ``perf_counter_ns``
        before which the next turn has nothing to do (infinity once collection is off)."""
        cpu0 = time.thread_time_ns()
        try:
            flush_at = self.last_flush_ns + self.config.interval * 1e9
            missing = self.next_tick_cpu - self.program_cpu_ns()
            if missing <= 0 or time.perf_counter_ns() >= flush_at:
                delay = self._tick()
                tick = time.thread_time_ns() - cpu0
                self.tick_cost_ns = 0.8 * self.tick_cost_ns + 0.2 * tick
                missing = delay * 1e9
                self.next_tick_cpu = self.program_cpu_ns() + missing
                flush_at = self.last_flush_ns + self.config.interval * 1e9
        except Exception:
            self._shutdown()
            return float("inf")
        finally:
            self.own_ns += time.thread_time_ns() - cpu0
        # the program's CPU time grows no faster than the clock with one busy thread
        return min(time.perf_counter_ns() + missing, flush_at)

    def _setup(self) -> bool:
        if self.config.apis:
            self.source = ListedCandidates(self.config.apis)
        else:
            path = self.config.reference_path(self.layout)
            if not path.is_file():
                return False
            self.source = ReferenceCandidates(path)
        self.probes = LiveProbes()
        self.speed_ns = machine_speed(self.layout)
        return True

    def close(self) -> None:
        """At exit: read the last records, remove every probe, write the final summary, free
        the slot."""
        t0 = time.thread_time_ns()
        if self.closed:
            return
        self.closed = True
        try:
            if self.probes is not None:
                self._absorb(self.probes.drain())
                self.probes.close()
                self._flush(final=True)
                self.own_ns += time.thread_time_ns() - t0
                save_program_cost(self.layout, self.cost_report())
        finally:
            self._release()

    def _shutdown(self) -> None:
        """Collection off for the rest of this program (nothing to collect, or a failure)."""
        self.closed = True
        if self.probes is not None:
            with contextlib.suppress(Exception):
                self.probes.close()
            self.probes = None
        self._release()

    def _release(self) -> None:
        if self.source is not None:
            with contextlib.suppress(Exception):
                self.source.close()
            self.source = None
        if self.slot is not None:
            self.slot.release()
            self.slot = None

    def after_fork_in_child(self) -> bool:
        """A forked child is a program of its own: the parent's calls stay the parent's, and the
        child collects only if it gets a slot. True if it goes on collecting."""
        self.tallies.clear()
        self.uploaders.clear()
        if self.slot is not None:
            self.slot.release()  # the parent keeps the lock through its own descriptor
            self.slot = None
        if self.closed or self.probes is None:
            return False
        self.probes.drain()  # calls made before the fork are the parent's
        self.started_ns = self.last_flush_ns = time.perf_counter_ns()
        self.started_cpu_ns = time.process_time_ns()  # the child's own CPU clock
        self.main_thread_ns, self.own_ns, self.last_spent = 0, 0, 0.0
        self.last_tick_cpu, self.next_tick_cpu = 0, 0.0
        self.slot = acquire_slot(self.layout, self.config.max_programs)
        if self.slot is None:
            self._shutdown()
            return False
        return True

    def cost_report(self) -> dict[str, float | int]:
        """What collection cost this program, as the collector accounts it (kept locally for
        `apiprof collect status`, never uploaded)."""
        assert self.probes is not None
        elapsed = time.perf_counter_ns() - self.started_ns
        program = self.program_cpu_ns()
        spent = self.spent_ns()
        return {
            "elapsed_s": elapsed / 1e9,
            "program_cpu_s": program / 1e9,
            "spent_ms": spent / 1e6,
            "share": spent / program if program > 0 else 0.0,
            "budget": self.config.budget,
            "probed_calls": self.probes.calls(),
            "probe_cost_ns": self.probes.probe_cost_ns,
            "collector_cpu_ms": self.own_ns / 1e6,
            "main_thread_ms": self.main_thread_ns / 1e6,
            "apis_measured": len(self.measured),
        }

    # -- one tick ------------------------------------------------------------------------------
    def spent_ns(self) -> float:
        assert self.probes is not None
        return self.main_thread_ns + self.own_ns + self.probes.calls() * self.probes.probe_cost_ns

    def program_cpu_ns(self) -> int:
        """CPU time the program itself has used since collection began (the budget's base: on
        a busy machine a program's wall time runs far ahead of the work it does)."""
        return time.process_time_ns() - self.started_cpu_ns - self.own_ns

    def _tick(self) -> float:
        """One round of bookkeeping; returns the seconds of the program's CPU work until the
        next (at least enough for ticks to cost a quarter of the budget at most)."""
        probes = self.probes
        assert probes is not None
        now = time.perf_counter_ns()
        program = self.program_cpu_ns()
        allowance = self.config.budget * program
        spent = self.spent_ns()
        window = max(1, program - self.last_tick_cpu)
        if not probes.paused:
            self.probe_share = max(self.config.budget, (spent - self.last_spent) / window)
        self.last_spent, self.last_tick_cpu = spent, program
        if spent > allowance:
            self._absorb(probes.pause())
            delay = (spent - allowance) / max(self.config.budget, 1e-9) / 1e9
        else:
            self._discover()
            self._fill()
            if self.speed_ns is None and allowance - spent > 2 * SPEED_COST_NS:
                self.speed_ns = machine_speed_ns()
                save_machine_speed(self.layout, self.speed_ns)
            self._absorb(probes.drain())
            self._retire(window if not probes.paused else 0)
            probes.resume()
            delay = (allowance - spent) / self.probe_share / 1e9
        if now - self.last_flush_ns >= self.config.interval * 1e9:
            self._flush(final=False)
        self.uploaders = [p for p in self.uploaders if p.poll() is None]
        floor = max(MIN_TICK, self.tick_cost_ns / max(self.config.budget, 1e-9) / 4e9)
        return min(MAX_TICK, max(floor, delay))

    def _discover(self) -> None:
        """Draw from the candidates of modules imported since the last look."""
        assert self.source is not None
        if len(sys.modules) == self.modules_count:
            return
        self.modules_count = len(sys.modules)
        new = []
        for name, module in list(sys.modules.items()):
            if name in self.seen_modules:
                continue
            spec = getattr(module, "__spec__", None)
            if getattr(spec, "_initializing", False):
                self.modules_count = -1  # look again: this one is still being imported
                continue
            self.seen_modules.add(name)
            new.append(name)
        if new:
            self.queue += draw(self.source.for_modules(new), self.config.rate, self.rng)

    def _fill(self) -> None:
        """Instrument queued APIs while fewer than the limit are, never two sharing a stack."""
        assert self.probes is not None and self.source is not None
        limit = self.config.apis_at_once
        waiting = []
        while self.queue and (limit is None or len(self.active) < limit):
            candidate = self.queue.pop(0)
            if candidate.qualname in self.done:
                continue
            if any(
                self.source.shares_stack(candidate.qualname, m.candidate.qualname)
                for m in self.active.values()
            ):
                waiting.append(candidate)
                continue
            found = resolve(candidate)
            handle = self.probes.watch(found[0]) if found else None
            if handle is None or found is None:
                self.done.add(candidate.qualname)
                continue
            self.active[handle] = _Measured(candidate, found[1])
            package = candidate.module.split(".", 1)[0]
            if package not in self.versions:
                self.versions[package] = package_version(package)
        self.queue[:0] = waiting

    def _retire(self, probed_ns: int = 0) -> None:
        """Make room: APIs with enough samples, and (while others wait) APIs not called during
        ``IDLE_CPU_NS`` of the program's work with probes on (``probed_ns`` more since the last
        tick)."""
        assert self.probes is not None
        for handle, measured in list(self.active.items()):
            if measured.samples != measured.seen:
                measured.seen, measured.idle_ns = measured.samples, 0
            else:
                measured.idle_ns += probed_ns
            idle = measured.idle_ns >= IDLE_CPU_NS and bool(self.queue)
            if measured.samples >= self.config.samples or idle:
                self._absorb({handle: self.probes.unwatch(handle)})
                del self.active[handle]
                self.done.add(measured.candidate.qualname)

    def _absorb(self, costs: dict[int, LiveCosts]) -> None:
        for handle, cost in costs.items():
            measured = self.active.get(handle)
            if measured is None or not cost.wall_ns:
                continue
            measured.samples += len(cost.wall_ns)
            c = measured.candidate
            self.measured.add(c.qualname)
            tallies = self.tallies.get(c.qualname)
            if tallies is None:
                version = self.versions.get(c.module.split(".", 1)[0], "")
                tallies = self.tallies[c.qualname] = _Tallies(c.module, measured.kind, version)
            add_wall, add_cpu = tallies.metrics[Metric.WALL].add, tallies.metrics[Metric.CPU].add
            for value in cost.wall_ns:
                add_wall(value)
            for value in cost.cpu_ns:
                add_cpu(value)

    # -- summaries -----------------------------------------------------------------------------
    def batch(self) -> Batch | None:
        """The tallies so far as one batch (None when nothing was measured)."""
        apis = tuple(
            ApiSample(
                qualname,
                t.module,
                t.kind,
                t.version,
                {m: tally.histogram() for m, tally in t.metrics.items() if tally.cells},
            )
            for qualname, t in sorted(self.tallies.items())
            if t.count
        )
        if not apis:
            return None
        return Batch(
            batch_id=new_batch_id(),
            python=platform.python_version(),
            implementation=sys.implementation.name,
            system=platform.system() or "unknown",
            machine=platform.machine() or "unknown",
            machine_speed_ns=self.speed_ns,
            apis=apis,
        )

    def _flush(self, final: bool) -> None:
        self.last_flush_ns = time.perf_counter_ns()
        batch = self.batch()
        self.tallies.clear()
        if batch is None:
            return
        write_batch(self.layout, batch)
        self._maybe_upload(final)

    def _maybe_upload(self, final: bool) -> None:
        config = self.config
        if not (config.server and config.token) or self.uploaders:
            return
        if spool_bytes(self.layout) < config.upload_threshold:
            return
        process = start_background_upload(self.layout)
        if process is not None and not final:
            self.uploaders.append(process)


def start_background_upload(layout: Layout) -> subprocess.Popen[bytes] | None:
    """Start ``python -m apiprof.engine.collect.upload`` detached (its own session, no console,
    not collected itself); the host program neither waits for it nor sees its output."""
    import subprocess

    executable = sys.executable
    if not executable or "python" not in os.path.basename(executable).lower():
        return None  # embedded interpreters: sys.executable is the host application
    env = {**os.environ, COLLECT_ENV: "0", "APIPROF_HOME": str(layout.root)}
    try:
        return subprocess.Popen(
            [executable, "-m", "apiprof.engine.collect.upload"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return None


def _load_per_cpu() -> float:
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):
        return 0.0  # no load average on this platform: do not refuse
