"""How workers are confined: the isolation levels, the bubblewrap command line, sandbox folders.

Two levels:

``strict``
    Each worker runs under bubblewrap (``bwrap``, the sandbox Flatpak uses) in its own user,
    mount, PID, network, IPC and UTS namespaces: a root file system built from read-only bind
    mounts of the system directories and the Python environment (interpreter, site-packages,
    the scanned package, the ``PYTHONPATH`` given), one writable directory (its sandbox), a
    loopback-only network of its own, a private ``/proc`` that shows only its own processes, an
    unprivileged uid (65534) with no capabilities, ``no_new_privs``, and the system-call filter
    of :mod:`~apiprof.engine.isolation.seccomp` supervised by the scanner. When the PID
    namespace's first process (bubblewrap's) ends, the kernel kills everything left in it.
``process``
    Each worker is a plain child process: a private working directory, an allow-listed
    environment, resource limits, the same system-call filter (so it still cannot start
    programs, signal other processes, or write outside its sandbox without the scanner saying
    so) and the in-process reporter, which refuses as well as reports here. No namespaces: the
    file system, the network and other processes of the same user are only as safe as those
    checks, which a determined attacker can race. Chosen with ``--isolation process``, or by
    ``auto`` (the default) where the kernel offers no user namespaces.

Why bubblewrap rather than ``unshare``/``clone`` calls of our own: it is small, audited, shipped
by every distribution, and gets the fiddly parts right (mount propagation, ``pivot_root``,
``--die-with-parent``, a reaper as PID 1); doing them from Python would mean a privileged
helper of our own. When the scanner runs as root, bubblewrap runs without a user namespace
(root needs none to mount) and the worker drops to uid 65534 with ``setpriv`` before Python
starts, then enters a user namespace of its own; as any other user, bubblewrap's own user
namespace maps the worker to uid 65534. Either way the uid outside is unprivileged or the
user's own, never root's.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import importlib.util
import os
import shutil
import signal
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from apiprof.engine.isolation import seccomp
from apiprof.engine.isolation.syscalls import native_arch
from apiprof.model.owner import ScanOwner, still_running, this_process

SANDBOX_UID = 65534
"""The uid (and gid) package code runs as inside the sandbox ("nobody")."""
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
CPU_INFO = "/sys/devices/system/cpu"  # os.cpu_count() and friends read it
SANDBOX_FOLDERS = ("home", "tmp", "cache", "config", "data")
"""The folders of a sandbox that a worker's environment points at (home, temp, caches)."""


class Isolation(enum.StrEnum):
    """The isolation a scan asks for (``--isolation``)."""

    AUTO = "auto"  # strict where the system allows it, else process (said loudly)
    STRICT = "strict"  # strict or refuse to scan
    PROCESS = "process"  # process level on purpose


class Level(enum.StrEnum):
    """The isolation a scan's workers got."""

    STRICT = "strict"
    PROCESS = "process"


@dataclass(frozen=True)
class Confinement:
    """What the workers of a pool get, and (below strict) why not more."""

    level: Level
    filter: seccomp.Mode | None  # the system-call filter's mode; None: no filter
    missing: str = ""  # why the level is below strict ("" at strict)

    @property
    def arch(self) -> str:
        return native_arch() or ""

    def describe(self) -> str:
        """One line for the scan's provenance and its first output line."""
        if self.level is Level.STRICT:
            return (
                "strict: user, mount, PID, network and IPC namespaces (bubblewrap), read-only "
                "file system but the sandbox directory, loopback-only network, uid 65534, "
                "no_new_privs, system-call filter supervised by the scanner"
            )
        filtered = {
            seccomp.Mode.NOTIFY: "system-call filter supervised by the scanner",
            seccomp.Mode.DENY: "system-call filter without a supervisor",
            None: "no system-call filter",
        }[self.filter]
        return (
            f"process: separate processes with resource limits, {filtered} and the in-process "
            f"reporter; no namespaces ({self.missing})"
        )


def filter_mode() -> seccomp.Mode | None:
    """The best system-call filter this system supports."""
    if sys.platform != "linux" or native_arch() is None:
        return None
    release = os.uname().release.split("-")[0].split(".")
    try:
        major, minor = int(release[0]), int(release[1])
    except (ValueError, IndexError):
        return seccomp.Mode.DENY
    # continuing a notified call: 5.5; taking another process's descriptor: 5.6
    return seccomp.Mode.NOTIFY if (major, minor) >= (5, 6) else seccomp.Mode.DENY


def strict_unavailable(readable: Iterable[str] = ()) -> str:
    """Why strict isolation cannot even be tried here ("" when it can); ``readable`` are the
    paths the workers must read (see :func:`unreadable_in_sandbox`)."""
    if sys.platform != "linux":
        return (
            f"{sys.platform} has no Linux namespaces; scan inside a Linux VM for strict isolation"
        )
    if filter_mode() is not seccomp.Mode.NOTIFY:
        return (
            f"the kernel ({os.uname().release}, {os.uname().machine}) lacks the system-call "
            "filter features strict isolation needs (Linux 5.6 or later on x86_64 or arm64)"
        )
    if bubblewrap() is None:
        return "bubblewrap is not installed (apt-get install bubblewrap, dnf install bubblewrap)"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "setpriv (util-linux) is missing, and the scanner runs as root"
    hidden = unreadable_in_sandbox(readable)
    if hidden:
        return (
            f"{hidden[0]} is not readable by the sandbox's uid {SANDBOX_UID} (the scanner runs as "
            "root and workers do not); make it readable (chmod o+rX) or scan as a regular user"
        )
    return ""


def unreadable_in_sandbox(paths: Iterable[str]) -> list[str]:
    """Bound paths the worker's uid cannot read. Only a root scanner's workers run as another
    uid (65534, as "others"); the folders above a bound path are the sandbox's own, so only the
    path itself counts (and the files below it, which installers make world-readable)."""
    if os.geteuid() != 0:
        return []
    hidden = []
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        needed = 0o005 if os.path.isdir(path) else 0o004
        if mode & needed != needed:
            hidden.append(path)
    return hidden


def bubblewrap() -> str | None:
    return shutil.which("bwrap")


SHARED_MEMORY_BYTES = 256 << 20
"""Size of the worker's own ``/dev/shm``: bounded, so that a package cannot fill memory there."""


@functools.cache
def own_shared_memory(bwrap: str) -> list[str]:
    """Options giving the worker a ``/dev/shm`` of its own that anyone may write in, as the
    host's is: every ``multiprocessing`` lock makes a POSIX semaphore there (bubblewrap's
    ``/dev`` has the folder, writable only by root). Empty for a bubblewrap too old to set a
    mount's permissions; the size where it can bound it."""
    try:
        usage = subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    if "--perms" not in usage:
        return []
    size = ["--size", str(SHARED_MEMORY_BYTES)] if "--size" in usage else []
    return ["--perms", "1777", *size, "--tmpfs", "/dev/shm"]


def process_confinement(missing: str) -> Confinement:
    return Confinement(Level.PROCESS, filter_mode(), missing)


STRICT = Confinement(Level.STRICT, seccomp.Mode.NOTIFY)


# -- what the sandbox must be able to read --------------------------------------------------------


def worker_import_path() -> list[str]:
    """This process's import path without its first entry when that is the scanner's own
    program location (the current folder for ``python -m``, a script's folder): a worker starts
    in its sandbox, so that entry is not on its import path, and binding it would show the
    package whatever folder the scan was started from (a home directory, a cluster task's
    private scratch folder)."""
    if sys.flags.safe_path or not sys.path:
        return list(sys.path)
    return sys.path[1:]


def python_paths(extra: Iterable[str] = ()) -> list[str]:
    """Every existing path a worker needs to read: the interpreter and its prefixes, this
    process's import path (site-packages, ``.pth`` additions, apiprof itself), the user's site
    directory, and ``extra`` (``PYTHONPATH`` entries, the scanned package, scenario files)."""
    import apiprof

    candidates = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        os.path.dirname(sys.executable),
        *worker_import_path(),
        site.getusersitepackages(),
        # apiprof's own folder, where its import name leads (a checkout's root for an editable
        # install): not the folder around it, which holds the user's other projects
        os.path.realpath(os.path.dirname(apiprof.__file__)),
        *os.environ.get("PYTHONPATH", "").split(os.pathsep),
        *extra,
    ]
    around = set(around_checkout())
    found: set[str] = set()
    for path in candidates:
        if not path or not os.path.isabs(path) or not os.path.exists(path):
            continue
        if os.path.normpath(path) in around or os.path.realpath(path) in around:
            continue
        found.add(os.path.normpath(path))
        found.add(os.path.realpath(path))
    return _outermost(found)


def around_checkout() -> list[str]:
    """The folders around apiprof's checkout when apiprof is imported from one (an editable
    install links the import name to the checkout's root), which are never bound into a
    sandbox. They reach the import path by accident: the checkout's root is itself a package,
    so pytest puts the folder above it first on ``sys.path`` (and a cluster's workers inherit
    that path). Bound, such a folder would show a worker every project beside the checkout —
    and, for a checkout inside the temp folder, all of ``/tmp``, whose private folders (pytest's,
    mode 0700) then hide the package's own copy below them from the sandbox's uid. A normally
    installed apiprof sits in ``site-packages``: nothing is hidden then."""
    import apiprof

    linked = os.path.dirname(os.path.abspath(apiprof.__file__))
    real = os.path.realpath(linked)
    if linked == real:
        return []
    return [os.path.realpath(folder) for folder in _ancestors(real)]


def package_location(package: str) -> str:
    """Where ``package`` lives ("" when this process cannot find it), without importing it."""
    try:
        spec = importlib.util.find_spec(package.split(".")[0])
    except (ImportError, ValueError):
        return ""
    if spec is None:
        return ""
    if spec.submodule_search_locations:
        return next(iter(spec.submodule_search_locations), "")
    return spec.origin if spec.origin and os.path.isabs(spec.origin) else ""


def _outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` without those inside another one (a bind mount of the outer covers them),
    outermost first."""
    kept: list[str] = []
    for path in sorted(paths, key=lambda p: (p.count("/"), p)):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_command(sandbox: Path, readable: Iterable[str], python: list[str]) -> list[str]:
    """The bubblewrap command line that runs ``python`` (a worker command) confined."""
    bwrap = bubblewrap() or "bwrap"
    root = os.geteuid() == 0
    command = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    command += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    command += ["--hostname", "apiprof-sandbox"]
    if root:  # namespaces need no user namespace for root; the worker makes its own after setpriv
        command += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        command += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
        command += ["--cap-drop", "ALL", "--disable-userns"]
    for system in SYSTEM_DIRS:
        if os.path.islink(system):
            command += ["--symlink", os.readlink(system), system]
        elif os.path.isdir(system):
            command += ["--ro-bind", system, system]
    command += ["--proc", "/proc", "--dev", "/dev", *own_shared_memory(bwrap)]
    command += ["--ro-bind-try", CPU_INFO, CPU_INFO]
    binds = [
        p
        for p in _outermost(readable)
        if not any(p.startswith(s + "/") or p == s for s in SYSTEM_DIRS)
    ]
    made: set[str] = set()
    for path in [*binds, str(sandbox)]:
        for parent in _ancestors(path):
            bound = any(parent == b or parent.startswith(b + "/") for b in binds)
            if parent not in made and not bound and not os.path.islink(parent):
                made.add(parent)  # a folder of the sandbox's own root, traversable by its uid
                command += ["--perms", "0755", "--dir", parent]
        if path == str(sandbox):
            command += ["--bind", path, path]
        else:
            command += ["--ro-bind", path, path]
    command += ["--remount-ro", "/", "--chdir", str(sandbox), "--"]
    if root:
        uid = str(SANDBOX_UID)
        command += [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}"]
        command += ["--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        command += ["--"]
    return [*command, *python]


# -- sandbox directories, and what a killed scan left behind -------------------------------------


class SandboxRoot:
    """``$TMPDIR/apiprof-sandboxes-UID/HOST-PID-START/pool-*/``: one pool's worker sandboxes,
    in a folder named after the scanner process, so the next scan can tell a dead owner's
    leftovers."""

    def __init__(self) -> None:
        self.base = sandboxes_base()
        owner = this_process()
        scanner = self.base / f"{owner.host}-{owner.pid}-{owner.process_started or 0}"
        scanner.mkdir(mode=0o711, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix="pool-", dir=scanner))
        self.path.chmod(0o711)  # the sandbox uid must pass through to its own sandbox
        self._count = 0

    def new_sandbox(self, inside: Path | None = None) -> Path:
        """A fresh directory for one worker (owned by the sandbox uid when running as root);
        ``inside``: in that sandbox (a zygote's, for a worker it forks)."""
        self._count += 1
        parent = inside or self.path
        sandbox = Path(tempfile.mkdtemp(prefix=f"w{self._count}-", dir=parent))
        sandbox.chmod(0o711)  # bubblewrap enters it with no capabilities before the uid drop
        if os.geteuid() == 0:
            os.chown(sandbox, SANDBOX_UID, SANDBOX_UID)
        return sandbox

    def remove(self) -> None:
        """Remove this pool's sandboxes, and the scanner's folder once no pool uses it."""
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()


def sandbox_variables(sandbox: Path) -> dict[str, str]:
    """The environment that puts a worker's home, temp and caches inside its sandbox."""
    home, tmp, cache, config, data = (str(sandbox / sub) for sub in SANDBOX_FOLDERS)
    return {
        "HOME": home,
        "TMPDIR": tmp,
        "TEMP": tmp,
        "TMP": tmp,
        "XDG_CACHE_HOME": cache,
        "XDG_CONFIG_HOME": config,
        "XDG_DATA_HOME": data,
    }


def remove_sandbox(sandbox: Path) -> None:
    """Remove a worker's sandbox directory and everything it wrote there."""
    shutil.rmtree(sandbox, ignore_errors=True)


def sandboxes_base() -> Path:
    """The folder every scanner of this user keeps its sandboxes in (created safely: it must
    be ours, not a link, and writable by nobody else)."""
    base = Path(tempfile.gettempdir()) / f"apiprof-sandboxes-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        base.mkdir(mode=0o711)
    info = base.lstat()
    if not base.is_dir() or base.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise PermissionError(
            f"{base} is not a private directory of this user; remove it or set TMPDIR elsewhere"
        )
    return base


@dataclass(frozen=True)
class Cleanup:
    """What a scan found and removed from scanners that were killed."""

    folders: int = 0
    processes: int = 0

    def describe(self) -> str:
        if not (self.folders or self.processes):
            return ""
        return (
            f"removed {self.folders} sandbox folder(s) and stopped {self.processes} worker "
            "process(es) left behind by a scan that was killed"
        )


def clean_up_after_killed_scans() -> Cleanup:
    """Stop workers and remove sandbox folders whose scanner (named by the folder) is gone."""
    try:
        base = sandboxes_base()
    except OSError:
        return Cleanup()
    host = this_process().host
    folders = processes = 0
    for entry in base.iterdir():
        owner = _owner_of(entry.name)
        if owner is None or owner.host != host or still_running(owner):
            continue
        processes += _stop_processes_in(entry)
        shutil.rmtree(entry, ignore_errors=True)
        folders += 1
    return Cleanup(folders, processes)


def _owner_of(name: str) -> ScanOwner | None:
    host, _, rest = name.rpartition("-")
    host, _, pid = host.rpartition("-")
    if not (pid.isdigit() and rest.isdigit()):
        return None
    return ScanOwner(host, int(pid), "" if rest == "0" else rest)


def _stop_processes_in(folder: Path) -> int:
    """Kill processes whose working directory is inside ``folder`` (a dead scan's workers)."""
    stopped = 0
    prefix = str(folder) + "/"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd.startswith(prefix) or cwd == str(folder):
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)
                stopped += 1
    return stopped
