"""The local spool: one file per batch, written atomically, read by the uploader.

A batch is written to a hidden temporary file, flushed to disk and renamed into place, so a
reader only ever sees whole batches: a host program killed mid-write leaves at most a hidden
temporary file (cleaned up later), never a torn batch. Every write swallows ``OSError`` — a
full disk or a read-only home costs that batch, never the host program.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from apiprof.engine.collect.paths import Layout
from apiprof.engine.collect.wire import Batch

SUFFIX = ".json"
STALE_TEMP_SECONDS = 3600


def write_batch(layout: Layout, batch: Batch) -> Path | None:
    """Add ``batch`` to the spool; returns its path, or None if it could not be written."""
    return write_atomic(layout.spool / f"{batch.batch_id}{SUFFIX}", batch.to_bytes())


def write_atomic(path: Path, data: bytes) -> Path | None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return path
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None


def spooled(layout: Layout) -> list[Path]:
    """Batch files waiting for upload, oldest first."""
    try:
        entries = [e for e in os.scandir(layout.spool) if e.name.endswith(SUFFIX) and e.is_file()]
    except OSError:
        return []
    entries.sort(key=lambda e: (e.stat().st_mtime_ns, e.name))
    return [Path(e.path) for e in entries]


def spool_bytes(layout: Layout) -> int:
    total = 0
    for path in spooled(layout):
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total


def remove_stale_temporaries(layout: Layout) -> int:
    """Delete temporary files left by programs killed mid-write (older than an hour)."""
    removed = 0
    cutoff = time.time() - STALE_TEMP_SECONDS
    try:
        entries = list(os.scandir(layout.spool))
    except OSError:
        return 0
    for entry in entries:
        if entry.name.startswith(".") and entry.name.endswith(".tmp"):
            try:
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue
    return removed


def reject(layout: Layout, path: Path, reason: str) -> None:
    """Move a batch the service refused out of the spool, with the reason beside it."""
    try:
        layout.rejected.mkdir(parents=True, exist_ok=True)
        os.replace(path, layout.rejected / path.name)
        (layout.rejected / f"{path.stem}.reason.txt").write_text(reason + "\n", encoding="utf-8")
    except OSError:
        pass


def purge(layout: Layout) -> int:
    """Delete every spooled, rejected and half-written batch; returns how many files went."""
    removed = 0
    for directory in (layout.spool, layout.rejected):
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_file():
                os.unlink(entry.path)
                removed += 1
    return removed
