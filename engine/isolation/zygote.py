"""The zygote's own loop, inside the sandbox: fork a fresh worker per request, reap it, report.

Started by :class:`~apiprof.engine.isolation.spawn.Zygote` as ``python -m
apiprof.engine.isolation.worker --zygote-fd N``, confined like a worker. By the time
:func:`serve_forks` runs, the interpreter has started and imported apiprof's worker code — the
expensive part of a worker's start-up — and nothing else: no package code runs here, ever.

Each request on the control socket is a sandbox path with three descriptors (the child's
request and result pipes and its stderr file). The zygote forks; the child returns from
:func:`serve_forks` with the worker's arguments for that sandbox and goes on to confine itself
exactly as a fresh worker does. The zygote waits for the child, removes what it left in the
IPC namespace (strict level), and writes ``exit STATUS``. Before every fork it checks that it is
still what a fresh worker would be after start-up: one thread, no profiler or monitoring tool
attached — a fork from anything else would hand the child state no fresh worker has.

What fork changes for measurement, and why it does not move the figures: the child's memory is
the zygote's, copied on first write, so the child's first touches of apiprof's objects take
minor page faults; they happen while the package is imported and during the unrecorded
allocation pass and warm-up runs that precede every timing pass. apiprof's objects are frozen
out of the garbage collector (:func:`gc.freeze`) before forking, so a collection during a timed
run does not walk (and fault in) them: a collection then costs what the package's own objects
cost, as in a fresh worker whose collector had already promoted apiprof's objects. Allocation
counting, timing probes and ``sys.monitoring`` tools are only ever set up in the child.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import os
import socket
import sys
import tempfile
import threading
from pathlib import Path

from apiprof.engine.isolation import confine
from apiprof.engine.isolation.sandbox import die_with_parent

MAX_REQUEST = 4096
IPC_RMID = 0


class ZygoteError(RuntimeError):
    """The zygote is no longer in the state a fresh worker starts from."""


def serve_forks(args: argparse.Namespace) -> argparse.Namespace:
    """Fork a worker per request until the scanner closes the control socket (then exit).
    Returns only in a child: the worker arguments for its sandbox and descriptors."""
    control = socket.socket(fileno=args.zygote_fd)
    gc.collect()
    gc.freeze()
    control.sendall(f"ready {os.getpid()}\n".encode())
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, 3)
        except OSError:
            os._exit(0)
        if not message or len(fds) != 3:
            os._exit(0)
        check_pristine()
        pid = os.fork()
        if pid == 0:
            control.close()
            return become_worker(args, Path(os.fsdecode(message)), fds, os.getppid())
        for fd in fds:
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        if args.private_ipc:
            remove_ipc_objects()
        control.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())


def check_pristine() -> None:
    """Refuse to fork from a state no fresh worker is in."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1 or threading.active_count() != 1:
        raise ZygoteError(f"the zygote has {threads} threads; it forks only with one")
    if sys.getprofile() is not None or sys.gettrace() is not None:
        raise ZygoteError("a profiler or tracer is attached to the zygote")
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        tools = [tool for tool in range(6) if monitoring.get_tool(tool) is not None]
        if tools:
            raise ZygoteError(f"sys.monitoring tools {tools} are registered in the zygote")


def become_worker(
    args: argparse.Namespace, sandbox: Path, fds: list[int], zygote: int
) -> argparse.Namespace:
    """The child's first steps: its own session, stderr, sandbox directory and environment."""
    request_fd, result_fd, stderr_fd = fds
    os.setsid()  # its own session and process group: kill(0) reaches only itself
    die_with_parent(zygote)
    os.dup2(stderr_fd, 2)
    os.close(stderr_fd)
    os.chdir(sandbox)
    os.environ.update(confine.sandbox_variables(sandbox))
    tempfile.tempdir = None  # found again from TMPDIR, should anything ask
    values = vars(args) | {
        "request_fd": request_fd,
        "result_fd": result_fd,
        "sandbox": str(sandbox),
        "zygote_fd": -1,
        "parent": 0,  # it dies with its zygote, which dies with the scanner
    }
    return argparse.Namespace(**values)


SHARED_MEMORY = "/dev/shm"


def remove_ipc_objects() -> None:
    """Remove every System V shared memory segment, message queue and semaphore set of this
    IPC namespace, and every POSIX one in ``/dev/shm`` (both the zygote's own at the strict
    level, where bubblewrap gives it its own ``/dev``): a child's must not reach the next."""
    for name in os.listdir(SHARED_MEMORY) if os.path.isdir(SHARED_MEMORY) else ():
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(SHARED_MEMORY, name))
    libc = ctypes.CDLL(None, use_errno=True)
    removers = {
        "shm": lambda ident: libc.shmctl(ident, IPC_RMID, None),
        "msg": lambda ident: libc.msgctl(ident, IPC_RMID, None),
        "sem": lambda ident: libc.semctl(ident, 0, IPC_RMID),
    }
    for kind, remove in removers.items():
        with contextlib.suppress(OSError), open(f"/proc/sysvipc/{kind}") as listing:
            for line in listing.read().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 1 and fields[1].isdigit():
                    remove(int(fields[1]))
