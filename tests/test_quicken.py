"""Timed code runs the bytecode a plain process runs: 3.12's superinstructions are put back.

The allocation pass (global sys.monitoring events) makes CPython 3.12 split the superinstructions
of every function it sees, for good; the timing passes must time the paired form a plain process
runs. 3.11 and 3.13 have nothing to restore.
"""

from __future__ import annotations

import dis
import opcode
import sys
import types

import pytest

from apiprof.engine.measure import quicken
from apiprof.engine.measure.alloc import run_allocation_pass
from apiprof.engine.measure.probes import PySite, acquire_tool_id, release_tool_id
from apiprof.engine.measure.profiler import Target, profile
from apiprof.engine.measure.timing import run_timing_pass
from apiprof.model.records import Metric

ON_312 = sys.version_info[:2] == (3, 12)
needs_312 = pytest.mark.skipif(not quicken.ACTIVE, reason="only CPython 3.12 splits them")


def callee(x: int) -> int:
    y = x * 7 + 1
    y = (y ^ 5) - x
    return y & 0xFF


def paired(code: types.CodeType) -> list[int]:
    """Offsets of the superinstructions in ``code``'s current (adaptive) bytecode."""
    return [i.offset for i in dis.get_instructions(code, adaptive=True) if "__" in i.opname]


def fresh(function: types.FunctionType) -> types.FunctionType:
    """A copy of ``function`` with a code object just made (paired by the interpreter)."""
    code = function.__code__.replace()
    return types.FunctionType(code, function.__globals__, function.__name__)


def test_it_is_active_exactly_where_the_interpreter_splits_superinstructions():
    assert (ON_312 and quicken._quicken is not None) == quicken.ACTIVE
    if not quicken.ACTIVE:
        assert quicken.restore_quickened([callee.__code__]) == 0


@needs_312
def test_tables_give_base_opcodes_and_cache_sizes():
    deopt, caches = quicken.TABLES[:256], quicken.TABLES[256:]
    ops = dis._all_opmap  # type: ignore[attr-defined]
    assert deopt[ops["LOAD_FAST__LOAD_CONST"]] == ops["LOAD_FAST"]
    assert deopt[ops["BINARY_OP_ADD_INT"]] == ops["BINARY_OP"]
    assert deopt[ops["INSTRUMENTED_CALL"]] == ops["CALL"]
    assert deopt[ops["INSTRUMENTED_LINE"]] == 0  # its base is per instruction: unknown
    assert caches[ops["BINARY_OP"]] == opcode._inline_cache_entries[ops["BINARY_OP"]]  # type: ignore[attr-defined]


@needs_312
def test_the_allocation_pass_splits_them_and_a_timing_pass_times_them_paired():
    inner = fresh(callee)
    expected = paired(inner.__code__)
    assert expected  # LOAD_FAST + LOAD_CONST pairs at least

    def scenario() -> int:
        return sum(inner(i & 7) for i in range(50))

    alloc = run_allocation_pass(scenario, [inner.__code__], repeat=2)
    assert paired(inner.__code__) == []  # what 3.12 does to code a monitoring tool saw
    assert inner.__code__ in alloc.code_objects()

    seen: list[list[int]] = []

    def observed() -> int:
        seen.append(paired(inner.__code__))
        return scenario()

    log = run_timing_pass(observed, [PySite(scenario)], repeat=5, running=alloc.code_objects())
    assert seen and all(offsets == expected for offsets in seen)
    assert len(log.enters[0]) // 2 >= 5  # the probes still fired
    assert scenario() == sum(callee(i & 7) for i in range(50))  # behaviour unchanged


@needs_312
def test_code_with_line_events_of_another_tool_is_left_alone():
    inner = fresh(callee)
    monitoring = sys.monitoring
    lines: list[int] = []
    other = acquire_tool_id()
    try:
        monitoring.register_callback(
            other, monitoring.events.LINE, lambda code, line: lines.append(line)
        )
        monitoring.set_local_events(other, inner.__code__, monitoring.events.LINE)
        assert quicken.restore_quickened([inner.__code__]) == 0
        inner(3)
        assert len(lines) == 3  # every line event still fires
    finally:
        monitoring.set_local_events(other, inner.__code__, 0)
        release_tool_id(other)


@needs_312
def test_restoring_gives_the_pairs_of_a_fresh_code_object_every_time():
    inner = fresh(callee)
    expected = paired(inner.__code__)
    for _ in range(2):  # each restore first applies pending instrumentation (splitting)
        assert quicken.restore_quickened([inner.__code__]) == len(expected)
        assert paired(inner.__code__) == expected
        assert inner(3) == callee(3)
    assert sys.monitoring.get_tool(sys.monitoring.PROFILER_ID) is None  # its tool id is freed


@needs_312
def test_profile_times_what_the_allocation_pass_split_paired_again():
    inner = fresh(callee)
    expected = paired(inner.__code__)
    seen: list[list[int]] = []

    def scenario() -> int:
        seen.append(paired(inner.__code__))
        return sum(inner(i & 7) for i in range(50))

    report = profile(
        scenario, [Target("t.scenario", scenario)], scenario_id="s", repeat=3, time_budget=0.0
    )
    assert [] in seen  # the allocation pass split it ...
    assert seen[-1] == expected  # ... and the timing pass ran it paired
    assert any(m.metric is Metric.WALL for m in report.measurements)
