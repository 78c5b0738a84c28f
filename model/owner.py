"""Which process runs a scan, and whether it still does.

A scan row says ``running`` both while its process works and after that process was killed
(``kill -9``, a power cut): nothing was left to mark it. ``--resume`` must continue only the
second kind — two processes measuring the same entry points into one scan would double them.
The scan row keeps the host, the pid and the process's start time (so a recycled pid is not
mistaken for the scanner); :func:`still_running` checks them. Sandbox folders are named after
their scanner the same way, so the next scan removes only a dead scanner's folders.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class ScanOwner:
    host: str
    pid: int
    process_started: str  # kernel start time of the process ("" where unknown)

    def to_row(self) -> dict[str, object]:
        return {"host": self.host, "pid": self.pid, "process_started": self.process_started}


def process_start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux ``/proc/PID/stat`` field 22),
    "" where it cannot be read. Unique per pid over a boot, which is what makes it a check."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # the command name may hold spaces and ")"
            fields = stat.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()
    except (OSError, IndexError):
        return ""


def owner_of_row(row: tuple) -> ScanOwner | None:
    """The owner recorded as ``(host, pid, process_started)``; None for scans older than that."""
    host, pid, started = row
    return ScanOwner(host, int(pid), started or "") if host and pid else None


def this_process() -> ScanOwner:
    return ScanOwner(socket.gethostname(), os.getpid(), process_start_time(os.getpid()))


def still_running(owner: ScanOwner) -> bool:
    """Whether ``owner`` is a live process on this host. Another host cannot be asked: a scan
    recorded elsewhere counts as not running (the database file was copied or shared)."""
    if owner.host != socket.gethostname() or owner.pid <= 0 or owner.pid == os.getpid():
        return False
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by another user
    started = process_start_time(owner.pid)
    return not (owner.process_started and started and started != owner.process_started)
