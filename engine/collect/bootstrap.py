"""Started by the ``apiprof-collect.pth`` hook at interpreter start-up when collection is on.

This runs on the host program's main thread before its own code, so it only registers a
garbage-collection callback and exit and fork handlers; everything else (settings, the
reference, probes) is imported and paid for later, inside the collector's budget. Any failure
leaves the program running without collection.

The collector has no thread of its own: it does its work in the program's garbage-collection
callbacks (``gc.callbacks``), on whichever thread triggered the collection. A thread, even one
that only sleeps, was measured to cost a single-threaded program ≈1 % of its CPU time, and so
did one that had already ended (most likely the C library's allocator, which locks on every
call once a process has had a second thread).
Collections come as the program allocates; the callback's fast path compares one monotonic clock
reading with the next time anything can be due, so a program pays nothing noticeable between
the collector's turns. A program that allocates no containers (or switches the collector off)
gets no turns, and so is not collected beyond this start-up hook; the final summary is written
at exit either way.

Only built-in modules are imported here (and ``apiprof.engine.collect.home``, os and sys only).
"""

from __future__ import annotations

import _thread
import atexit
import gc
import os
import sys
import time

TYPE_CHECKING = False  # not typing's: importing typing (re, enum...) costs every collected program
if TYPE_CHECKING:
    from typing import Any

_state: dict[str, Any] = {
    "started": False,
    "collector": None,
    "started_ns": 0,
    "started_cpu_ns": 0,
    "main_ns": 0,
    "next_ns": 0,  # perf_counter_ns before which no turn can be due
    "warm_up_ns": 0,  # program CPU time before the collector sets itself up
}
_turn = _thread.allocate_lock()  # held during a turn and at exit: turns never overlap

STARTUP_COST_NS = 100_000_000
"""What the collector's imports and set-up are assumed to cost until one start-up was measured
(then the last measured cost counts). The collector starts only once the program has used
enough CPU time for this to fit the budget (≈ 4–10 s of work at the default 1 %): a short
program pays nothing but this module, a long one never more than its budget."""

_OWN_TOOLS = ("apiprof", "apiprof-scan", "apiprof-lsp")


def _is_own_tool() -> bool:
    """apiprof's own commands (and their workers, which inherit no collection settings) are
    not collected: their probes would meet the collector's."""
    argv = getattr(sys, "orig_argv", sys.argv)
    if len(argv) > 1:
        script = os.path.basename(argv[1])
        if script.split(".")[0] in _OWN_TOOLS:
            return True
        if argv[1] == "-m" and len(argv) > 2 and argv[2].split(".")[0] == "apiprof":
            return True
    return False


def warmup_cpu_ns(environ: Any = os.environ) -> float:
    """Program CPU time before the collector sets itself up: its start-up cost ÷ budget."""
    try:
        budget = float(environ.get("APIPROF_COLLECT_BUDGET") or 0.01)
    except ValueError:
        budget = 0.01
    try:
        from apiprof.engine.collect.home import home_dir

        with open(os.path.join(home_dir(environ), "state", "setup-cost-ns"), "rb") as measured:
            cost = max(1_000_000, int(measured.read(32)))
    except (OSError, ValueError):
        cost = STARTUP_COST_NS
    return min(60e9, cost / max(budget, 1e-4))


def start() -> None:
    """Begin collecting this program (once per process, whatever calls this)."""
    if _state["started"]:
        return
    _state["started"] = True
    try:
        cpu0 = time.thread_time_ns()
        if _is_own_tool():
            return
        atexit.register(_at_exit)
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _begin_program(warmup_cpu_ns())
        gc.callbacks.append(_on_collection)
        _state["main_ns"] = time.thread_time_ns() - cpu0  # CPU time, as the budget counts
    except Exception:
        pass


def _begin_program(warm_up_ns: float) -> None:
    """The program's work (the base of the budget) counts from now."""
    now = time.perf_counter_ns()
    _state["started_ns"] = now
    _state["started_cpu_ns"] = time.process_time_ns()
    _state["warm_up_ns"] = warm_up_ns
    # a program's CPU time grows no faster than the clock (one busy thread), so nothing is due
    # before then; with several busy threads the turn only comes a little late
    _state["next_ns"] = now + warm_up_ns


def _on_collection(phase: str, info: dict[str, int]) -> None:
    """The collector's turn, after a garbage collection — when something is due."""
    if phase != "stop" or time.perf_counter_ns() < _state["next_ns"]:
        return
    if not _turn.acquire(False):
        return
    try:
        collector = _state["collector"]
        if collector is None:
            _state["next_ns"] = _warm_up_or_set_up()
        elif collector.closed:
            _stop_turns()
        else:
            _state["next_ns"] = collector.turn()
    except Exception:
        _stop_turns()
    finally:
        _turn.release()


def _warm_up_or_set_up() -> float:
    """Set the collector up once the program has done enough work to pay for it; until then,
    the earliest time it can have. Returns when to look next."""
    missing = _state["warm_up_ns"] - (time.process_time_ns() - _state["started_cpu_ns"])
    if missing > 0:
        return time.perf_counter_ns() + missing
    cpu0 = time.thread_time_ns()
    try:
        from apiprof.engine.collect.collector import Collector
        from apiprof.engine.collect.config import load_config
        from apiprof.engine.collect.paths import Layout
    except ImportError:
        # the collection may have come in the middle of the program's own import of a module
        # the collector needs (then only half there): try again a second later, twice at most
        _state["import_failures"] = failures = _state.get("import_failures", 0) + 1
        if failures > 2:
            raise
        return time.perf_counter_ns() + 1e9
    layout = Layout.current()
    collector = Collector(
        layout,
        load_config(layout),
        _state["started_ns"],
        _state["main_ns"],
        _state["started_cpu_ns"],
    )
    collector.own_ns = time.thread_time_ns() - cpu0
    _state["collector"] = collector
    if not collector.begin():
        _stop_turns()
        return float("inf")
    return collector.turn()


def _stop_turns() -> None:
    """Collection off for the rest of this program (exit still closes the collector)."""
    _state["next_ns"] = float("inf")
    if _on_collection in gc.callbacks:
        gc.callbacks.remove(_on_collection)


def _at_exit() -> None:
    _stop_turns()
    collector = _state["collector"]
    if collector is None or not _turn.acquire(timeout=2.0):
        return
    try:  # no contextlib import at start-up: the host would pay for it
        collector.close()
    except Exception:
        pass
    finally:
        _turn.release()


def _after_fork_in_child() -> None:
    """A forked child is a program of its own: its work counts from now, and the parent's calls
    stay the parent's (see ``Collector.after_fork_in_child``)."""
    global _turn
    _turn = _thread.allocate_lock()  # another of the parent's threads may have held it
    try:
        collector = _state["collector"]
        if collector is None:
            _begin_program(_state["warm_up_ns"])
        elif collector.after_fork_in_child():
            _state["next_ns"] = time.perf_counter_ns()
        else:
            _stop_turns()
    except Exception:
        _stop_turns()
