"""At most N programs collect at once: N lock files, one held by each collecting program.

A program takes the first free slot with a non-blocking exclusive lock and keeps the file open
while it runs; the operating system drops the lock when the process ends however it ends, so a
crashed program never keeps its slot.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from apiprof.engine.collect.paths import Layout

if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True


class Slot:
    """A held slot; :meth:`release` (or the end of the process) frees it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def _slot_paths(layout: Layout, count: int) -> list[Path]:
    return [layout.slots / f"slot-{i}.lock" for i in range(count)]


def try_lock_file(path: Path) -> int | None:
    """An open descriptor holding an exclusive lock on ``path``, or None if someone holds it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    if _try_lock(fd):
        return fd
    os.close(fd)
    return None


def acquire_slot(layout: Layout, max_programs: int) -> Slot | None:
    """The first free slot of ``max_programs``, or None when all are taken."""
    for path in _slot_paths(layout, max_programs):
        fd = try_lock_file(path)
        if fd is not None:
            return Slot(path, fd)
    return None


def slots_in_use(layout: Layout, max_programs: int) -> int:
    """How many programs hold a slot right now (checked by trying each lock)."""
    busy = 0
    for path in _slot_paths(layout, max_programs):
        if not path.exists():
            continue
        fd = try_lock_file(path)
        if fd is None:
            busy += 1
        else:
            os.close(fd)
    return busy
