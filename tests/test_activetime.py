"""Active time: the worked example of docs/mechanisms.rst, offline and through the live path."""

from __future__ import annotations

import pytest

from apiprof.engine.measure.activetime import CLOSES, OPENS, ProbeEvent, active_time, active_times
from apiprof.engine.measure.costs import measure_calls, pass_overheads
from apiprof.engine.measure.passlog import PassLog
from apiprof.engine.measure.probes import PySite

OVERHEAD = {"enter": 3, "exit": 2}
SWITCHED = [(1000, 1190), (1225, 1411)]
EVENTS = [
    ProbeEvent(900, "enter", OPENS, "F"),
    ProbeEvent(1200, "enter", OPENS, "G"),
    ProbeEvent(1500, "exit", CLOSES, "G"),
    ProbeEvent(1550, "exit", CLOSES, "F"),
]


def test_worked_example_is_266():
    assert active_time(900, 1550, EVENTS, OVERHEAD, SWITCHED) == 266


def test_event_list_pairs_calls_and_reproduces_the_example():
    calls = {call.name: call.active for call in active_times(EVENTS, OVERHEAD, SWITCHED)}
    assert calls == {"F": 266, "G": 300 - 3 - 186}


def test_own_exit_probe_is_excluded_but_nested_ones_count():
    assert active_time(0, 100, [ProbeEvent(0, "enter"), ProbeEvent(100, "exit")], OVERHEAD) == 97
    nested = [
        ProbeEvent(0, "enter"),
        ProbeEvent(10, "enter"),
        ProbeEvent(20, "exit"),
        ProbeEvent(100, "exit"),
    ]
    assert active_time(0, 100, nested, OVERHEAD) == 100 - 3 - 3 - 2


def test_noise_never_yields_negative_time():
    assert active_time(0, 2, [ProbeEvent(0, "enter")], {"enter": 50}) == 0


def test_unknown_kinds_cost_nothing_and_unmatched_events_are_dropped():
    events = [
        ProbeEvent(5, "exit", CLOSES, "X"),
        ProbeEvent(10, "enter", OPENS, "Y"),
        ProbeEvent(30, "exit", CLOSES, "Y"),
        ProbeEvent(40, "enter", OPENS, "Z"),
    ]
    assert [(c.name, c.active) for c in active_times(events, {"exit": 1})] == [("Y", 20)]


def _some_function():
    return None


@pytest.mark.parametrize("hooked", [False, True])
def test_live_path_uses_the_same_arithmetic(hooked):
    """A recursive call recorded by the probes: outer 0..1000 wall, inner 200..500. Entries are
    (cpu, wall), exits (wall, cpu); the hook-timed variant also counts hook calls: 2,3 and 6..9
    are filtered-out events inside the outer call."""
    enters, exits = [0, 0, 100, 200], [500, 600, 1000, 1500]
    ticks = [([1, 4], [5, 10])] if hooked else [([], [])]
    log = PassLog([PySite(_some_function)], [enters], [exits], runs=1, ticks=ticks, hooked=[hooked])
    prefix = "hook_" if hooked else ""
    wall = {f"{prefix}enter+cpu": 10, f"{prefix}exit+cpu": 20, "filtered": 5}
    cpu = {f"{prefix}enter+cpu": 1, f"{prefix}exit+cpu": 2, "filtered": 1}
    (costs,) = measure_calls(log, wall, cpu)
    filtered_wall = 6 * 5 if hooked else 0
    filtered_cpu = 6 * 1 if hooked else 0
    # inner: 300 - own enter; outer: 1000 - own enter - nested enter - nested exit - filtered
    assert costs.wall_ns == [300 - 10, 1000 - 10 - 10 - 20 - filtered_wall]
    cpu_active = [500 - 1, 1500 - 1 - 1 - 2 - filtered_cpu]
    # a thread's CPU time cannot exceed the call's wall time: each call's CPU figure is capped
    assert costs.cpu_ns == [min(c, w) for c, w in zip(cpu_active, costs.wall_ns)]


def test_unsampled_calls_have_wall_but_no_cpu_time():
    """-1 marks a call whose probes skipped the thread-CPU clock: WALL only, plain probe kinds."""
    enters, exits = [-1, 0, 7, 100], [50, -1, 160, 9]
    log = PassLog([PySite(_some_function)], [enters], [exits], runs=1)
    (costs,) = measure_calls(log, {"enter": 4, "enter+cpu": 10}, {"enter+cpu": 1})
    assert costs.wall_ns == [50 - 4, 60 - 10]
    assert costs.cpu_ns == [2 - 1]


def test_live_reference_replaces_calibrated_inside_overhead():
    """The pass's reference calls (alternately with/without the CPU clock) give the inside
    overheads; the calibrated full cost of a probe pair is kept for nested calls."""
    ref_in, ref_out = [], []
    for k in range(20):
        sampled = k % 2 == 0
        start = 1000 * k
        ref_in += [start if sampled else -1, start + 5]
        ref_out += [start + 5 + (70 if sampled else 40), start + 300 if sampled else -1]
    log = PassLog([], [], [], runs=1, reference=(ref_in, ref_out))
    wall, cpu = pass_overheads(
        log,
        {"enter": 100, "exit": 400, "enter+cpu": 200, "exit+cpu": 1800},
        {"enter+cpu": 900, "exit+cpu": 1000},
    )
    assert wall == {"enter": 40, "exit": 460, "enter+cpu": 70, "exit+cpu": 1930}
    assert cpu == {"enter+cpu": 300, "exit+cpu": 1600}


def test_sequential_calls_take_the_short_path_to_the_same_figures():
    """Calls that never overlap are computed in one sweep; it gives what the general active-time
    arithmetic gives, preempted intervals and CPU capping included."""
    from apiprof.engine.measure import costs

    enters, exits = [], []
    for k in range(200):
        start = 1_000 * k
        sampled = k % 3 == 0
        enters += [start * 2 if sampled else -1, start]
        exits += [start + 100 + k, start * 2 + 140 + 2 * k if sampled else -1]
    log = PassLog([PySite(_some_function)], [enters], [exits], runs=1)
    log.preempted = [(1_020, 1_050), (5_090, 6_010), (90_000, 90_050)]
    wall = {"enter": 7, "enter+cpu": 11}
    cpu = {"enter+cpu": 3}
    assert costs._one_at_a_time(enters, exits)
    short = costs._sequential_costs(log, 0, "enter", wall, cpu)
    general = costs._nested_costs(log, 0, ("enter", "exit"), wall, cpu)
    assert short == general
    # 4 of 200 calls were preempted: left out (they read high even with the time subtracted)
    assert len(short.wall_ns) == 196 and short.wall_ns[1] == 102 - 7
    # when many calls were preempted they all stay, with the switched-out time subtracted
    log.preempted += [(1_000 * k + 10, 1_000 * k + 20) for k in range(10, 80)]
    short = costs._sequential_costs(log, 0, "enter", wall, cpu)
    assert short == costs._nested_costs(log, 0, ("enter", "exit"), wall, cpu)
    assert len(short.wall_ns) == 200
    assert short.wall_ns[1] == 101 - 7 - 30  # the second call lost 30 ns to preemption
