"""Started by the ``apiprof-collect.pth`` hook at interpreter start-up when collection is on.

This runs on the host program's main thread before its own code, so it only starts a thread and
registers exit and fork handlers; everything else (settings, the reference, probes) is imported
and paid for on the collector's thread, inside the collector's budget. Any failure leaves the
program running without collection.

The host should not notice that thread: it is a bare ``_thread`` thread (absent from
``threading.enumerate()`` and never waited for at shutdown), ``threading`` is imported here on
the main thread (the module takes whichever thread imports it first for the main thread), and
the thread is stopped around every ``os.fork()`` — Python warns about forking a process with
threads, and a forked child must not inherit a thread holding a lock. Only built-in modules
and ``threading`` are imported here.
"""

from __future__ import annotations

import _thread
import atexit
import gc
import os
import sys
import threading
import time

TYPE_CHECKING = False  # not typing's: importing typing (re, enum...) costs every collected program
if TYPE_CHECKING:
    from typing import Any

_state: dict[str, Any] = {
    "started": False,
    "collector": None,
    "stop": threading.Event(),  # set at exit (and around forks) during the warm-up wait
    "done": threading.Event(),  # set when the collector's thread has returned
    "started_ns": 0,
    "started_cpu_ns": 0,
    "main_ns": 0,
}
_state["done"].set()

STARTUP_COST_NS = 100_000_000
"""What the collector's imports and set-up are assumed to cost on its thread until one start-up
was measured (then the last measured cost counts). The collector starts only once the program
has used enough CPU time for this to fit the budget (≈ 4–10 s of work at the default 1 %): a
short program pays nothing but this module, a long one never more than its budget."""

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


def _program_cpu_ns() -> int:
    return time.process_time_ns() - _state["started_cpu_ns"] - time.thread_time_ns()


def _warm_up() -> bool:
    """Wait until the program has done enough work to pay for the collector's start-up; False
    if it ended (or forks) first."""
    needed = warmup_cpu_ns()
    return wait_for_work(_state["stop"], lambda: needed - _program_cpu_ns())


def wait_for_work(
    stop: threading.Event, missing_ns: Any, deadline_ns: float = float("inf")
) -> bool:
    """Sleep until ``missing_ns()`` (the program's CPU work still to come) is ≤ 0 or the
    ``perf_counter_ns`` deadline passes (True), or ``stop`` is set (False).

    Each sleep lasts as long as the missing work takes at the pace the program last showed:
    on a busy machine a program may get a tenth of a CPU, and every wake-up of this thread has
    it wait for the GIL — tens of context switches while the program is off the CPU, ≈1 % of the
    program's CPU time at one wake-up a second — so it wakes as rarely as it can."""
    pace = 1.0  # the program's CPU seconds per second of wall time, as last seen
    while True:
        missing, now = missing_ns(), time.perf_counter_ns()
        if missing <= 0 or now >= deadline_ns:
            return True
        sleep = min(60.0, max(0.05, missing / 1e9 / pace), (deadline_ns - now) / 1e9)
        if stop.wait(sleep):
            return False
        done = missing - missing_ns()
        pace = max(0.01, done / max(1.0, time.perf_counter_ns() - now))


def start() -> None:
    """Begin collecting this program (once per process, whatever calls this)."""
    if _state["started"]:
        return
    _state["started"] = True
    try:
        t0 = time.perf_counter_ns()
        cpu0 = time.thread_time_ns()
        if _is_own_tool():
            return
        atexit.register(_at_exit)
        os.register_at_fork(
            before=_before_fork, after_in_parent=_restart_later, after_in_child=_after_fork_in_child
        )
        _state["started_ns"] = t0
        _state["started_cpu_ns"] = time.process_time_ns()
        _state["main_ns"] = time.thread_time_ns() - cpu0  # CPU time, as the budget counts
        _start_thread(_thread_main)
    except Exception:
        pass


def _start_thread(target: Any) -> None:
    done: threading.Event = _state["done"]
    done.clear()

    def body() -> None:
        try:
            target()
        except Exception:
            pass
        finally:
            done.set()

    _thread.start_new_thread(body, ())


def _thread_main() -> None:
    if not _warm_up():
        return  # the program ended (or forks) first
    from apiprof.engine.collect.collector import Collector
    from apiprof.engine.collect.config import load_config
    from apiprof.engine.collect.paths import Layout

    layout = Layout.current()
    collector = Collector(
        layout,
        load_config(layout),
        _state["started_ns"],
        _state["main_ns"],
        _state["started_cpu_ns"],
    )
    if _state["stop"].is_set():
        return
    _state["collector"] = collector
    collector.run()


def _at_exit() -> None:
    _state["stop"].set()
    collector = _state["collector"]
    if collector is not None:
        try:  # noqa: SIM105  (no contextlib import at start-up: the host pays for it)
            collector.close()
        except Exception:
            pass


def _os_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _before_fork() -> None:
    """Stop the collector's thread so the fork sees (and the child inherits) none."""
    done: threading.Event = _state["done"]
    if done.is_set():
        return
    try:
        threads = _os_threads()
        collector = _state["collector"]
        (collector.stop if collector is not None else _state["stop"]).set()
        if done.wait(timeout=1.0) and threads:
            deadline = time.perf_counter() + 1.0
            while _os_threads() >= threads and time.perf_counter() < deadline:
                time.sleep(0.0002)  # the OS thread ends just after its last Python code
        _state["paused_for_fork"] = True
    except Exception:
        pass


def _restart_later() -> None:
    """After a fork, in the parent: the thread starts again at the program's next garbage
    collection, not in this hook — Python 3.13 counts threads for its fork warning after the
    hooks have run."""
    if _state.pop("paused_for_fork", False):
        gc.callbacks.append(_restart_at_collection)


def _restart_at_collection(phase: str, info: dict[str, int]) -> None:
    if phase != "stop":
        return
    if _restart_at_collection in gc.callbacks:
        gc.callbacks.remove(_restart_at_collection)
    _restart()


def _restart(child: bool = False) -> None:
    """Start the thread again where it stopped: the warm-up wait, or the collector's ticks (in a
    forked child only if it gets a slot of its own, see ``Collector.after_fork_in_child``)."""
    try:
        collector = _state["collector"]
        if collector is None:
            _state["stop"] = threading.Event()
            if child:  # a program of its own: its work starts now
                _state["started_ns"] = time.perf_counter_ns()
                _state["started_cpu_ns"] = time.process_time_ns()
            _start_thread(_thread_main)
        elif collector.after_fork_in_child() if child else collector.prepare_thread():
            _start_thread(collector.run)
    except Exception:
        pass


def _after_fork_in_child() -> None:
    _state["done"] = threading.Event()
    _state["done"].set()
    if _state.pop("paused_for_fork", False) or _state["collector"] is not None:
        _restart(child=True)
