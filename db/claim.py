"""Claims on a database file, so that one scan never deletes a file another scan is using.

A scan that created a new database file removes it again when it stored nothing: a scan that
fails before it starts should leave no empty file behind. A second scan may have opened the
same new file in the meantime. Each scan therefore holds a shared ``flock`` on the file while
it runs, and the file is removed only under an exclusive one. ``flock`` locks are separate
from the POSIX record locks SQLite itself takes, so the two do not interfere.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SIDE_FILES = ("-wal", "-shm", "-journal")
"""Files SQLite keeps beside a database; removed with it."""


@dataclass(frozen=True)
class Claim:
    """A scan's hold on a database file; ``created`` tells whether this scan made the file.
    ``fd`` is -1 when the file could not be opened (SQLite will then say why)."""

    path: Path
    created: bool
    fd: int


@contextlib.contextmanager
def claim(path: str | Path) -> Iterator[Claim]:
    """Hold a shared claim on ``path`` (creating an empty file when there is none) for the
    duration of the block."""
    held = _take(Path(path))
    try:
        yield held
    finally:
        if held.fd >= 0:
            os.close(held.fd)


def remove_if_unclaimed(held: Claim) -> bool:
    """Delete the claimed database and its side files unless another scan holds a claim on
    it too; True when they were deleted."""
    if held.fd < 0:
        return False
    try:
        fcntl.flock(held.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    if not _still_at_path(held.fd, held.path):
        return False
    for suffix in SIDE_FILES:
        with contextlib.suppress(OSError):
            Path(f"{held.path}{suffix}").unlink()
    with contextlib.suppress(OSError):
        held.path.unlink()
    return True


def _take(path: Path) -> Claim:
    """Open ``path`` and claim it shared. When another scan deleted the file between the open
    and the lock, the claim is on a file nobody will see again: open the path anew."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            created = True
        except FileExistsError:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:  # deleted since the first open: try again
                continue
            except OSError:
                return Claim(path, False, -1)
            created = False
        except OSError:  # no such folder, no permission: opening the database will say so
            return Claim(path, False, -1)
        fcntl.flock(fd, fcntl.LOCK_SH)
        if _still_at_path(fd, path):
            return Claim(path, created, fd)
        os.close(fd)


def _still_at_path(fd: int, path: Path) -> bool:
    """Whether the open file ``fd`` is still the file found at ``path``."""
    try:
        found = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (opened.st_dev, opened.st_ino)
