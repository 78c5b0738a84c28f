"""Why a worker that died while running a task did so, said for the coverage report."""

from __future__ import annotations

import signal

from apiprof.model.records import Coverage, Failure

_CRASH_SIGNALS = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "arithmetic fault",
    signal.SIGABRT: "abort",
}


def describe_death(returncode: int, stderr_tail: str, memory_mb: int) -> Failure:
    """Why a worker that exited while running a task did so."""
    return Failure(*_death(returncode, stderr_tail, memory_mb))


def _death(returncode: int, stderr_tail: str, memory_mb: int) -> tuple[Coverage, str]:
    if returncode < 0:
        sig = -returncode
        if sig in _CRASH_SIGNALS:
            name = signal.Signals(sig)
            return Coverage.CRASHED, f"the worker crashed: {name.name} ({_CRASH_SIGNALS[name]})"
        if sig == signal.SIGXCPU:
            return Coverage.TIMED_OUT, "the worker used up its CPU-time limit"
        # the worker's own stop for a call stuck in C code (worker.run_with_call_timeout)
        if sig == signal.SIGPROF:
            return Coverage.TIMED_OUT, (
                "a single call ran past the per-call timeout and did not answer the interrupt "
                "(C code, or code that blocked it); its worker was stopped"
            )
        if sig == signal.SIGKILL:
            return (
                Coverage.MEMORY,
                "the worker was killed by SIGKILL (most likely the out-of-memory killer)",
            )
        return Coverage.CRASHED, f"the worker was killed by {signal.Signals(sig).name}"
    if "MemoryError" in stderr_tail:
        return Coverage.MEMORY, f"ran out of memory (worker cap {memory_mb} MiB)"
    last = next((line.strip() for line in reversed(stderr_tail.splitlines()) if line.strip()), "")
    return Coverage.CRASHED, f"the worker exited with code {returncode}" + (
        f": {last[:200]}" if last else ""
    )
