"""Timing passes: re-run the scenario with only one group's targets instrumented.

How the probes are installed is :mod:`~apiprof.engine.measure.instrument`'s business, what they
record :mod:`~apiprof.engine.measure.passlog`'s, and turning records into per-call times
:mod:`~apiprof.engine.measure.costs`'s; this module runs the pass.

How long a pass runs (:class:`~apiprof.engine.measure.passlog.Budget`): one unrecorded warm-up
run (two when the first makes a call look long enough to read the CPU clock on every call: one
slow first call must not slow every sampled call of a short function), then runs in stretches that double in length while they are shorter than
``STRETCH_SECONDS``, until at least ``min_runs`` runs are recorded and ``seconds`` have gone
into them — time the thread ran: with perf records the preempted time does not count, so a
pass on a busy machine gets about the samples an idle one gets — (never past ``max_seconds``
of wall time, and once it has ``min_runs`` not past ``Budget.wall_factor`` budgets of it). Many back-to-back runs of a cheap scenario also keep the code warm, as it is in
a caller's loop. Right before and right after every stretch the pass calls an empty reference
function, probed identically, ``REFERENCE_CALLS`` times (every 4th call also reads the CPU
clock): its raw intervals give the *inside* overhead the pass subtracts, so drift of the
machine's speed between calibration and measurement does not bias short calls. The warm-up
also times a run, which says how many calls of each site the budget holds: a site whose calls
are short is sampled one in ``SAMPLE_EVERY``, or more often when that would give fewer than
twice ``MIN_CPU_SAMPLES``, and a pass of a time budget that has measured enough but holds
fewer than ``MIN_CPU_SAMPLES`` of such a site runs on for them
(:meth:`~apiprof.engine.measure.passlog.Budget.wants_cpu_samples`).

Stalls inside a pass: the reference checks of :mod:`~apiprof.engine.measure.settle` bracket a
whole pass, so a pass of many stretches could stall in its middle unseen. Each stretch is
judged by its two reference batches (``slow_reference``, from the calibrated inside interval)
and by the reference workload of :mod:`~apiprof.engine.measure.pace`, timed after every stretch
against the fastest this worker has seen (``pace``; the check after one stretch is the check
before the next, the one before the first is settle's). The batches' medians are a few clock
steps long, too coarse to see a CPU running 1.3× slow; the workload (~30 µs of interpreter
work, fastest of five warm runs) sees it. When a check says the CPU ran slow around the
stretch, the stretch is measured again (counted in ``PassLog.stalled_runs``), as a preempted
one is — after a slow workload check, once a check runs at pace again (at most
``STRETCH_WAIT_POLLS`` short sleeps) — until the pass's budget
(:meth:`~apiprof.engine.measure.passlog.Budget.remeasure_allowance`: the stretches with their
reference calls, and the waits) went into measuring stretches again; after that a slow
stretch is kept and counted. The workload checks themselves (~0.2 ms each) count neither as the
pass's own time nor against its wall-time cap: a pass on a busy machine keeps the runs it had.

Preemption (:mod:`~apiprof.engine.measure.switches`): with perf context-switch records the
pass keeps the preempted intervals and :func:`~apiprof.engine.measure.costs.measure_calls`
subtracts them from the calls they fall in; with only the involuntary-switch counter, a
stretch during which the thread was preempted is discarded and measured again (within the same
allowance: a machine that stays busy keeps its numbers, counted as disturbed).
"""

from __future__ import annotations

import statistics
import time
import types
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

from apiprof.engine.measure.callbacks import run_by_the_pass
from apiprof.engine.measure.clockgrain import cpu_step, wall_step
from apiprof.engine.measure.instrument import (
    CRecords,
    Instrumented,
    PyRecords,
    call_reference,
    choose_mechanisms,
)
from apiprof.engine.measure.invariants import PassCheck
from apiprof.engine.measure.pace import Pace
from apiprof.engine.measure.passlog import (
    LONG_NS,
    MAX_STRETCH_RUNS,
    MIN_CPU_SAMPLES,
    REFERENCE_CALLS,
    REFERENCE_EVERY,
    SAMPLE_EVERY,
    STRETCH_SECONDS,
    Budget,
    PassLog,
)
from apiprof.engine.measure.probes import Record, Site, cpu_pattern
from apiprof.engine.measure.switches import SwitchSource

run_by_the_pass(globals())  # the pass's own builtin calls are not the scenario's

STRETCH_WAIT_POLLS = 3
"""After a slow check between stretches, checks at most (each after a short sleep) before the
next stretch is measured anyway: a slow phase usually outlasts an immediate second try."""

_clock = time.perf_counter  # the pass's wall clock (tests replace it)


def run_timing_pass(
    run_once: Callable[[], object],
    sites: Sequence[Site],
    callers: Mapping[Hashable, Iterable[types.CodeType]] | None = None,
    *,
    budget: Budget | None = None,
    repeat: int | None = None,
    max_seconds: float | None = None,
    cpu_every: int | None = None,
    mechanism: str | None = None,
    probes: str | None = None,
    reference: bool = True,
    switches: SwitchSource | None = None,
    slow_reference: Callable[[float], bool] | None = None,
    pace: Pace | None = None,
    running: Sequence[types.CodeType] = (),
) -> PassLog:
    """Run the scenario with probes on ``sites`` only, for as long as ``budget`` says
    (``repeat``/``max_seconds`` are a shorthand for ``Budget(repeat, 0, max_seconds, False)``);
    on 3.11 sites that need the profile hook get their own leg of the same length.
    ``cpu_every`` fixes which calls read the CPU clock (0 none, 1 all, k a random 1 in k;
    default: decided from the warm-up run). ``probes`` forces the C or Python monitoring
    callbacks. ``callers`` maps a C site's key to the code objects that call it.
    ``slow_reference`` says whether a reference batch's median interval (ns) shows a CPU
    running slow (None: stretches are not judged); with ``pace`` the reference workload is also
    timed between stretches and judged by it. ``running``: the code objects the scenario runs (from the allocation pass), run as in a plain process while timed
    (:mod:`~apiprof.engine.measure.quicken`). Instrumentation is always removed, also when
    ``run_once`` raises."""
    if budget is None:
        budget = Budget(
            repeat if repeat is not None else 20,
            0.0,
            max_seconds if max_seconds is not None else 2.0,
            warmup=False,
        )
    log = PassLog(
        list(sites),
        [
            Record(cpu_pattern(SAMPLE_EVERY if cpu_every is None else cpu_every, i))
            for i in range(len(sites))
        ],
        [Record() for _ in sites],
        0,
        [([], []) for _ in sites],
    )
    log.clock_steps = (wall_step(), cpu_step())
    log.cpu_every = [SAMPLE_EVERY if cpu_every is None else max(cpu_every, 1)] * len(sites)
    kinds = choose_mechanisms(sites, mechanism)
    log.hooked = [kind == "setprofile" for kind in kinds]
    log.reference = (Record(cpu_pattern(REFERENCE_EVERY, 99)), Record())
    legs = [
        [i for i, k in enumerate(kinds) if k != "setprofile"],
        [i for i, k in enumerate(kinds) if k == "setprofile"],
    ]
    check = PassCheck("timing pass")
    with check:
        for leg in legs:
            if not leg and (leg is legs[1] or legs[1]):
                continue
            probe_reference = reference and leg is legs[0]
            loops = [_measure_leg.__code__, *_code_of(run_once), *running]
            with Instrumented(
                log, leg, callers or {}, kinds, probe_reference, probes, check, loops
            ) as inst:
                runs = _measure_leg(
                    run_once,
                    inst,
                    budget,
                    cpu_every,
                    probe_reference,
                    switches,
                    slow_reference if probe_reference else None,
                    pace if probe_reference else None,
                )
            log.runs = max(log.runs, runs)
    check.verify()
    return log


def _measure_leg(
    run_once: Callable[[], object],
    inst: Instrumented,
    budget: Budget,
    cpu_every: int | None,
    probe_reference: bool,
    switches: SwitchSource | None,
    slow_reference: Callable[[float], bool] | None,
    pace: Pace | None = None,
) -> int:
    """The run loop of one leg (see the module docstring); returns the runs recorded."""
    records, log = inst.records, inst.log
    cheap: list[int] = []  # sites whose CPU samples the pass counts (rates chosen here)
    if budget.warmup:
        took = _clock()
        run_once()
        runs_ahead = budget.expected_runs(_clock() - took)
        if cpu_every is None:
            calls = {i: _calls_of(*records.take(i)) for i in inst.leg}
            long = {i for i in inst.leg if _median(calls[i]) >= LONG_NS}
            if long:  # long by one run: a first call can be slow (cold code, a preemption);
                records.truncate(records.empty())  # long only if long twice
                run_once()
                long = {i for i in long if _median(_calls_of(*records.take(i))) >= LONG_NS}
            cheap = [i for i in inst.leg if i not in long]
            rates = {i: _sampling_rate(len(calls[i]), runs_ahead) for i in cheap}
            if any(rate < SAMPLE_EVERY for rate in rates.values()):  # the first run can be
                again = _clock()  # slow (cold code): the budget may hold more runs than it says
                run_once()
                runs_ahead = max(runs_ahead, budget.expected_runs(_clock() - again))
                rates = {i: _sampling_rate(len(calls[i]), runs_ahead) for i in cheap}
            for i in inst.leg:
                rate = rates.get(i, 1)
                log.cpu_every[i] = rate
                records.set_cpu_every(i, rate)
        records.truncate(records.empty())
    clock = _clock
    started = clock()
    runs = stretch = 0
    discarded = away = 0.0  # seconds re-measured / spent preempted (not the pass's own time)
    checking = 0.0  # seconds spent timing the reference workload (not the pass's own time)
    slow_before = False  # the check right before the pass is settle's (a slow one: pass again)
    size = 1
    while True:
        lengths = records.lengths()
        if switches is not None:
            switches.mark()
        opened = clock()
        if probe_reference:
            call_reference(REFERENCE_CALLS)
        t0 = clock()
        for _ in range(size):
            run_once()
        spent = clock() - t0
        if probe_reference:
            call_reference(REFERENCE_CALLS)
        cost = clock() - opened  # the stretch with its reference calls
        stretch += 1
        again = False
        seen = switches.stretch() if switches is not None else None
        if switches is not None and seen is not None and seen.disturbed:
            log.disturbed_runs += size
            again = not switches.subtracts
        slow = slow_reference is not None and _ran_slow(
            records, len(log.sites), lengths, slow_reference
        )
        if pace is not None:
            closed = clock()
            slow_after = pace.check()[1]
            checking += clock() - closed
            slow = slow or slow_before or slow_after
            slow_before = slow_after  # the check after this stretch is the one before the next
        if slow:
            log.stalled_runs += size
            again = True
        if again and discarded + cost < budget.remeasure_allowance():
            discarded += cost
            records.truncate(lengths)  # measure this stretch again
            if pace is not None and slow_before:  # in a slow phase: once it is over
                waited = clock()
                slow_before = not pace.wait(STRETCH_WAIT_POLLS)
                discarded += clock() - waited
            continue
        if seen is not None:
            log.preempted += seen.preempted
            away += sum(back - out for out, back in seen.preempted) / 1e9
        runs += size
        total = clock() - started - checking  # the checks of the CPU's pace are the scan's
        own = total - away - discarded  # the runs' own time: not preempted, not re-measured
        if budget.done(runs, own, total) and not (
            cheap  # the rates the warm-up chose promised these sites' CPU samples: get them
            and budget.wants_cpu_samples(own, total)
            and _short_of_cpu_samples(records, cheap, budget.min_cpu_samples)
        ):
            break
        if spent < STRETCH_SECONDS:
            size = min(size * 2, MAX_STRETCH_RUNS)
        if runs < budget.min_runs and budget.done(budget.min_runs, own, total):
            # only the minimum count is left to reach
            size = min(size, budget.min_runs - runs)
    return runs


def _code_of(run_once: Callable[[], object]) -> list[types.CodeType]:
    code = getattr(run_once, "__code__", None)
    return [code] if isinstance(code, types.CodeType) else []


def _ran_slow(
    records: PyRecords | CRecords,
    index: int,
    lengths: list[tuple[int, int]],
    slow_reference: Callable[[float], bool],
) -> bool:
    """Whether either reference batch around the last stretch (the reference function's
    records, site ``index``, after ``lengths``) ran slow: the median of each batch's intervals
    that did not read the CPU clock."""
    enters, exits = records.since(index, lengths[index])
    half = 2 * REFERENCE_CALLS  # each call records two numbers on entry and two on exit
    for start in (0, half):
        batch_in, batch_out = enters[start : start + half], exits[start : start + half]
        intervals = [
            batch_out[k] - batch_in[k + 1]
            for k in range(0, min(len(batch_in), len(batch_out)) - 1, 2)
            if batch_in[k] < 0
        ]
        if intervals and slow_reference(statistics.median(intervals)):
            return True
    return False


def _calls_of(enters: Sequence[int], exits: Sequence[int]) -> list[int]:
    """Raw wall intervals of a site's calls, from its records."""
    return [exits[k] - enters[k + 1] for k in range(0, min(len(enters), len(exits)) - 1, 2)]


def _median(intervals: Sequence[int]) -> float:
    return statistics.median(intervals) if intervals else 0.0


def _sampling_rate(calls_per_run: int, runs_ahead: float) -> int:
    """CPU sampling for a site whose warm-up calls were short: a random 1 in SAMPLE_EVERY, or
    more often when the ``runs_ahead`` runs the pass expects hold too few calls for that rate
    to give twice ``MIN_CPU_SAMPLES`` (a cheap function a scenario calls once per run)."""
    if not calls_per_run or not runs_ahead:
        return SAMPLE_EVERY
    calls_ahead = calls_per_run * runs_ahead
    return max(1, min(SAMPLE_EVERY, int(calls_ahead // (2 * MIN_CPU_SAMPLES))))


def _short_of_cpu_samples(records: PyRecords | CRecords, sites: Sequence[int], least: int) -> bool:
    """Whether one of ``sites`` was called but has fewer than ``least`` CPU samples (an entry
    record holds ``(cpu, wall)`` pairs, ``cpu`` -1 where the clock was not read)."""
    for i in sites:
        enters = records.take(i)[0]
        if enters and sum(1 for cpu in enters[0::2] if cpu >= 0) < least:
            return True
    return False
