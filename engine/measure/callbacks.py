"""The probes of a timing pass, by mechanism: the C ``sys.monitoring`` callbacks of the
``_timing`` extension, their Python fallback, and the 3.11 ``sys.setprofile`` hook. All write
the same records (:class:`~apiprof.engine.measure.passlog.PassLog`): entry ``(cpu, wall)``,
exit ``(wall, cpu)``, ``cpu`` -1 for calls whose CPU clock is not sampled.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Hashable, Mapping

from apiprof.engine.measure.framecode import code_of
from apiprof.engine.measure.invariants import PassCheck
from apiprof.engine.measure.probes import PATTERN_MASK, ProbeId, Record

PASS_MODULES: set[int] = set()
"""ids of the namespaces of the modules that run a pass: the profile hook ignores the C calls
their code makes (the pass's own loop), see :func:`run_by_the_pass`."""


def run_by_the_pass(namespace: dict[str, object]) -> None:
    """Mark a module's code (its ``globals()``) as the pass's own: the profile hook does not
    take its calls of builtins for the scenario's."""
    PASS_MODULES.add(id(namespace))


run_by_the_pass(globals())


def c_monitoring_callbacks(probe) -> dict[str, Callable[..., object]]:
    """The C probe's callbacks, by sys.monitoring event name."""
    return {
        "PY_START": probe.py_start,
        "PY_RESUME": probe.py_start,
        "PY_THROW": probe.py_throw,
        "PY_RETURN": probe.py_exit,
        "PY_YIELD": probe.py_exit,
        "PY_UNWIND": probe.py_unwind,
        "CALL": probe.call,
        "C_RETURN": probe.c_exit,
        "C_RAISE": probe.c_exit,
    }


def make_monitoring_callbacks(
    enters: list[Record],
    exits: list[Record],
    c_ids: Mapping[Hashable, int],
    check: PassCheck | None = None,
) -> dict[str, Callable[..., object]]:
    """The Python probes, by sys.monitoring event name (the fallback of the C probes). Kept
    minimal: they run inside measurements. A fault (an exit whose entry was never seen) is
    reported to ``check`` instead of raising into the measured code."""
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    lookup = c_ids.get
    failed = (check or PassCheck("timing pass")).callback_failed

    def on_start(code, offset):
        r = enters[code.co_consts[-1]]
        r.append(cpu() if r.pattern[len(r) & PATTERN_MASK] else -1)
        r.append(wall())

    def on_exit(code, offset, value):
        now = wall()
        try:
            i = code.co_consts[-1]
            x = exits[i]
            x.append(now)
            x.append(cpu() if enters[i] and enters[i][-2] >= 0 else -1)
        except Exception as error:
            failed("a timing exit probe", error)

    def on_throw(code, offset, exc):  # global event: filter on the tag
        consts = code.co_consts
        if consts and type(consts[-1]) is ProbeId:
            on_start(code, offset)

    def on_unwind(code, offset, exc):  # global event: filter on the tag
        consts = code.co_consts
        if consts and type(consts[-1]) is ProbeId:
            on_exit(code, offset, exc)

    def on_call(code, offset, func, arg0):
        try:
            i = lookup(func)
        except TypeError:  # an unhashable callable is never a target
            return
        if i is not None:
            r = enters[i]
            r.append(cpu() if r.pattern[len(r) & PATTERN_MASK] else -1)
            r.append(wall())

    def on_c_exit(code, offset, func, arg0):
        now = wall()
        try:
            i = lookup(func)
        except TypeError:
            return
        if i is not None:
            x = exits[i]
            x.append(now)
            x.append(cpu() if enters[i] and enters[i][-2] >= 0 else -1)

    return {
        "PY_START": on_start,
        "PY_RESUME": on_start,
        "PY_THROW": on_throw,
        "PY_RETURN": on_exit,
        "PY_YIELD": on_exit,
        "PY_UNWIND": on_unwind,
        "CALL": on_call,
        "C_RETURN": on_c_exit,
        "C_RAISE": on_c_exit,
    }


def make_profile_hook(
    enters: list[Record],
    exits: list[Record],
    c_ids: Mapping[Hashable, int],
    ticks: list[tuple[list[int], list[int]]],
    check: PassCheck | None = None,
) -> Callable[[types.FrameType, str, object], None]:
    """The sys.setprofile probe (3.11, generators and C sites). It counts its own calls so the
    cost of filtered-out events inside a measured interval can be subtracted."""
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    frame_code = code_of  # not frame.f_code: that runs the sandbox's audit hook (framecode)
    lookup = c_ids.get
    failed = (check or PassCheck("timing pass")).callback_failed
    own = PASS_MODULES
    count = 0

    def hook(frame, event, arg):
        nonlocal count
        count += 1
        try:
            if event == "call":
                consts = frame_code(frame).co_consts
                if consts and type(consts[-1]) is ProbeId:
                    i = consts[-1]
                    r = enters[i]
                    ticks[i][0].append(count)
                    r.append(cpu() if r.pattern[len(r) & PATTERN_MASK] else -1)
                    r.append(wall())
            elif event == "return":
                now = wall()
                consts = frame_code(frame).co_consts
                if consts and type(consts[-1]) is ProbeId:
                    i = consts[-1]
                    x = exits[i]
                    x.append(now)
                    x.append(cpu() if enters[i] and enters[i][-2] >= 0 else -1)
                    ticks[i][1].append(count)
            elif id(frame.f_globals) in own:  # the pass's own loop calling builtins
                return
            elif event == "c_call":
                try:
                    c = lookup(arg)
                except TypeError:
                    return
                if c is not None:
                    r = enters[c]
                    ticks[c][0].append(count)
                    r.append(cpu() if r.pattern[len(r) & PATTERN_MASK] else -1)
                    r.append(wall())
            else:  # c_return, c_exception
                now = wall()
                try:
                    c = lookup(arg)
                except TypeError:
                    return
                if c is not None:
                    x = exits[c]
                    x.append(now)
                    x.append(cpu() if enters[c] and enters[c][-2] >= 0 else -1)
                    ticks[c][1].append(count)
        except Exception as error:
            failed("the timing profile hook", error)

    return hook
