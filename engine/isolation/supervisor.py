"""The scanner's side of a worker's system-call filter: read the call, decide, answer, record.

Each worker's filter (:mod:`~apiprof.engine.isolation.seccomp`) hands two kinds of calls to the
scanner: calls a scan never needs (starting processes, signalling others, mounting...), which
are always refused, and calls whose verdict depends on memory — the path a file is opened for
writing at, the address a socket connects to. For those the supervisor reads the worker's memory
(``/proc/PID/mem``), resolves paths the way the worker would (symbolic links followed inside
the worker's own root, ``/proc/PID/root``) and lets the kernel go on only for writes inside the
sandbox directory and for loopback (or sandboxed Unix-socket) addresses.

Every refusal becomes a :class:`Refusal` with a sentence for the report. This record lives in
the scanner: code in the worker cannot erase it, switch it off or answer for it.

The verdicts on inspected calls are *reports*, not the wall, where the worker runs in its own
mount and network namespaces (the kernel re-reads memory after a "go on", so a thread of the
worker could swap a path in between; the read-only mounts refuse such a write anyway). At the
process isolation level they are the only wall apart from the in-process reporter — raceable,
as the threat model in ``docs/cli.md`` says.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import re
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass

from apiprof.engine.isolation import seccomp
from apiprof.engine.isolation.seccomp import Notification
from apiprof.engine.isolation.unneeded import never_needed

MAX_STRING = 4096
MAX_SYMLINKS = 40
AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
WRITABLE_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"})
_SEMAPHORE = re.compile(r"^/dev/shm/sem\.[^/]+$")
"""A POSIX named semaphore (glibc's ``sem_open``): every ``multiprocessing`` lock makes one and
unlinks it at once. Any other file of ``/dev/shm`` only where ``/dev`` is the worker's own."""
_OWN_COMM = re.compile(r"^/proc/(self|thread-self|\d+)(/task/\d+)?/comm$")
_PROC_FD = re.compile(r"^/proc/(self|thread-self|\d+)(/task/\d+)?/fd/(\d+)$")


@dataclass(frozen=True)
class Refusal:
    """A call the supervisor refused: what it would have done, and which thread asked."""

    reason: str
    thread: int  # the calling thread's id in the scanner's PID namespace


@dataclass(frozen=True)
class WorkerView:
    """What the supervisor needs to know about one worker."""

    pid: int  # the worker's main thread, in the scanner's PID namespace
    sandbox: str  # the only directory it may write in (the same path inside and outside)
    private_network: bool  # in its own network namespace (its loopback is its own)
    private_devices: bool = False  # its /dev (and so /dev/shm) is its own, as bubblewrap makes it


class Memory:
    """Reads from one thread's address space (strings, numbers, structs)."""

    def __init__(self, tid: int) -> None:
        self.fd = os.open(f"/proc/{tid}/mem", os.O_RDONLY | os.O_CLOEXEC)

    def close(self) -> None:
        os.close(self.fd)

    def read(self, address: int, size: int) -> bytes:
        return os.pread(self.fd, size, address) if address else b""

    def string(self, address: int) -> str:
        """A NUL-terminated string (read page by page: the next page may not be mapped)."""
        data = b""
        while address and len(data) < MAX_STRING:
            chunk = self.read(address, 4096 - address % 4096)
            if not chunk:
                break
            end = chunk.find(b"\0")
            if end >= 0:
                return os.fsdecode(data + chunk[:end])
            data += chunk
            address += len(chunk)
        return os.fsdecode(data[:MAX_STRING])

    def u64(self, address: int) -> int:
        raw = self.read(address, 8)
        return struct.unpack("<Q", raw)[0] if len(raw) == 8 else 0


class Supervisor:
    """Answers the notifications of one worker's filter; :meth:`handle` one at a time."""

    def __init__(self, listener: int, view: WorkerView, arch: str) -> None:
        self.listener = listener
        self.view = view
        self.names = seccomp.names_by_number(arch)
        self.refusals: list[Refusal] = []
        self.semaphores: set[str] = set()  # made in the shared /dev/shm: removed when it ends

    def fileno(self) -> int:
        return self.listener

    def close(self) -> None:
        if self.listener >= 0:
            os.close(self.listener)
            self.listener = -1
        for left in self.semaphores:  # a worker killed between making one and unlinking it
            with contextlib.suppress(OSError):
                os.unlink(left)
        self.semaphores.clear()

    def handle(self) -> Refusal | None:
        """Answer one pending notification; returns the refusal, if it was one. Nothing a
        worker puts in its arguments makes this raise: what cannot be read is refused."""
        try:
            notification = seccomp.receive(self.listener)
        except OSError:
            return None
        if notification is None:
            return None
        name = self.names.get(notification.nr, f"#{notification.nr}")
        try:
            memory = Memory(notification.pid)
        except OSError:  # the thread is gone
            return None
        try:
            error, reason = self.decide(name, notification, memory)
        except Exception:  # unreadable memory, absurd pointers or lengths: refuse, said plainly
            error, reason = errno.EPERM, f"made a {name} call whose arguments could not be read"
        finally:
            memory.close()
        if not seccomp.still_waiting(self.listener, notification):
            return None  # what was read may not be what it asked for; it is gone anyway
        try:
            seccomp.respond(self.listener, notification, error=error)
        except OSError:
            return None
        if not reason:
            return None
        refusal = Refusal(reason, notification.pid)
        self.refusals.append(refusal)
        return refusal

    def decide(self, name: str, call: Notification, memory: Memory) -> tuple[int, str]:
        """``(errno, reason)``: 0 lets the call go on; a reason is recorded."""
        check = _FILE_CALLS.get(name)
        if check is not None:
            return self.check_paths(check(self, call, memory))
        if name in _NETWORK_CALLS:
            return self.check_network(name, call, memory)
        if name == "clone3":
            flags = memory.u64(call.args[0])
            if flags & seccomp.CLONE_THREAD:
                return errno.ENOSYS, ""  # a thread: glibc falls back to clone, which is allowed
        return errno.EPERM, never_needed(name, call, memory)

    # -- files ----------------------------------------------------------------------------------
    def check_paths(self, targets: list[tuple[str, str]]) -> tuple[int, str]:
        for verb, path in targets:
            if path and not self.may_write(path) and not self.own_semaphore(verb, path):
                return errno.EPERM, f"tried to {verb} {path} outside the sandbox"
        return 0, ""

    def own_semaphore(self, verb: str, path: str) -> bool:
        """A named semaphore in the shared ``/dev/shm`` this worker makes, or made: never
        another process's (one that exists already) nor a file of another name."""
        if not _SEMAPHORE.match(path):
            return False
        if path not in self.semaphores and (verb == "delete" or os.path.lexists(path)):
            return False
        self.semaphores.add(path)
        return True

    def may_write(self, path: str) -> bool:
        if path in WRITABLE_DEVICES or _OWN_COMM.match(path):
            return True
        if path.startswith("/dev/shm/") and self.view.private_devices:
            return True
        sandbox = self.view.sandbox
        return path == sandbox or path.startswith(sandbox + "/")

    # -- network -------------------------------------------------------------------------------
    def check_network(self, name: str, call: Notification, memory: Memory) -> tuple[int, str]:
        verb = {"connect": "connect to", "bind": "listen on"}.get(name, "send data to")
        for address in _addresses(name, call, memory):
            refused = self.address_refusal(call.pid, address, listening=name == "bind")
            if refused:
                return errno.EPERM, f"tried to {verb} {refused}"
        return 0, ""

    def address_refusal(self, tid: int, raw: bytes, *, listening: bool) -> str:
        """Why this socket address is off limits ("" when it is fine), said for the report."""
        if len(raw) < 2:
            return ""
        family = struct.unpack_from("<H", raw)[0]
        if family in (0, 16):  # AF_UNSPEC (dissolve an association), AF_NETLINK (the kernel)
            return ""
        if family == 1:
            return self.unix_refusal(tid, raw[2:])
        if family in (2, 10) and len(raw) >= (8 if family == 2 else 24):
            port = struct.unpack_from(">H", raw, 2)[0]
            packed = raw[4:8] if family == 2 else raw[8:24]
            address = ipaddress.ip_address(packed)
            if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
                address = address.ipv4_mapped
            if address.is_loopback or (
                listening and address.is_unspecified and self.view.private_network
            ):
                return ""
            shown = f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"
            return f"{shown} (network access is blocked)"
        return f"an address of socket family {family} (network access is blocked)"

    def unix_refusal(self, tid: int, raw_path: bytes) -> str:
        if raw_path[:1] == b"\0":  # abstract: per network namespace
            if self.view.private_network:
                return ""
            name = raw_path[1:].split(b"\0")[0].decode(errors="replace")
            return f"the abstract Unix socket @{name} outside the sandbox"
        text = os.fsdecode(raw_path.split(b"\0")[0])
        path = self.resolve(tid, AT_FDCWD, text)
        if self.may_write(path) and path not in WRITABLE_DEVICES:
            return ""
        if self.view.private_devices and not os.path.lexists(f"/proc/{tid}/root{path}"):
            return ""  # nothing there in its own mounts (glibc asking nscd): the kernel says so
        return f"the Unix socket {path} outside the sandbox"

    # -- paths as the worker sees them ---------------------------------------------------------
    def resolve(self, tid: int, dirfd: int, path: str, *, follow: bool = True) -> str:
        """``path`` as the thread would reach it: relative to ``dirfd`` (or its working
        directory), symbolic links followed inside its own root; a tail that does not exist
        yet is kept as written."""
        if not path.startswith("/"):
            base = os.readlink(
                f"/proc/{tid}/cwd" if dirfd == AT_FDCWD else f"/proc/{tid}/fd/{dirfd}"
            )
            path = f"{base}/{path}"
        if path.startswith("/proc/"):
            return self.resolve_proc(tid, os.path.normpath(path))
        return resolve_in_root(f"/proc/{tid}/root", path, follow=follow)

    def resolve_proc(self, tid: int, path: str) -> str:
        """``/proc/self/fd/N`` and the like name an open descriptor of the worker itself."""
        match = _PROC_FD.match(path)
        if match is None:
            return path
        target = os.readlink(f"/proc/{tid}/fd/{match.group(3)}")
        return target if target.startswith("/") else self.view.sandbox  # a pipe or socket

    def descriptor(self, tid: int, fd: int) -> str:
        """The path an open descriptor refers to ("" for pipes, sockets and anonymous files)."""
        target = os.readlink(f"/proc/{tid}/fd/{fd}")
        if not target.startswith("/") or target.startswith("/memfd:"):
            return ""
        return target.removesuffix(" (deleted)")


def resolve_in_root(root: str, path: str, *, follow: bool = True) -> str:
    """Absolute ``path`` with ``..`` and symbolic links resolved as if ``root`` were ``/``.
    ``follow=False`` leaves a final symbolic link itself (``unlink``, ``lchown``)."""
    pending = [part for part in path.split("/") if part]
    pending.reverse()
    resolved: list[str] = []
    links = 0
    missing = False
    while pending:
        part = pending.pop()
        if part == ".":
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        if missing or (not pending and not follow):
            resolved.append(part)
            continue
        here = "/" + "/".join([*resolved, part])
        try:
            info = os.lstat(root + here)
        except OSError:
            missing = True  # the rest does not exist yet: kept as written
            resolved.append(part)
            continue
        if stat.S_ISLNK(info.st_mode) and links < MAX_SYMLINKS:
            links += 1
            target = os.readlink(root + here)
            if target.startswith("/"):
                resolved = []
            pending.extend(reversed([p for p in target.split("/") if p]))
            continue
        resolved.append(part)
    return "/" + "/".join(resolved)


# -- what each file call would change -------------------------------------------------------------

Targets = Callable[[Supervisor, Notification, Memory], list[tuple[str, str]]]
"""``(verb, resolved path)`` for each path a file call would change."""


def _at(call: Notification, memory: Memory, dirfd_arg: int, path_arg: int) -> tuple[int, str]:
    dirfd = call.signed(dirfd_arg) if dirfd_arg >= 0 else AT_FDCWD
    return dirfd, memory.string(call.args[path_arg])


def _path(verb: str, path_arg: int, dirfd_arg: int = -1, *, follow: bool = True) -> Targets:
    def targets(sup: Supervisor, call: Notification, memory: Memory) -> list[tuple[str, str]]:
        dirfd, path = _at(call, memory, dirfd_arg, path_arg)
        return [(verb, sup.resolve(call.pid, dirfd, path, follow=follow))]

    return targets


def _fd(verb: str, fd_arg: int) -> Targets:
    def targets(sup: Supervisor, call: Notification, memory: Memory) -> list[tuple[str, str]]:
        return [(verb, sup.descriptor(call.pid, call.signed(fd_arg)))]

    return targets


def _path_or_fd(verb: str, dirfd_arg: int, path_arg: int, flags_arg: int = -1) -> Targets:
    """``*at`` calls that act on the descriptor itself for a NULL (or, with
    ``AT_EMPTY_PATH``, an empty) path."""

    def targets(sup: Supervisor, call: Notification, memory: Memory) -> list[tuple[str, str]]:
        dirfd, path = _at(call, memory, dirfd_arg, path_arg)
        on_descriptor = call.args[path_arg] == 0 or (
            flags_arg >= 0 and call.args[flags_arg] & AT_EMPTY_PATH and not path
        )
        if on_descriptor and dirfd != AT_FDCWD:
            return [(verb, sup.descriptor(call.pid, dirfd))]
        return [(verb, sup.resolve(call.pid, dirfd, path))]

    return targets


def _open(path_arg: int, dirfd_arg: int, flags: Callable[[Notification, Memory], int]) -> Targets:
    write = _path("write", path_arg, dirfd_arg)

    def targets(sup: Supervisor, call: Notification, memory: Memory) -> list[tuple[str, str]]:
        return write(sup, call, memory) if flags(call, memory) & seccomp.WRITE_FLAGS else []

    return targets


def _both(first: Targets, second: Targets) -> Targets:
    return lambda sup, call, memory: [*first(sup, call, memory), *second(sup, call, memory)]


def _link(old_dirfd: int, old: int, new_dirfd: int, new: int, flags_arg: int = -1) -> Targets:
    return _both(
        _path_or_fd("create a link to", old_dirfd, old, flags_arg),
        _path("create a link at", new, new_dirfd, follow=False),
    )


def _move(old_dirfd: int, old: int, new_dirfd: int, new: int) -> Targets:
    return _both(
        _path("move", old, old_dirfd, follow=False),
        _path("move a file to", new, new_dirfd, follow=False),
    )


_FILE_CALLS: dict[str, Targets] = {
    "open": _open(0, -1, lambda call, memory: call.args[1]),
    "openat": _open(1, 0, lambda call, memory: call.args[2]),
    "openat2": _open(1, 0, lambda call, memory: memory.u64(call.args[2])),  # struct open_how
    "creat": _open(0, -1, lambda call, memory: os.O_CREAT | os.O_WRONLY),
    "unlink": _path("delete", 0, follow=False),
    "unlinkat": _path("delete", 1, 0, follow=False),
    "rmdir": _path("delete", 0, follow=False),
    "rename": _move(-1, 0, -1, 1),
    "renameat": _move(0, 1, 2, 3),
    "renameat2": _move(0, 1, 2, 3),
    "mkdir": _path("create a directory at", 0, follow=False),
    "mkdirat": _path("create a directory at", 1, 0, follow=False),
    "link": _link(-1, 0, -1, 1),
    "linkat": _link(0, 1, 2, 3, 4),
    "symlink": _path("create a symlink at", 1, follow=False),
    "symlinkat": _path("create a symlink at", 2, 1, follow=False),
    "mknod": _path("create a special file at", 0, follow=False),
    "mknodat": _path("create a special file at", 1, 0, follow=False),
    "chmod": _path("change permissions of", 0),
    "fchmod": _fd("change permissions of", 0),
    "fchmodat": _path("change permissions of", 1, 0),
    "fchmodat2": _path_or_fd("change permissions of", 0, 1, 3),
    "chown": _path("change the owner of", 0),
    "lchown": _path("change the owner of", 0, follow=False),
    "fchown": _fd("change the owner of", 0),
    "fchownat": _path_or_fd("change the owner of", 0, 1, 4),
    "truncate": _path("truncate", 0),
    "utime": _path("change timestamps of", 0),
    "utimes": _path("change timestamps of", 0),
    "futimesat": _path_or_fd("change timestamps of", 0, 1),
    "utimensat": _path_or_fd("change timestamps of", 0, 1, 3),
    "setxattr": _path("set attributes of", 0),
    "lsetxattr": _path("set attributes of", 0, follow=False),
    "fsetxattr": _fd("set attributes of", 0),
    "removexattr": _path("remove attributes of", 0),
    "lremovexattr": _path("remove attributes of", 0, follow=False),
    "fremovexattr": _fd("remove attributes of", 0),
}

# -- what each network call would reach -------------------------------------------------------------

_NETWORK_CALLS = frozenset({"connect", "bind", "sendto", "sendmsg", "sendmmsg"})
MSGHDR_SIZE, MMSGHDR_SIZE, MAX_MMSG = 56, 64, 1024


def _addresses(name: str, call: Notification, memory: Memory) -> list[bytes]:
    """The raw socket addresses a network call names (none for a connected ``sendmsg``)."""
    if name in ("connect", "bind"):
        return [memory.read(call.args[1], min(call.args[2], 128))]
    if name == "sendto":
        return [memory.read(call.args[4], min(call.args[5], 128))]
    headers = [call.args[1]]
    if name == "sendmmsg":
        headers = [call.args[1] + i * MMSGHDR_SIZE for i in range(min(call.args[2], MAX_MMSG))]
    found = []
    for header in headers:
        raw = memory.read(header, MSGHDR_SIZE)
        if len(raw) < 12:
            continue
        pointer, length = struct.unpack_from("<QI", raw)
        if pointer:
            found.append(memory.read(pointer, min(length, 128)))
    return found
