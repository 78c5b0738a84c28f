"""The reporter inside scan workers: name what package code tried, and whose code tried it.

A PEP 578 audit hook sees what Python code asks for — opening a file for writing, deleting,
connecting, starting a process, loading a native library — and turns each forbidden attempt
into a sentence for the report ("tried to delete /home/me/notes.txt outside the sandbox") with
its author: the entry point being profiled, a module's import, or a background thread of
either (:meth:`Guard.blame`). Each attempt is sent to the scanner the moment it is seen, so
erasing a log afterwards hides nothing.

**What this is not: the wall.** An audit hook runs inside the process it watches; code in that
process can switch it off, and native code never passes through it (PEP 578 says as much). The
wall is the operating system (:mod:`~apiprof.engine.isolation.confine`: namespaces, read-only
mounts, an unprivileged uid) and the system-call filter that the scanner supervises from outside
(:mod:`~apiprof.engine.isolation.supervisor`), which also reports what got past this hook. At
the strict level the hook therefore only reports; at the process level, where there are no
namespaces, it also refuses (``refuse=True``) as one more layer.

Allowed: reading anything (except other processes' memory and environment), writing under the
sandbox directory (the worker's cwd, HOME and TMPDIR) and to ``/dev/null``, loopback networking,
signals to the worker itself. Forbidden: writes, deletes, renames, links, ``chmod`` and the like
outside the sandbox; non-loopback connections and name lookups; subprocesses and ``exec``;
loading native libraries with ctypes; raising resource limits.

:func:`apply_limits` sets the worker's resource limits.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import signal
import socket
import sys
import threading
import urllib.parse
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from apiprof.engine.isolation.protocol import Attempt, Blame
from apiprof.engine.measure.framecode import code_of
from apiprof.engine.scenarios.capture import read_frames_with

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_ALWAYS_WRITABLE = ("/dev/null",)
_LOOPBACK_HOSTS = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", ""}
_OTHER_PROCESS = re.compile(r"^/proc/(\d+)/(environ|mem|maps|auxv|root|cwd|fd|task|stack)\b")


class SandboxViolation(PermissionError):
    """Raised inside a worker when package code attempts an operation the sandbox forbids
    (at the process isolation level, where the reporter also refuses).

    A ``PermissionError`` so careful code handles it like any refused operation; the attempt
    is reported either way, so swallowing the exception does not hide it.
    """


@dataclass(frozen=True)
class BlockedEvent:
    """One forbidden attempt: the audit event, a sentence for people, and whose code it was."""

    event: str
    reason: str  # e.g. "tried to delete /tmp/canary outside the sandbox"
    blame: Blame = Blame.ENTRY
    module: str = ""

    def attempt(self) -> Attempt:
        return Attempt(self.reason, self.blame, self.module)


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


def die_with_parent(parent: int) -> None:
    """Be killed when ``parent`` dies (at the process level no PID namespace does it for us)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the request above took effect
        os._exit(1)


Report = Callable[[Attempt], None]


class Guard:
    """The audit-hook policy: which operations are forbidden, who tried them, and the log."""

    def __init__(
        self,
        sandbox_dir: str | Path,
        extra_writable: Iterable[str | Path] = (),
        *,
        refuse: bool = True,
        report: Report | None = None,
    ) -> None:
        roots = [sandbox_dir, *extra_writable]
        self.writable_roots = tuple(os.path.realpath(os.fspath(r)) for r in roots)
        self.refuse = refuse  # raise SandboxViolation (process level), or only report (strict)
        self.report = report  # sends each attempt to the scanner as it happens
        self.events: list[BlockedEvent] = []
        # whose work the main thread is doing outside imports: (ENTRY, "") or (IMPORT, module)
        self.phase: tuple[Blame, str] = (Blame.ENTRY, "")
        self.thread_origins: weakref.WeakKeyDictionary[threading.Thread, tuple[Blame, str]] = (
            weakref.WeakKeyDictionary()
        )
        self._busy = threading.local()

        def at(index: int) -> Callable[[tuple], object]:
            return lambda a: a[index] if len(a) > index else None

        def path(
            verb: str, path_at: int, dir_fd_at: int | None = None, *, follow: bool = True
        ) -> Callable[[tuple], None]:
            dir_fd = at(dir_fd_at) if dir_fd_at is not None else (lambda a: None)
            return lambda a: self._check_path(verb, a[path_at], dir_fd(a), follow=follow)

        self._handlers: dict[str, Callable[[tuple], None]] = {
            "open": self._on_open,
            "os.remove": path("delete", 0, 1, follow=False),
            "os.rmdir": path("delete", 0, 1, follow=False),
            "shutil.rmtree": path("delete", 0, 1, follow=False),
            "os.rename": self._on_rename,
            "shutil.move": self._on_rename,
            "os.mkdir": path("create a directory at", 0, 2, follow=False),
            "os.chmod": path("change permissions of", 0, 2),
            "os.chown": path("change the owner of", 0, 3),
            "os.truncate": path("truncate", 0),
            "os.utime": path("change timestamps of", 0, 3),
            "os.link": self._on_link,
            "os.symlink": path("create a symlink at", 1, 2, follow=False),
            "os.setxattr": path("set attributes of", 0),
            "os.removexattr": path("remove attributes of", 0),
            "shutil.copyfile": path("write", 1),
            "shutil.copytree": path("write", 1),
            "shutil.unpack_archive": lambda a: self._check_path(
                "unpack into", a[1] or os.getcwd(), None
            ),
            "sqlite3.connect": self._on_sqlite,
            "sqlite3.enable_load_extension": lambda a: self._block(
                "sqlite3.enable_load_extension", "tried to enable SQLite extension loading"
            ),
            "socket.connect": lambda a: self._check_address("connect to", a[0], a[1]),
            "socket.sendto": lambda a: self._check_address("send data to", a[0], a[1]),
            "socket.sendmsg": lambda a: self._check_address("send data to", a[0], a[1]),
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
        """Return and forget the attempts recorded since the last call."""
        events, self.events = self.events, []
        return events

    def _block(self, event: str, reason: str) -> None:
        blame, module = self.blame()
        blocked = BlockedEvent(event, reason, blame, module)
        self.events.append(blocked)
        if self.report is not None:
            self.report(blocked.attempt())
        if self.refuse:
            raise SandboxViolation(f"apiprof sandbox: {reason}")

    # -- whose code is it -------------------------------------------------------------------
    def blame(self) -> tuple[Blame, str]:
        """Who the code running now belongs to: a module being imported (its top-level code,
        found on the stack), a background thread (of whoever started it), or the entry point."""
        current = threading.current_thread()
        if current is not threading.main_thread():
            blame, module = self.thread_origins.get(current) or self.phase
            return Blame.THREAD, module if blame is not Blame.ENTRY else ""
        module = importing_module(sys._getframe(1))
        if module:
            return Blame.IMPORT, module
        return self.phase

    def remember_thread(self, thread: threading.Thread) -> None:
        """Record who starts ``thread`` (called from ``Thread.start``, in the starting thread)."""
        _, module = self.blame()
        self.thread_origins[thread] = (Blame.IMPORT, module) if module else (Blame.ENTRY, "")

    # -- files ----------------------------------------------------------------------------
    def _on_open(self, args: tuple) -> None:
        path, mode, flags = ((*tuple(args), None, None))[:3]
        writing = bool(mode and any(c in str(mode) for c in "wax+")) or bool(
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writing:
            self._check_path("write", path, None)
        elif isinstance(path, (str, bytes)):
            self._check_other_process(os.fsdecode(path))

    def _check_other_process(self, path: str) -> None:
        """Reading another process's memory, environment or files is forbidden."""
        match = _OTHER_PROCESS.match(os.path.normpath(path))
        if match and int(match.group(1)) != os.getpid():
            what = {"environ": "the environment", "mem": "the memory"}.get(match.group(2))
            shown = what or f"/proc/{match.group(1)}/{match.group(2)}"
            self._block("open", f"tried to read {shown} of process {match.group(1)}")

    def _on_rename(self, args: tuple) -> None:
        self._check_path("move", args[0], args[2] if len(args) > 2 else None, follow=False)
        target = args[3] if len(args) > 3 else None
        self._check_path("move a file to", args[1], target, follow=False)

    def _on_link(self, args: tuple) -> None:
        self._check_path("create a link to", args[0], args[2] if len(args) > 2 else None)
        target = args[3] if len(args) > 3 else None
        self._check_path("create a link at", args[1], target, follow=False)

    def _on_sqlite(self, args: tuple) -> None:
        target = args[0]
        if not isinstance(target, (str, bytes, os.PathLike)):
            return
        name = os.fsdecode(target)
        if name in (":memory:", "") or name.startswith("file::memory:"):
            return
        if name.startswith("file:"):  # a URI: its path and mode, whatever uri= says
            uri = urllib.parse.urlsplit(name)
            query = urllib.parse.parse_qs(uri.query)
            if "ro" in query.get("mode", []) or query.get("immutable") == ["1"]:
                return
            name = urllib.parse.unquote(uri.path) or name
        self._check_path("open a database at", name, None)

    def _check_path(self, verb: str, path: object, dir_fd: object, *, follow: bool = True) -> None:
        if path is None:
            return
        if isinstance(path, int):  # a descriptor (fchmod, fchown...): where does it point?
            try:
                path = os.readlink(f"/proc/self/fd/{path}")
            except OSError:
                return
            if not str(path).startswith("/"):
                return  # a pipe or socket
        resolved = resolve_path(path, dir_fd, follow=follow)
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
        if address is None:  # a connected socket (sendmsg without an address)
            return
        family = getattr(sock, "family", None)
        if family == getattr(socket, "AF_UNIX", object()):
            path = os.fsdecode(address) if isinstance(address, (str, bytes)) else ""
            if path.startswith("\0"):  # abstract: only the worker's own network namespace has it
                return
            resolved = resolve_path(path, None) if path else repr(address)
            if not (path and self.is_writable(resolved)):
                self._block(
                    "socket", f"tried to {verb} the Unix socket {resolved} outside the sandbox"
                )
            return
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
        if pid not in (os.getpid(), 0):
            self._block("os.kill", f"tried to send {signal_name(args[1])} to process {pid}")

    def _on_dlopen(self, args: tuple) -> None:
        if args and args[0] is not None:  # ctypes itself opens the running interpreter (None)
            self._block("ctypes.dlopen", f"tried to load the native library {_short(args[0])}")


def importing_module(frame: FrameType | None) -> str:
    """The module whose top-level code is running (innermost on the stack), if the stack shows
    an import in progress: a ``<module>`` frame called by the import system. ``exec`` of other
    code, doctest examples included, has no import-system caller and does not count."""
    while frame is not None:
        caller = frame.f_back
        if (
            frame.f_code.co_name == "<module>"
            and caller is not None
            and caller.f_code.co_filename.startswith("<frozen importlib")
        ):
            name = frame.f_globals.get("__name__")
            if isinstance(name, str):
                return name
        frame = caller
    return ""


def resolve_path(path: object, dir_fd: object, *, follow: bool = True) -> str:
    """Absolute, symlink-free form of ``path`` (relative to ``dir_fd`` when one is given).
    ``follow=False`` keeps a final symbolic link itself (what deleting or renaming acts on)."""
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
    if not os.path.isabs(text) and isinstance(dir_fd, int) and dir_fd >= 0:
        with contextlib.suppress(OSError):
            text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
    if follow:
        return os.path.realpath(text)
    folder, name = os.path.split(os.path.abspath(text))
    return os.path.join(os.path.realpath(folder), name)


def is_loopback(host: object) -> bool:
    """A loopback address or the local host's name. ``127.0.0.1.example.org`` is a host name
    to look up, not an address: only a whole address counts."""
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if host is None:
        return True
    if not isinstance(host, str):
        return False
    if host.lower() in _LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def signal_name(number: object) -> str:
    """``SIGKILL`` for 9; ``signal 99`` for a number that names no signal."""
    with contextlib.suppress(ValueError, TypeError):
        return signal.Signals(number).name  # type: ignore[arg-type]
    return f"signal {number}"


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


def install_guard(
    sandbox_dir: str | Path,
    extra_writable: Iterable[str | Path] = (),
    *,
    refuse: bool = True,
    report: Report | None = None,
) -> Guard:
    """Install the reporter in this process for good (audit hooks cannot be removed), and make
    ``threading.Thread.start`` record who starts each thread.

    Call only inside a worker: with ``refuse``, the process can no longer spawn programs or
    write outside ``sandbox_dir``.
    """
    global _installed
    if _installed is not None:
        raise RuntimeError("the sandbox guard is already installed in this process")
    guard = Guard(sandbox_dir, extra_writable, refuse=refuse, report=report)
    start = threading.Thread.start

    def start_remembered(thread: threading.Thread) -> None:
        with contextlib.suppress(Exception):
            guard.remember_thread(thread)
        start(thread)

    threading.Thread.start = start_remembered  # type: ignore[method-assign,assignment]
    sys.addaudithook(guard)
    _installed = guard
    read_frames_with(code_of)  # capture's 3.11 hook would run the guard on every call
    return guard


def installed_guard() -> Guard | None:
    """The guard installed in this process, if any."""
    return _installed
