"""Active time (seeds/001): SPEC.md §2's worked example, offline and through the live path."""

from __future__ import annotations

import pytest

from apiprof.engine.activetime import CLOSES, OPENS, ProbeEvent, active_time, active_times
from apiprof.engine.probes import PySite
from apiprof.engine.timing import PassLog, measure_calls

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
    nested = [ProbeEvent(0, "enter"), ProbeEvent(10, "enter"), ProbeEvent(20, "exit"), ProbeEvent(100, "exit")]
    assert active_time(0, 100, nested, OVERHEAD) == 100 - 3 - 3 - 2


def test_noise_never_yields_negative_time():
    assert active_time(0, 2, [ProbeEvent(0, "enter")], {"enter": 50}) == 0


def test_unknown_kinds_cost_nothing_and_unmatched_events_are_dropped():
    events = [ProbeEvent(5, "exit", CLOSES, "X"), ProbeEvent(10, "enter", OPENS, "Y"), ProbeEvent(30, "exit", CLOSES, "Y"),
              ProbeEvent(40, "enter", OPENS, "Z")]
    assert [(c.name, c.active) for c in active_times(events, {"exit": 1})] == [("Y", 20)]


def _some_function():
    return None


@pytest.mark.parametrize("stride", [2, 3])
def test_live_path_uses_the_same_arithmetic(stride):
    """A recursive call recorded by the probes: outer 0..1000 wall, inner 200..500."""
    if stride == 2:  # (cpu, wall) per entry, (wall, cpu) per exit
        enters, exits = [0, 0, 100, 200], [500, 600, 1000, 1500]
    else:  # (cpu, ticks, wall) / (wall, ticks, cpu): hook calls 2,3 and 6..9 are filtered ones
        enters, exits = [0, 1, 0, 100, 4, 200], [500, 5, 600, 1000, 10, 1500]
    log = PassLog([PySite(_some_function)], [enters], [exits], runs=1, stride=stride)
    wall = {"enter": 10, "exit": 20, "filtered": 5}
    cpu = {"enter": 1, "exit": 2, "filtered": 1}
    (costs,) = measure_calls(log, wall, cpu)
    filtered_wall = 6 * 5 if stride == 3 else 0
    filtered_cpu = 6 * 1 if stride == 3 else 0
    # inner: 300 - own enter; outer: 1000 - own enter - nested enter - nested exit - filtered
    assert costs.wall_ns == [300 - 10, 1000 - 10 - 10 - 20 - filtered_wall]
    assert costs.cpu_ns == [500 - 1, 1500 - 1 - 1 - 2 - filtered_cpu]
