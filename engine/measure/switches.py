"""When was the measuring thread switched out? (Live switched-out intervals, docs/mechanisms.rst.)

Wall time between two probes includes the time the operating system ran something else: on a
busy machine (a CI runner, a laptop compiling) that is most of the error. Two sources, best
first:

* ``perf`` — the thread's context-switch records from ``perf_event_open`` (a software dummy
  event with ``context_switch`` set, user space only: allowed at ``perf_event_paranoid`` 2 and
  in user namespaces; Docker's default seccomp profile refuses it). Each record carries a
  CLOCK_MONOTONIC timestamp — the clock ``time.perf_counter_ns`` and the C probes read — so the
  *preempted* intervals are subtracted from the calls they fall in by
  :func:`~apiprof.engine.measure.activetime.active_times`. Voluntary switches (the call blocked
  on I/O or slept) are the call's own cost and stay in. Read by the C extension ``_timing``.
* ``rusage`` — ``getrusage(RUSAGE_THREAD).ru_nivcsw``, the involuntary-switch counter: it only
  says *that* the thread was preempted during a stretch of runs, so the timing pass discards
  that stretch and measures it again (:mod:`~apiprof.engine.measure.timing`).

Neither exists off Linux: wall time then includes preemption (mechanism "").
"""

from __future__ import annotations

import resource
from dataclasses import dataclass, field

try:
    from apiprof.engine.measure import _timing
except ImportError:  # the optional extension was not built
    _timing = None  # type: ignore[assignment]

PERF = "perf_event_open context-switch records (preempted time subtracted)"
RUSAGE = "getrusage involuntary switches (disturbed runs measured again)"


@dataclass
class Stretch:
    """What happened to the thread during a stretch of runs."""

    preempted: list[tuple[int, int]] = field(default_factory=list)  # (out_ns, in_ns)
    disturbed: bool = False


class PerfSwitches:
    """Preempted intervals from the thread's perf context-switch records."""

    mechanism = PERF
    subtracts = True  # preempted time is removed from each call, nothing is re-measured

    def __init__(self) -> None:
        if _timing is None:
            raise OSError("the _timing extension is not built")
        self._recorder = _timing.SwitchRecorder(pages=16)
        self._lost = 0

    def mark(self) -> None:
        """Forget what happened before now."""
        self._recorder.read()

    def stretch(self) -> Stretch:
        """The preempted intervals since the last mark or stretch; lost records (a ring that
        overflowed) make the stretch disturbed with nothing to subtract."""
        intervals, lost = self._recorder.read()
        preempted = [(out, back) for out, back, was_preempted in intervals if was_preempted]
        overflowed, self._lost = lost > self._lost, lost
        return Stretch(preempted, bool(preempted) or overflowed)

    def close(self) -> None:
        self._recorder.close()


class RusageSwitches:
    """The involuntary-switch counter: flags stretches to measure again."""

    mechanism = RUSAGE
    subtracts = False

    def __init__(self) -> None:
        self._count = self._read()

    @staticmethod
    def _read() -> int:
        return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw

    def mark(self) -> None:
        self._count = self._read()

    def stretch(self) -> Stretch:
        count = self._read()
        disturbed, self._count = count > self._count, count
        return Stretch([], disturbed)

    def close(self) -> None:
        return None


SwitchSource = PerfSwitches | RusageSwitches

_opened: dict[str, SwitchSource | None] = {}


def open_switches(prefer: str = "") -> SwitchSource | None:
    """The best source for the calling thread (one per process, kept open: each timing pass
    marks it first). ``prefer="rusage"`` skips perf (tests, and the ``--switches`` option)."""
    key = prefer or "best"
    if key not in _opened:
        _opened[key] = _open(prefer)
    return _opened[key]


def _open(prefer: str) -> SwitchSource | None:
    if prefer != "rusage":
        try:
            return PerfSwitches()
        except OSError:
            pass
    if not hasattr(resource, "RUSAGE_THREAD"):
        return None
    return RusageSwitches()


def switch_mechanism() -> str:
    """What finds switched-out time here, for the stored calibration ("" when nothing does)."""
    source = open_switches()
    return source.mechanism if source is not None else ""
