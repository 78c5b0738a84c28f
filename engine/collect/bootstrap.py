"""Started by the ``apiprof-collect.pth`` hook at interpreter start-up when collection is on.

This runs on the host program's main thread before its own code, so it only starts a thread and
registers exit and fork handlers; everything else (settings, the reference, probes) is imported
and paid for on the collector's thread, inside the collector's budget. ``threading`` is imported
here, on the main thread: the module takes whichever thread imports it first for the main
thread, and the host's ``threading.main_thread()`` and shutdown must keep seeing its own. Any
failure leaves the program running without collection.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from typing import Any

_state: dict[str, Any] = {"started": False, "collector": None, "stop": threading.Event()}

STARTUP_COST_NS = 40_000_000
"""About what the collector's imports and set-up cost on its thread. It starts after the program
has run long enough for this to fit the budget (4 s at the default 1 %), so a short program
pays nothing but this module, and a long one never pays more than its budget."""

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


def start() -> None:
    """Begin collecting this program (once per process, whatever calls this)."""
    if _state["started"]:
        return
    _state["started"] = True
    try:
        t0 = time.perf_counter_ns()
        if _is_own_tool():
            return
        atexit.register(_at_exit)
        os.register_at_fork(after_in_child=_after_fork)
        _start_thread(_thread_main, t0, time.perf_counter_ns() - t0)
    except Exception:
        pass


def _start_thread(target: Any, *args: Any) -> None:
    threading.Thread(target=target, args=args, name="apiprof-collect", daemon=True).start()


def warmup_seconds(environ: Any = os.environ) -> float:
    try:
        budget = float(environ.get("APIPROF_COLLECT_BUDGET") or 0.01)
    except ValueError:
        budget = 0.01
    return min(60.0, STARTUP_COST_NS / 1e9 / max(budget, 1e-4))


def _thread_main(started_ns: int, main_thread_ns: int) -> None:
    if _state["stop"].wait(warmup_seconds()):
        return  # the program ended first
    try:
        from apiprof.engine.collect.collector import Collector
        from apiprof.engine.collect.config import load_config
        from apiprof.engine.collect.paths import Layout

        layout = Layout.current()
        collector = Collector(layout, load_config(layout), started_ns, main_thread_ns)
        if _state["stop"].is_set():
            return
        _state["collector"] = collector
        collector.run()
    except Exception:
        pass


def _at_exit() -> None:
    _state["stop"].set()
    collector = _state["collector"]
    if collector is not None:
        try:  # noqa: SIM105  (no contextlib import at start-up: the host pays for it)
            collector.close()
        except Exception:
            pass


def _after_fork() -> None:
    collector = _state["collector"]
    try:
        if collector is None:  # still warming up: the child starts its own wait
            _state["stop"] = threading.Event()
            _start_thread(_thread_main, time.perf_counter_ns(), 0)
            return
        if collector.after_fork_in_child():
            _start_thread(collector.run)
    except Exception:
        pass
