"""The fallback for hangs the watchdog cannot see: C code that holds the GIL.

The delay tracker's watchdog is a Python thread; while C code holds the GIL it cannot run, so
it cannot notice the delay. :mod:`faulthandler` can: its timer is a C thread that needs no GIL
and, when it expires, writes every Python thread's stack to a file. The watchdog re-arms the
timer as a heartbeat; if the heartbeat stops for ``seconds``, the dump lands in the file, and
the watchdog, once it runs again, turns the dump into samples of the trace it records.

faulthandler has one timer per process: an application using ``dump_traceback_later`` itself
should set ``hang_seconds = 0``.
"""

from __future__ import annotations

import faulthandler
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from apiprof.tracing.stacks import StackTable

_THREAD = re.compile(r"^(?:Current thread|Thread) (0x[0-9a-fA-F]+)")
_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.+)$')


@dataclass(frozen=True)
class HangDump:
    """Every thread's stack at the moment the heartbeat had been silent for ``seconds``."""

    at_ns: int  # clock time the dump was written (the last heartbeat + seconds)
    seconds: float
    text: str
    stacks: dict[int, int]  # thread ident → stack id


def parse_dump(text: str, stacks: StackTable, root: Callable[[int], int]) -> dict[int, int]:
    """Thread ident → interned stack of a faulthandler dump (frames listed innermost first);
    ``root(ident)`` is the stack a thread's stacks start with."""
    threads: dict[int, list[tuple[str, int, str]]] = {}
    current: list[tuple[str, int, str]] | None = None
    for line in text.splitlines():
        header = _THREAD.match(line)
        if header:
            current = threads.setdefault(int(header.group(1), 16), [])
            continue
        frame = _FRAME.match(line)
        if frame and current is not None:
            current.append((frame.group(1), int(frame.group(2)), frame.group(3)))
    result = {}
    for ident, frames in threads.items():
        stack = start = root(ident)
        for file, lineno, function in reversed(frames):
            stack = stacks.stack_id(stack, stacks.frame_at(file, function, lineno))
        if stack != start:
            result[ident] = stack
    return result


class HangWatch:
    def __init__(
        self,
        path: Path,
        seconds: float,
        stacks: StackTable,
        root: Callable[[int], int],
        clock: Callable[[], int],
    ) -> None:
        self.path, self.seconds, self.stacks, self.clock = path, seconds, stacks, clock
        self.root = root
        self._file: io.FileIO | None = None
        self._armed_at = 0
        self._read = 0

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w+b", buffering=0)  # noqa: SIM115 (lives until stop)
        self._arm(self.clock())

    def _arm(self, now: int) -> None:
        assert self._file is not None
        faulthandler.dump_traceback_later(self.seconds, repeat=False, file=self._file)
        self._armed_at = now

    def heartbeat(self, now: int) -> None:
        """Re-arm the timer when half of it has run out (re-arming starts a C thread)."""
        if self._file is not None and now - self._armed_at >= self.seconds * 5e8:
            self._arm(now)

    def collect(self) -> HangDump | None:
        """A dump written since the last look, if any (then the timer is re-armed)."""
        if self._file is None:
            return None
        size = self.path.stat().st_size
        if size <= self._read:
            return None
        self._file.seek(self._read)
        text = self._file.read(size - self._read).decode("utf-8", "replace")
        self._read = size
        dump = HangDump(
            self._armed_at + round(self.seconds * 1e9),
            self.seconds,
            text,
            parse_dump(text, self.stacks, self.root),
        )
        self._arm(self.clock())
        return dump

    def stop(self) -> None:
        if self._file is None:
            return
        faulthandler.cancel_dump_traceback_later()
        self._file.close()
        self._file = None
        self.path.unlink(missing_ok=True)
