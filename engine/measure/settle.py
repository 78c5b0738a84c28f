"""Timing passes the machine stalled are measured again, not stored.

A pass takes milliseconds; on a shared machine the CPU can run slow for all of it (a busy
sibling, a throttled or stolen virtual CPU) without the thread being switched out once, so
nothing in the pass's own records says so — its calls simply all read long (seen: a 1000-call
parent read 1.65× its truth in one pass of a scan whose other passes were right). Two signs
bracket every pass instead:

* the short reference workload (:func:`~apiprof.engine.measure.machine.reference_check_ns`),
  timed right before *and right after* the pass: one more than
  :data:`~apiprof.engine.measure.pace.SLOW_FACTOR` times the fastest this process has seen
  (:class:`~apiprof.engine.measure.pace.Pace`) means the CPU ran slow around the pass;
* inside the pass, the empty reference function's calls around every stretch
  (:mod:`~apiprof.engine.measure.timing`): a batch whose median interval is more than
  ``STRETCH_FACTOR`` times the calibrated one (:func:`slow_reference`) has the stretch it brackets
  measured again, and so does a slow check of the reference workload after a stretch (the
  same :class:`~apiprof.engine.measure.pace.Pace`), so a stall in the middle of a long pass is
  not stored either;
* the share of a target's calls the thread was switched out of (perf records): above
  :data:`~apiprof.engine.measure.costs.PREEMPTED_SHARE` the preempted calls stay in the
  figures (with the switched-out time taken off), and they read high.

A pass with either sign is run again, up to ``PASS_ATTEMPTS`` times in all, when it took less
than ``RETRY_UNDER_SECONDS`` — after a slow reference check, only once a check runs at pace
again (:meth:`~apiprof.engine.measure.pace.Pace.wait`): a slow phase usually outlasts an
immediate second attempt; the first clean attempt is kept, else the least disturbed one,
counted as a stalled pass (the scan warns when the machine stays too busy:
:attr:`~apiprof.model.records.Disturbance.busy`). Long passes are not run again: their calls
take milliseconds, a time slice's worth, so on a loaded machine most of them are preempted in
every attempt (json at load 8 on 2 cores: 9 such passes measured again made the scan 1.46× the
fixed-20-runs scan time instead of about 1.2×).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import CodeType

from apiprof.engine.measure.clockgrain import wall_step
from apiprof.engine.measure.costs import PREEMPTED_SHARE, CallCosts, measure_calls
from apiprof.engine.measure.pace import SLOW_FACTOR, Pace, process_pace
from apiprof.engine.measure.passlog import Budget, PassLog
from apiprof.engine.measure.probes import Site
from apiprof.engine.measure.switches import SwitchSource
from apiprof.engine.measure.timing import run_timing_pass
from apiprof.model.records import Calibration, Disturbance

STRETCH_FACTOR = 1.5
"""A reference batch's median interval this many times the calibrated inside interval (plus one
clock step) shows a slow phase in the middle of a pass. The medians are a few clock steps long
and bimodal on a loaded machine (3.11 at load 11: 140–150 ns in 75 % of batches, 220–300 ns in
slow phases; 3.12: 40–50 ns against 60–70 ns, at this limit). Not tighter: a worker's empty
call can run above the calibrated one (calibrated in the scanning process), and at 1.25× a
3.12 leaf pass then re-measured stretch after stretch until its budget was gone and kept 20
calls from slow ones (2.7× its truth)."""
RETRY_UNDER_SECONDS = 0.25
"""Only passes shorter than this (wall time) are measured again."""
PASS_ATTEMPTS = 3
"""Timing passes per group at most: the first, and up to two more when it stalled (each after
waiting for the CPU's pace to return). On a machine that stays loaded (json at load 9 on 2
cores: 7 of 106 passes stalled in every attempt) more attempts only make the scan longer."""


@dataclass(frozen=True)
class Settled:
    """The pass kept for a group of targets, its per-call costs, and what measuring saw."""

    log: PassLog
    costs: list[CallCosts]
    seen: Disturbance


def reference_check(pace: Pace) -> Disturbance:
    """Time the reference workload (warm); slow against the fastest seen = a slow phase."""
    took, slow = pace.check()
    return Disturbance(references=1, reference_ns=took, slow_references=int(slow))


def slow_reference(calibration: Calibration) -> Callable[[float], bool] | None:
    """Whether a reference batch's median interval (ns) shows a CPU running slow: above
    ``STRETCH_FACTOR`` times the calibrated inside interval of an empty Python call, plus one step
    of the wall clock (the interval is a few steps long); None without a calibrated figure."""
    inside = calibration.overhead_ns.get("enter", 0.0) + calibration.overhead_ns.get(
        "dispatch", 0.0
    )
    if inside <= 0:
        return None
    limit = STRETCH_FACTOR * inside + wall_step()
    return lambda median_ns: median_ns > limit


def stall(
    before: Disturbance, after: Disturbance, costs: Sequence[CallCosts], best_ns: float
) -> float:
    """How stalled a pass looks, 0 when clean, else above 1: the larger of the slow reference
    checks around it (in units of ``SLOW_FACTOR`` × the fastest check seen, ``best_ns``) and
    the largest share of a target's calls that were preempted when above ``PREEMPTED_SHARE``
    (in units of it)."""
    score = 0.0
    for check in (before, after):
        if check.slow_references and best_ns > 0:
            took = check.reference_ns / check.references
            score = max(score, took / (SLOW_FACTOR * best_ns))
    for cost in costs:
        share = cost.preempted_calls / cost.calls if cost.calls else 0.0
        if share > PREEMPTED_SHARE:
            score = max(score, share / PREEMPTED_SHARE)
    return score


def settled_pass(
    run_once: Callable[[], object],
    sites: Sequence[Site],
    callers: Mapping[Hashable, Iterable[CodeType]],
    *,
    budget: Budget,
    switches: SwitchSource | None,
    calibration: Calibration,
    check: Callable[[Pace], Disturbance] = reference_check,
    pace: Pace | None = None,
    pause: Callable[[float], object] = time.sleep,
    attempts: int = PASS_ATTEMPTS,
    runs_per_call: int = 1,
    retry_under: float = RETRY_UNDER_SECONDS,
    running: Sequence[CodeType] = (),
) -> Settled:
    """One group's timing pass, measured again while a stall is seen around it (module
    docstring); ``check`` times the reference workload against ``pace`` (default: this
    process's, seeded with the calibrated index); tests inject a stalled machine through
    both, and ``pause`` for the waits; each call of ``run_once`` runs the scenario
    ``runs_per_call`` times (a batch); ``running`` as for
    :func:`~apiprof.engine.measure.timing.run_timing_pass`."""
    pace = pace if pace is not None else process_pace(calibration.machine_speed_ns)
    seen = Disturbance()
    tried: list[tuple[float, Settled]] = []
    slowed = False  # the last attempt had a slow reference check around it
    for attempt in range(max(1, attempts)):
        if attempt and slowed:
            pace.wait(pause=pause)  # a slow phase: measure again once it is over
        before = check(pace)  # each attempt its own pair: a slow check between two
        started = time.perf_counter()
        log = run_timing_pass(
            run_once,
            sites,
            callers,
            budget=budget,
            switches=switches,
            slow_reference=slow_reference(calibration),
            pace=pace,
            running=running,
        )
        took = time.perf_counter() - started
        costs = measure_calls(log, calibration.overhead_ns, calibration.cpu_overhead_ns)
        after = check(pace)  # attempts would not say which of them stalled
        seen += before + after
        seen += Disturbance(
            runs=log.runs * runs_per_call,
            disturbed_runs=log.disturbed_runs * runs_per_call,
            stalled_runs=log.stalled_runs * runs_per_call,
            preempted_ns=log.preempted_ns,
        )
        score = stall(before, after, costs, pace.best_ns)
        slowed = bool(before.slow_references or after.slow_references)
        tried.append((score, Settled(log, costs, Disturbance())))
        if not score or took >= retry_under:
            break
    score, kept = min(tried, key=lambda one: one[0])  # the first of equals
    seen += Disturbance(passes=1, remeasured_passes=len(tried) - 1, stalled_passes=int(score > 0))
    return Settled(kept.log, kept.costs, seen)
