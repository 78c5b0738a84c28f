"""Bytes read and written through system calls by the current thread (Linux).

The allocation pass reads these counters at every entry and exit of a *target* function, so
each call gets the bytes its ``read``/``write``-family system calls moved — files, pipes,
sockets and terminals alike, whether or not the page cache served them (the kernel's ``rchar``
and ``wchar`` in ``/proc/thread-self/io``). Buffered Python files reach the kernel when their
buffer flushes, so the bytes are charged to whichever call flushed them — what the system
really did, which is not always the call that asked.

Reading the counter is itself a ``read`` of the proc file and raises ``rchar`` by the length
returned. The counter keeps the running total of those lengths and subtracts it, so the figures
are exact: a target nested in another adds nothing to the outer one's read bytes.

Elsewhere (no ``/proc``), :func:`open_io_counter` returns None and no I/O metrics are recorded.
"""

from __future__ import annotations

import contextlib
import os

PROC_FILE = "/proc/thread-self/io"
MECHANISM = "read/write syscalls (/proc/thread-self/io rchar/wchar)"


class IoCounter:
    """Cumulative (read, written) bytes of this thread's system calls, minus our own reads.

    It is read from inside the profiler's hook while package code runs, and that code may close
    or reuse our descriptor (``os.closerange``). A read that fails or returns anything but the
    proc file's text switches the counter off for good — None from then on — instead of raising
    into the scenario or reporting another file's numbers.
    """

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd
        self._own_reads = 0  # bytes this counter's own reads of the proc file added to rchar

    def read(self) -> tuple[int, int] | None:
        if self._fd is None:
            return None
        try:
            data = os.pread(self._fd, 512, 0)
            if not data.startswith(b"rchar:"):
                raise ValueError("not /proc/thread-self/io")
            first = data.index(b"\n")
            second = data.index(b"\n", first + 1)
            rchar = int(data[6:first])
            wchar = int(data[data.index(b":", first) + 1 : second])
        except (OSError, ValueError):
            self._fd = None  # closed or reused by the code being measured: stop, do not guess
            return None
        corrected = rchar - self._own_reads  # this read's own bytes count from the next one on
        self._own_reads += len(data)
        return corrected, wchar

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):  # already closed by the code that was measured
                os.close(self._fd)
            self._fd = None


def open_io_counter() -> IoCounter | None:
    """A counter for the calling thread (read it from this thread only), or None when the
    platform does not expose per-thread I/O counters."""
    try:
        fd = os.open(PROC_FILE, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    counter = IoCounter(fd)
    if counter.read() is None:  # present but unreadable or in an unexpected format
        os.close(fd)  # still ours: nothing else ran in between
        return None
    return counter


def io_mechanism() -> str:
    """What measures I/O bytes here, for the stored calibration ("" when nothing does)."""
    counter = open_io_counter()
    if counter is None:
        return ""
    counter.close()
    return MECHANISM
