"""Timing passes: only the group's targets are probed; everything else runs unobserved."""

from __future__ import annotations

import contextlib
import sys
import time

import groundtruth_pkg as gt
import pytest

from apiprof.engine.measure import callbacks, instrument
from apiprof.engine.measure.costs import measure_calls
from apiprof.engine.measure.passlog import SAMPLE_EVERY, Budget
from apiprof.engine.measure.probes import CSite, ProbeId, PySite, normalize_callable, resolve_site
from apiprof.engine.measure.timing import run_timing_pass


def calls_recorded(log, index=0):
    return len(log.enters[index]) // 2, len(log.exits[index]) // 2


@pytest.fixture
def probe_counter(monkeypatch):
    """Counts every probe invocation, whatever event or function triggered it."""
    counts = {"n": 0}
    factory = (
        callbacks.make_monitoring_callbacks
        if instrument.HAS_MONITORING
        else callbacks.make_profile_hook
    )

    def counting(*args):
        made = factory(*args)

        def wrap(fn):
            def counted(*a):
                counts["n"] += 1
                return fn(*a)

            return counted

        return {k: wrap(v) for k, v in made.items()} if isinstance(made, dict) else wrap(made)

    name = "make_monitoring_callbacks" if instrument.HAS_MONITORING else "make_profile_hook"
    monkeypatch.setattr(instrument, name, counting)
    monkeypatch.setattr(instrument, "HAS_C_PROBES", False)  # count the Python callbacks
    return counts


@pytest.mark.skipif(
    not instrument.HAS_MONITORING,
    reason="3.11 probes plain functions by trampoline: there are no event callbacks to count "
    "(isolation on 3.11 is checked by test_uninstrumented_function_runs_at_full_speed)",
)
def test_only_target_events_fire(probe_counter):
    """mid() makes 1000 leaf calls; with sibling_a probed, exactly its 2 events fire."""
    log = run_timing_pass(
        lambda: (gt.mid(), gt.sibling_a()), [PySite(gt.sibling_a)], repeat=3, reference=False
    )
    assert calls_recorded(log) == (3, 3)
    assert probe_counter["n"] == 3 * 2


def test_nested_target_is_recorded_once_per_call():
    log = run_timing_pass(gt.top, [PySite(gt.leaf)], repeat=2)
    assert calls_recorded(log) == (2 * gt.LEAF_CALLS, 2 * gt.LEAF_CALLS)


def _probe_state(function) -> tuple[object, tuple[int, ...]]:
    """What is installed on ``function`` right now: its code object (3.11's trampolines swap
    it) and the local events every monitoring tool asked for on it (3.12+)."""
    code = function.__code__
    tools = range(6) if hasattr(sys, "monitoring") else ()
    return code, tuple(sys.monitoring.get_local_events(tool, code) for tool in tools)


def test_a_pass_installs_nothing_on_code_it_does_not_time():
    """While sibling_a is timed, mid and leaf (called by the same scenario's neighbours) carry
    no probe — read off the code objects and monitoring events, not raced against a clock
    (this was a timing ratio that failed on a busy machine). Contrast: timing leaf installs
    something on leaf that this check sees."""
    before = _probe_state(gt.mid), _probe_state(gt.leaf)
    during: list[object] = []
    run_timing_pass(
        lambda: during.append((_probe_state(gt.mid), _probe_state(gt.leaf))) or gt.sibling_a(),
        [PySite(gt.sibling_a)],
        repeat=1,
    )
    assert during and all(state == before for state in during)
    probed: list[object] = []
    run_timing_pass(
        lambda: probed.append(_probe_state(gt.leaf)) or gt.mid(), [PySite(gt.leaf)], repeat=1
    )
    assert probed and all(state != before[1] for state in probed)
    assert _probe_state(gt.leaf) == before[1]  # and taken off again after the pass


def test_code_objects_and_tools_are_restored_even_on_error():
    original = gt.leaf.__code__

    def boom():
        gt.leaf()
        raise RuntimeError("scenario failed")

    with pytest.raises(RuntimeError):
        run_timing_pass(boom, [PySite(gt.leaf)])
    assert gt.leaf.__code__ is original
    assert not any(type(c) is ProbeId for c in gt.leaf.__code__.co_consts)


def test_generators_methods_properties_and_unwinding():
    def raiser():
        raise KeyError("x")

    def scenario():
        list(gt.countdown(3))
        c = gt.Counter(1)
        c.bump()
        _ = c.doubled
        with contextlib.suppress(KeyError):
            raiser()

    sites = [
        resolve_site(gt.countdown),
        resolve_site(gt.Counter.bump),
        resolve_site(gt.Counter.doubled),
        PySite(raiser),
    ]
    log = run_timing_pass(scenario, sites, repeat=2)
    assert calls_recorded(log, 0) == (8, 8)  # 4 activations per generator run
    assert calls_recorded(log, 1) == (2, 2)
    assert calls_recorded(log, 2) == (2, 2)
    assert calls_recorded(log, 3) == (2, 2)  # the exit is seen on unwind


def test_c_functions_and_classes_are_timed_at_their_call_sites():
    def scenario():
        len("abc")
        gt.Counter(3)

    sites = [CSite(len), resolve_site(gt.Counter)]
    callers = {normalize_callable(len): {scenario.__code__}, gt.Counter: {scenario.__code__}}
    log = run_timing_pass(scenario, sites, callers, repeat=3)
    assert calls_recorded(log, 0) == (3, 3)
    if instrument.HAS_MONITORING:
        assert calls_recorded(log, 1) == (3, 3)


def _closure_target():
    scale = 3

    def scaled(x, y=2, *, z=1):
        if x < 0:
            raise ValueError("negative")
        return (x + y + z) * scale

    return scaled


def test_trampoline_keeps_behaviour_and_records_every_call():
    """Forced on every Python (3.11's default for plain functions): closures, defaults,
    keyword-only defaults and exceptions behave as before; the original code comes back."""
    fn = _closure_target()
    original = fn.__code__

    def scenario():
        assert fn(1) == 12 and fn(1, 0, z=5) == 18
        with pytest.raises(ValueError):
            fn(-1)

    log = run_timing_pass(scenario, [PySite(fn)], repeat=2, mechanism="trampoline")
    assert calls_recorded(log) == (6, 6)
    assert fn.__code__ is original
    walls = [log.exits[0][i] - log.enters[0][i + 1] for i in range(0, 12, 2)]
    assert all(w >= 0 for w in walls)


def test_cpu_clock_is_sampled_for_short_calls_and_read_for_long_ones():
    """Short calls read the thread-CPU clock on a random 1 in SAMPLE_EVERY calls, calls of 50 µs
    and more on every call: decided once, in the warm-up run, for the whole pass."""

    def busy():
        end = time.perf_counter_ns() + 50_000
        while time.perf_counter_ns() < end:
            pass

    def scenario():
        for _ in range(64):
            gt.leaf()
        for _ in range(4):
            busy()

    budget = Budget(min_runs=3, seconds=0.0, max_seconds=60.0, warmup=True)
    log = run_timing_pass(scenario, [PySite(gt.leaf), PySite(busy)], budget=budget)
    leaf_sampled = sum(1 for c in log.enters[0][0::2] if c >= 0)
    busy_sampled = [c >= 0 for c in log.enters[1][0::2]]
    # a random 1 in 16 of the 192 leaf calls (deterministic seed; the bounds allow any seed)
    assert 2 <= leaf_sampled <= 40
    assert busy_sampled == [True] * 12  # decided in the unrecorded warm-up run: every call
    (leaf_costs, busy_costs) = measure_calls(log, {}, {})
    assert len(leaf_costs.wall_ns) == 3 * 64 and len(leaf_costs.cpu_ns) == leaf_sampled
    assert len(busy_costs.cpu_ns) == 12 and min(busy_costs.wall_ns) >= 50_000


def test_one_slow_first_call_does_not_make_a_short_function_read_the_cpu_clock_every_call():
    """The warm-up's first call of a short function can be slow (cold code, a preemption): a
    call counts as long only when a second warm-up run finds it long too."""
    first = [True]

    def sometimes_slow():
        if first[0]:
            first[0] = False
            time.sleep(0.001)

    budget = Budget(min_runs=64, seconds=0.0, max_seconds=60.0, warmup=True)
    log = run_timing_pass(sometimes_slow, [PySite(sometimes_slow)], budget=budget)
    assert log.cpu_every == [SAMPLE_EVERY]
    assert sum(1 for c in log.enters[0][0::2] if c >= 0) < 64 / 2


# -- the C probes and their Python fallback record the same calls ----------------------------


def _probe_scenario():
    for _ in range(5):
        gt.leaf(1)
    list(gt.countdown(3))
    with contextlib.suppress(KeyError):
        _raises()
    len("abc")


def _raises():
    raise KeyError("x")


@pytest.mark.skipif(
    not instrument.HAS_C_PROBES, reason="the _timing extension (3.12+) is not built"
)
def test_c_probes_record_what_the_python_probes_record():
    sites = [PySite(gt.leaf), PySite(gt.countdown), PySite(_raises), CSite(len)]
    callers = {normalize_callable(len): {_probe_scenario.__code__}}
    logs = {
        probes: run_timing_pass(
            _probe_scenario, sites, callers, repeat=3, probes=probes, cpu_every=4
        )
        for probes in ("c", "python")
    }
    assert logs["c"].probes == "c" and logs["python"].probes == "python"
    for index, expected in enumerate((15, 12, 3, 3)):  # countdown: 4 activations per run
        for log in logs.values():
            assert calls_recorded(log, index) == (expected, expected)
            enters, exits = log.enters[index], log.exits[index]
            walls = [exits[k] - enters[k + 1] for k in range(0, len(exits), 2)]
            assert all(w >= 0 for w in walls)
            # an exit reads the CPU clock exactly when its entry did
            assert [c >= 0 for c in enters[0::2]] == [c >= 0 for c in exits[1::2]]
    c_costs = measure_calls(logs["c"], {}, {})
    py_costs = measure_calls(logs["python"], {}, {})
    assert [len(c.wall_ns) for c in c_costs] == [len(c.wall_ns) for c in py_costs]


@pytest.mark.skipif(
    not instrument.HAS_C_PROBES, reason="the _timing extension (3.12+) is not built"
)
def test_c_probe_samples_the_cpu_clock_at_the_asked_rate():
    log = run_timing_pass(
        lambda: [gt.leaf(1) for _ in range(4000)], [PySite(gt.leaf)], repeat=1, cpu_every=16
    )
    sampled = sum(1 for c in log.enters[0][0::2] if c >= 0)
    assert 4000 / 16 / 2 < sampled < 4000 / 16 * 2  # random 1 in 16, generous bounds
