"""The guard installed inside scan workers: refuse dangerous operations and remember them.

Scanning runs a package's code — its imports, its docstring examples, calls with synthesised
arguments — and that code may delete files, talk to the network or spawn programs. Inside a
worker (never in the scanning process) :func:`install_guard` adds a PEP 578 audit hook that
makes such operations fail with :class:`SandboxViolation` and records each attempt, so the scan
can report "blocked: tried to delete /home/me/notes.txt outside the sandbox".

Allowed: reading anything, writing under the sandbox directory (the worker's cwd, HOME and
TMPDIR) and to ``/dev/null``, loopback networking, signals to the worker itself. Blocked: writes,
deletes, renames, ``chmod``/``mkdir`` outside the sandbox; non-loopback connections and name
lookups; subprocesses, ``fork``/``exec``/``system``/``posix_spawn``; loading native libraries
with ctypes; raising resource limits; SQLite databases outside the sandbox.

**What this is not.** Audit hooks are a guard against accidents and careless code, not a
security boundary: native code (a C extension, or ctypes memory writes) can bypass them, and
Python code can still waste CPU or memory. It is one layer of defence in depth with the worker's
resource limits (:func:`apply_limits`), its private temporary working directory, an
allow-listed environment, and the parent's timeouts. Scan truly hostile code in a VM or
container.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_ALWAYS_WRITABLE = ("/dev/null",)
_LOOPBACK_HOSTS = {"localhost", "localhost.localdomain", "ip6-localhost", "", None}


class SandboxViolation(PermissionError):
    """Raised inside a worker when package code attempts an operation the sandbox forbids.

    A ``PermissionError`` so careful code handles it like any refused operation; the attempt
    is recorded either way, so swallowing the exception does not hide it from the report.
    """


@dataclass(frozen=True)
class BlockedEvent:
    """One refused operation: the audit event name and a sentence for people."""

    event: str
    reason: str  # e.g. "tried to delete /tmp/canary outside the sandbox"


@dataclass(frozen=True)
class Limits:
    """Resource limits a worker applies to itself before it runs package code."""

    memory_mb: int = 2048  # address space cap (RLIMIT_AS); MemoryError beyond it
    cpu_seconds: int = 600  # lifetime CPU backstop (RLIMIT_CPU); the parent's timeouts come first
    file_mb: int = 256  # largest file the worker may write (RLIMIT_FSIZE)
    open_files: int = 512  # RLIMIT_NOFILE


def apply_limits(limits: Limits) -> None:
    """Cap memory, CPU, file size and open files, and disable core dumps, for this process."""
    import resource

    def cap(kind: int, value: int) -> None:
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))

    mb = 1024 * 1024
    cap(resource.RLIMIT_AS, limits.memory_mb * mb)
    cap(resource.RLIMIT_CPU, limits.cpu_seconds)
    cap(resource.RLIMIT_FSIZE, limits.file_mb * mb)
    cap(resource.RLIMIT_NOFILE, limits.open_files)
    cap(resource.RLIMIT_CORE, 0)


class Guard:
    """The audit-hook policy: which operations are refused, and the log of refusals."""

    def __init__(self, sandbox_dir: str | Path, extra_writable: Iterable[str | Path] = ()) -> None:
        roots = [sandbox_dir, *extra_writable]
        self.writable_roots = tuple(os.path.realpath(os.fspath(r)) for r in roots)
        self.events: list[BlockedEvent] = []
        self._busy = threading.local()
        self._handlers = {
            "open": self._on_open,
            "os.remove": lambda a: self._check_path("delete", a[0], a[1] if len(a) > 1 else None),
            "os.rmdir": lambda a: self._check_path("delete", a[0], a[1] if len(a) > 1 else None),
            "shutil.rmtree": lambda a: self._check_path("delete", a[0], a[1]),
            "os.rename": self._on_rename,
            "shutil.move": self._on_rename,
            "os.mkdir": lambda a: self._check_path(
                "create a directory", a[0], a[2] if len(a) > 2 else None
            ),
            "os.chmod": lambda a: self._check_path(
                "change permissions of", a[0], a[2] if len(a) > 2 else None
            ),
            "os.chown": lambda a: self._check_path(
                "change the owner of", a[0], a[3] if len(a) > 3 else None
            ),
            "os.truncate": lambda a: self._check_path("truncate", a[0], None),
            "os.utime": lambda a: self._check_path("change timestamps of", a[0], None),
            "os.link": lambda a: self._check_path("create a link at", a[1], None),
            "os.symlink": lambda a: self._check_path("create a symlink at", a[1], None),
            "os.setxattr": lambda a: self._check_path("set attributes of", a[0], None),
            "os.removexattr": lambda a: self._check_path("remove attributes of", a[0], None),
            "shutil.copyfile": lambda a: self._check_path("write", a[1], None),
            "shutil.copytree": lambda a: self._check_path("write", a[1], None),
            "shutil.unpack_archive": lambda a: self._check_path(
                "unpack into", a[1] or os.getcwd(), None
            ),
            "sqlite3.connect": self._on_sqlite,
            "sqlite3.enable_load_extension": lambda a: self._block(
                "sqlite3.enable_load_extension", "tried to enable SQLite extension loading"
            ),
            "socket.connect": lambda a: self._check_address("connect to", a[0], a[1]),
            "socket.sendto": lambda a: self._check_address("send data to", a[0], a[1]),
            "socket.bind": lambda a: self._check_address("listen on", a[0], a[1]),
            "socket.getaddrinfo": lambda a: self._check_host(a[0]),
            "socket.gethostbyname": lambda a: self._check_host(a[0]),
            "socket.gethostbyname_ex": lambda a: self._check_host(a[0]),
            "socket.gethostbyaddr": lambda a: self._check_host(a[0]),
            "subprocess.Popen": lambda a: self._block(
                "subprocess.Popen", f"tried to spawn a process: {_command(a[1] or a[0])}"
            ),
            "os.system": lambda a: self._block(
                "os.system", f"tried to run a shell command: {_short(a[0])}"
            ),
            "os.exec": lambda a: self._block(
                "os.exec", f"tried to replace the worker with {_short(a[0])}"
            ),
            "os.posix_spawn": lambda a: self._block(
                "os.posix_spawn", f"tried to spawn a process: {_command(a[1] or a[0])}"
            ),
            "os.spawn": lambda a: self._block(
                "os.spawn", f"tried to spawn a process: {_short(a[1])}"
            ),
            "os.fork": lambda a: self._block("os.fork", "tried to fork the worker"),
            "os.forkpty": lambda a: self._block("os.forkpty", "tried to fork the worker"),
            "os.kill": self._on_kill,
            "os.killpg": lambda a: self._block(
                "os.killpg", f"tried to signal process group {a[0]}"
            ),
            "ctypes.dlopen": self._on_dlopen,
            "resource.setrlimit": lambda a: self._block(
                "resource.setrlimit", "tried to change the worker's resource limits"
            ),
            "resource.prlimit": lambda a: self._block(
                "resource.prlimit", "tried to change resource limits"
            ),
            "webbrowser.open": lambda a: self._block(
                "webbrowser.open", f"tried to open a browser at {_short(a[0])}"
            ),
        }

    # -- the hook -------------------------------------------------------------------------
    def __call__(self, event: str, args: tuple) -> None:
        handler = self._handlers.get(event)
        if handler is None or getattr(self._busy, "active", False):
            return
        self._busy.active = True
        try:
            handler(args)
        finally:
            self._busy.active = False

    def take_events(self) -> list[BlockedEvent]:
        """Return and forget the refusals recorded since the last call."""
        events, self.events = self.events, []
        return events

    def _block(self, event: str, reason: str) -> None:
        self.events.append(BlockedEvent(event, reason))
        raise SandboxViolation(f"apiprof sandbox: {reason}")

    # -- files ----------------------------------------------------------------------------
    def _on_open(self, args: tuple) -> None:
        path, mode, flags = ((*tuple(args), None, None))[:3]
        writing = bool(mode and any(c in str(mode) for c in "wax+")) or bool(
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writing:
            self._check_path("write", path, None)

    def _on_rename(self, args: tuple) -> None:
        self._check_path("move", args[0], args[2] if len(args) > 2 else None)
        self._check_path("move a file to", args[1], args[3] if len(args) > 3 else None)

    def _on_sqlite(self, args: tuple) -> None:
        target = args[0]
        if (
            isinstance(target, (str, bytes, os.PathLike))
            and os.fsdecode(target)
            not in (
                ":memory:",
                "",
            )
            and not os.fsdecode(target).startswith("file::memory:")
        ):
            self._check_path("open a database at", target, None)

    def _check_path(self, verb: str, path: object, dir_fd: object) -> None:
        if isinstance(path, int) or path is None:
            return  # an already-open descriptor: its opening was checked
        resolved = resolve_path(path, dir_fd)
        if not self.is_writable(resolved):
            self._block(f"file:{verb}", f"tried to {verb} {resolved} outside the sandbox")

    def is_writable(self, resolved: str) -> bool:
        if resolved in _ALWAYS_WRITABLE:
            return True
        return any(
            resolved == root or resolved.startswith(root + os.sep) for root in self.writable_roots
        )

    # -- network ----------------------------------------------------------------------------
    def _check_address(self, verb: str, sock: object, address: object) -> None:
        family = getattr(sock, "family", None)
        if family == getattr(socket, "AF_UNIX", object()):
            path = os.fsdecode(address) if isinstance(address, (str, bytes)) else ""
            if path and not path.startswith("\0") and self.is_writable(resolve_path(path, None)):
                return
            self._block("socket", f"tried to {verb} the Unix socket {path or address!r}")
        host = address[0] if isinstance(address, tuple) and address else address
        if not is_loopback(host):
            self._block(
                "socket", f"tried to {verb} {_format_address(address)} (network access is blocked)"
            )

    def _check_host(self, host: object) -> None:
        # literals need no lookup; connect decides
        if not is_loopback(host) and not _is_ip_literal(host):
            self._block("socket", f"tried to look up the host {host!r} (network access is blocked)")

    # -- processes and native code ------------------------------------------------------------
    def _on_kill(self, args: tuple) -> None:
        pid = args[0]
        if pid != os.getpid():
            self._block("os.kill", f"tried to send signal {args[1]} to process {pid}")

    def _on_dlopen(self, args: tuple) -> None:
        if args and args[0] is not None:  # ctypes itself opens the running interpreter (None)
            self._block("ctypes.dlopen", f"tried to load the native library {_short(args[0])}")


def resolve_path(path: object, dir_fd: object) -> str:
    """Absolute, symlink-free form of ``path`` (relative to ``dir_fd`` when one is given)."""
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
    if not os.path.isabs(text) and isinstance(dir_fd, int) and dir_fd >= 0:
        with contextlib.suppress(OSError):
            text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
    return os.path.realpath(text)


def is_loopback(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if host in _LOOPBACK_HOSTS:
        return True
    if not isinstance(host, str):
        return False
    return host.startswith("127.") or host in ("::1", "0:0:0:0:0:0:0:1")


def _is_ip_literal(host: object) -> bool:
    try:
        ipaddress.ip_address(host.decode() if isinstance(host, bytes) else host)  # type: ignore[arg-type]
    except (ValueError, TypeError, UnicodeDecodeError):
        return False
    return True


def _format_address(address: object) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return repr(address)


def _short(value: object, limit: int = 120) -> str:
    text = os.fsdecode(value) if isinstance(value, (bytes, os.PathLike)) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _command(argv: object) -> str:
    if isinstance(argv, (list, tuple)):
        return _short(
            " ".join(
                os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in argv
            )
        )
    return _short(argv)


_installed: Guard | None = None


def install_guard(sandbox_dir: str | Path, extra_writable: Iterable[str | Path] = ()) -> Guard:
    """Install the guard in this process for good (audit hooks cannot be removed).

    Call only inside a worker: after this, the process cannot spawn programs or write
    outside ``sandbox_dir``.
    """
    global _installed
    if _installed is not None:
        raise RuntimeError("the sandbox guard is already installed in this process")
    guard = Guard(sandbox_dir, extra_writable)
    sys.addaudithook(guard)
    _installed = guard
    return guard


def installed_guard() -> Guard | None:
    """The guard installed in this process, if any."""
    return _installed
