"""The system-call filter, its supervisor and the reply contract, piece by piece.

The filter program is checked by running it in a small classic-BPF interpreter (every decision,
both architectures, both modes); the supervisor with a real child process that installs the
real filter; path resolution, socket addresses and the contract as pure functions.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import struct
import subprocess
import sys

import pytest

from apiprof.engine.isolation import seccomp
from apiprof.engine.isolation.contract import violation
from apiprof.engine.isolation.protocol import (
    Attempt,
    Attempted,
    Call,
    Captured,
    CaptureExamples,
    EntryFinished,
    Ping,
    Pong,
    ProfileEntry,
    Ready,
    ScenarioOutcome,
)
from apiprof.engine.isolation.supervisor import Supervisor, WorkerView, resolve_in_root
from apiprof.engine.isolation.syscalls import AUDIT_ARCH, TABLES, native_arch
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.model.histogram import Histogram
from apiprof.model.records import (
    Coverage,
    EntryKind,
    EntryPoint,
    Failure,
    Measurement,
    Metric,
    ScenarioSource,
)

# -- the filter program, run by a tiny classic-BPF interpreter -----------------------------------


def run_filter(
    program: bytes, arch: str, name: str | int, *args: int, abi: int | None = None
) -> int:
    """The filter's verdict for one call (``name`` or a raw number) made through ``abi``
    (default: the architecture's native one)."""
    number = TABLES[arch][name] if isinstance(name, str) else name
    values = [a & (2**64 - 1) for a in (*args, *[0] * (6 - len(args)))]
    data = struct.pack("<iIQ6Q", number, abi or AUDIT_ARCH[arch], 0, *values)
    insns = list(struct.iter_unpack("<HBBI", program))
    pc, acc = 0, 0
    for _ in range(10_000):
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            acc, pc = struct.unpack_from("<I", data, k)[0], pc + 1
        elif code == 0x15:
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x35:
            pc += 1 + (jt if acc >= k else jf)
        elif code == 0x45:
            pc += 1 + (jt if acc & k else jf)
        elif code == 0x05:
            pc += 1 + k
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unknown instruction {code:#x}")
    raise AssertionError("the filter loops")


NOTIFY, ALLOW, EPERM = seccomp.RET_NOTIFY, seccomp.RET_ALLOW, seccomp.ret_errno(errno.EPERM)
OWN = 2  # the worker's pid in its namespace


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_filter_hands_the_scanner_what_a_scan_never_needs_and_what_needs_reading(arch):
    program = seccomp.build_filter(arch, OWN, seccomp.Mode.NOTIFY)
    verdict = lambda name, *args: run_filter(program, arch, name, *args)  # noqa: E731
    at_cwd = -100
    assert verdict("execve") == verdict("ptrace") == verdict("mount") == NOTIFY
    assert verdict("clone", 0x11) == NOTIFY  # fork: SIGCHLD, no CLONE_THREAD
    assert verdict("clone", seccomp.CLONE_THREAD | 0x100) == ALLOW
    assert verdict("kill", OWN, 9) == verdict("kill", 0, 9) == verdict("kill", -OWN, 9) == ALLOW
    assert verdict("kill", 1, 9) == verdict("kill", -1, 9) == NOTIFY
    assert verdict("tgkill", OWN, 5, 10) == ALLOW and verdict("tgkill", 1, 1, 9) == NOTIFY
    assert verdict("pidfd_open", 1) == NOTIFY and verdict("pidfd_send_signal") == NOTIFY
    assert verdict("openat", at_cwd, 0, os.O_RDONLY) == ALLOW
    assert verdict("openat", at_cwd, 0, os.O_WRONLY | os.O_CREAT) == NOTIFY
    assert verdict("sendto", 3, 0, 1, 0, 0) == ALLOW  # a connected socket: no address
    assert verdict("sendto", 3, 0, 1, 0, 0x7FFF_0000_1000) == NOTIFY
    assert verdict("socket", socket.AF_INET) == ALLOW and verdict("socket", 17) == NOTIFY
    assert verdict("ioctl", 1, 0x5401) == ALLOW and verdict("ioctl", 1, 0x5412) == NOTIFY
    assert verdict("prctl", 15) == ALLOW and verdict("prctl", 4) == NOTIFY
    assert verdict("seccomp") == NOTIFY and verdict("io_uring_setup") == NOTIFY
    for ordinary in (0, 1, 3, 9, 202, 228):  # read/write/close/mmap... by number, wherever valid
        if ordinary not in TABLES[arch].values():
            assert run_filter(program, arch, ordinary) == ALLOW


def test_without_a_supervisor_the_filter_refuses_what_it_can_and_allows_what_it_cannot_read():
    program = seccomp.build_filter("x86_64", OWN, seccomp.Mode.DENY)
    assert run_filter(program, "x86_64", "execve") == EPERM
    assert run_filter(program, "x86_64", "clone3") == seccomp.ret_errno(errno.ENOSYS)
    assert run_filter(program, "x86_64", "openat", -100, 0, os.O_WRONLY) == ALLOW
    assert run_filter(program, "x86_64", "kill", 1, 9) == EPERM


def test_perf_event_open_reaches_only_the_calling_threads_own_events():
    """What the timing passes open (pid 0: this thread; cpu -1: wherever it runs; no cgroup)
    passes the filter; another process, a CPU-wide event or a cgroup's events do not."""
    program = seccomp.build_filter("x86_64", OWN, seccomp.Mode.DENY)
    cloexec, cgroup = 8, seccomp.PERF_FLAG_PID_CGROUP
    assert run_filter(program, "x86_64", "perf_event_open", 0x1000, 0, -1, -1, cloexec) == ALLOW
    assert run_filter(program, "x86_64", "perf_event_open", 0x1000, 1, -1, -1, cloexec) == EPERM
    assert run_filter(program, "x86_64", "perf_event_open", 0x1000, 0, 0, -1, cloexec) == EPERM
    assert run_filter(program, "x86_64", "perf_event_open", 0x1000, 0, -1, -1, cgroup) == EPERM
    assert run_filter(program, "x86_64", "mq_open", 0x1000, 0o100) == EPERM


def test_other_abis_are_killed():
    """32-bit calls (i386 numbers differ) and x32 calls would slip past the table."""
    program = seccomp.build_filter("x86_64", OWN, seccomp.Mode.NOTIFY)
    assert run_filter(program, "x86_64", 11, abi=0x40000003) == seccomp.RET_KILL_PROCESS
    assert run_filter(program, "x86_64", 0x40000000 | 1) == seccomp.RET_KILL_PROCESS


# -- the supervisor with a real filtered child --------------------------------------------------------

CHILD = """
import os, socket, sys, threading
from apiprof.engine.isolation import seccomp
from apiprof.engine.isolation.syscalls import native_arch
box, outside = sys.argv[1:]
os.chdir(box)
fd = seccomp.install_filter(native_arch(), seccomp.Mode.NOTIFY)
print(os.getpid(), fd, flush=True)
sys.stdin.readline()
os.close(fd)
def attempt(name, fn):
    try:
        fn()
        print(name, "ok", flush=True)
    except OSError as error:
        print(name, error.errno, flush=True)
attempt("write inside", lambda: open("inside.txt", "w").close())
attempt("write outside", lambda: open(os.path.join(outside, "x"), "w").close())
folder = os.open(outside, os.O_RDONLY)
attempt("dir_fd outside", lambda: os.close(os.open("y", os.O_WRONLY | os.O_CREAT, dir_fd=folder)))
os.symlink(outside, "escape")
attempt("through a symlink", lambda: open("escape/z", "w").close())
attempt("exec", lambda: os.execv("/bin/true", ["true"]))
attempt("kill the parent", lambda: os.kill(os.getppid(), 0))
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
    attempt("send beyond loopback", lambda: udp.sendto(b"x", ("192.0.2.1", 9)))
    attempt("send to loopback", lambda: udp.sendto(b"x", ("127.0.0.1", 9)))
thread = threading.Thread(target=lambda: None)
attempt("start a thread", lambda: (thread.start(), thread.join()))
print("done", flush=True)
"""


def run_supervised(script: str, box, outside, *, private_devices: bool = False):
    """Run ``script`` (CHILD's prologue and ``attempt``, then its own lines) under the real
    filter with a supervisor answering; what each attempt said, and the supervisor (closed)."""
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(box), str(outside)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    pid, fd = map(int, child.stdout.readline().split())
    view = WorkerView(pid, str(box), False, private_devices)
    supervisor = Supervisor(seccomp.take_listener(pid, fd), view, native_arch())
    child.stdin.write(b"go\n")
    child.stdin.flush()
    output = b""
    try:
        while not output.endswith(b"done\n"):
            ready = select.select([supervisor, child.stdout], [], [], 60)[0]
            assert ready, "the child hangs"
            if supervisor in ready:
                supervisor.handle()
            if child.stdout in ready:
                output += os.read(child.stdout.fileno(), 1 << 16)
    finally:
        supervisor.close()
        child.wait(timeout=60)
    lines = output.decode().splitlines()
    return dict(line.rsplit(" ", 1) for line in lines[:-1]), supervisor


linux_filter = pytest.mark.skipif(
    native_arch() is None or sys.platform != "linux", reason="Linux filter"
)


@linux_filter
def test_the_supervisor_decides_from_the_callers_memory_and_records_refusals(tmp_path):
    box, outside = tmp_path / "box", tmp_path / "outside"
    box.mkdir()
    outside.mkdir()
    said, supervisor = run_supervised(CHILD, box, outside)
    assert said["write inside"] == said["send to loopback"] == said["start a thread"] == "ok"
    refused = str(errno.EPERM)
    for name in ("write outside", "dir_fd outside", "through a symlink", "exec", "kill the parent"):
        assert said[name] == refused, (name, said)
    assert said["send beyond loopback"] == refused
    reasons = [r.reason for r in supervisor.refusals]
    assert f"tried to write {outside}/x outside the sandbox" in reasons
    assert f"tried to write {outside}/y outside the sandbox" in reasons
    assert f"tried to write {outside}/z outside the sandbox" in reasons
    assert "tried to run a program: /bin/true" in reasons
    assert f"tried to send signal 0 to process {os.getpid()}" in reasons
    assert "tried to send data to 192.0.2.1:9 (network access is blocked)" in reasons


SEMAPHORES = (
    CHILD.split('attempt("write inside"')[0]
    + """
import ctypes, multiprocessing
attempt("a multiprocessing lock", lambda: multiprocessing.RLock().acquire())
attempt("delete another's semaphore", lambda: os.unlink(outside))
libc = ctypes.CDLL(None, use_errno=True)
libc.sem_open.restype = ctypes.c_void_p
mine = "/" + os.path.basename(outside).removeprefix("sem.") + "-left"
left = libc.sem_open(mine.encode(), os.O_CREAT | os.O_EXCL, 0o600, 1)
attempt("leave a semaphore behind", lambda: None if left else os.strerror(ctypes.get_errno()))
print("done", flush=True)
"""
)


@linux_filter
def test_named_semaphores_are_made_unmade_and_never_anothers(tmp_path):
    """A ``multiprocessing`` lock makes a POSIX named semaphore in the shared ``/dev/shm``: the
    worker may make one and unlink its own, never touch one that existed before it, and what
    it leaves is removed when it ends."""
    name = f"apiprof-test-{os.getpid()}"
    foreign = f"/dev/shm/sem.{name}"
    with open(foreign, "wb"):  # another process's semaphore
        pass
    try:
        said, supervisor = run_supervised(SEMAPHORES, tmp_path, foreign)
        assert said["a multiprocessing lock"] == "ok"
        assert said["delete another's semaphore"] == str(errno.EPERM)
        assert os.path.exists(foreign)
        assert said["leave a semaphore behind"] == "ok"
        assert not os.path.exists(foreign + "-left")
        assert f"tried to delete {foreign} outside the sandbox" in [
            r.reason for r in supervisor.refusals
        ]
    finally:
        os.unlink(foreign)


def test_paths_resolve_inside_the_workers_root_with_its_links(tmp_path):
    root = tmp_path / "root"
    (root / "box").mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "box" / "abs").symlink_to("/etc")  # absolute: inside the worker's root
    (root / "box" / "rel").symlink_to("../etc")
    (root / "box" / "loop").symlink_to("loop")
    assert resolve_in_root(str(root), "/box/abs/passwd") == "/etc/passwd"
    assert resolve_in_root(str(root), "/box/rel/passwd") == "/etc/passwd"
    assert resolve_in_root(str(root), "/box/new/../../etc/x") == "/etc/x"
    assert resolve_in_root(str(root), "/box/abs", follow=False) == "/box/abs"
    assert resolve_in_root(str(root), "/../../box") == "/box"
    assert resolve_in_root(str(root), "/box/loop").startswith("/box")  # gives up, stays put


def inet(address: str, port: int) -> bytes:
    return struct.pack("<H", socket.AF_INET) + struct.pack(">H", port) + socket.inet_aton(address)


def inet6(address: str, port: int) -> bytes:
    packed = socket.inet_pton(socket.AF_INET6, address)
    return struct.pack("<H", socket.AF_INET6) + struct.pack(">HI", port, 0) + packed + b"\0" * 4


def test_socket_addresses_allowed_are_loopback_and_the_sandboxs_own(tmp_path):
    view = WorkerView(os.getpid(), str(tmp_path), private_network=True)
    supervisor = Supervisor(-1, view, native_arch() or "x86_64")
    refusal = supervisor.address_refusal
    me = os.getpid()
    assert refusal(me, inet("127.0.0.1", 80), listening=False) == ""
    assert refusal(me, inet6("::1", 80), listening=False) == ""
    assert refusal(me, inet6("::ffff:127.0.0.1", 80), listening=False) == ""
    assert refusal(me, inet("10.0.0.1", 53), listening=False) == (
        "10.0.0.1:53 (network access is blocked)"
    )
    assert refusal(me, inet("0.0.0.0", 80), listening=True) == ""  # its own namespace
    unix = struct.pack("<H", socket.AF_UNIX)
    assert refusal(me, unix + str(tmp_path / "s").encode() + b"\0", listening=False) == ""
    assert "outside the sandbox" in refusal(me, unix + b"/run/docker.sock\0", listening=False)
    assert refusal(me, unix + b"\0abstract", listening=False) == ""
    shared = Supervisor(-1, WorkerView(me, str(tmp_path), False), native_arch() or "x86_64")
    assert "abstract Unix socket @abstract" in shared.address_refusal(
        me, unix + b"\0abstract", listening=False
    )
    assert "every" not in shared.address_refusal(me, inet("0.0.0.0", 80), listening=True)
    assert shared.address_refusal(me, inet("0.0.0.0", 80), listening=True)
    # in mounts of its own, a socket path with nothing there (glibc asking nscd) fails by itself
    own = Supervisor(-1, WorkerView(me, str(tmp_path), True, True), native_arch() or "x86_64")
    absent = unix + str(tmp_path.parent / "apiprof-no-such-socket").encode() + b"\0"
    assert own.address_refusal(me, absent, listening=False) == ""
    assert shared.address_refusal(me, absent, listening=False)  # the host's files: refused
    present = unix + str(tmp_path.parent).encode() + b"\0"  # something is there: refused
    assert "outside the sandbox" in own.address_refusal(me, present, listening=False)


# -- the contract: what a reply may say given its request -------------------------------------------

ENTRY = EntryPoint("pkg.f", "pkg", "pkg", EntryKind.FUNCTION)
FILE_SPEC = ScenarioSpec(
    "file:s.toml#big", "pkg.f", ScenarioSource.FILE, "", "", "pkg.f(n)", "n", (10, 100),
    targets=("pkg.f", "other.g"),
)  # fmt: skip
DOC_SPEC = ScenarioSpec("doc:pkg.f#1", "pkg.f", ScenarioSource.DOCSTRING, "", "", "pkg.f()")


def outcome(
    spec: ScenarioSpec, size: int, qualname: str, values=(1000.0,), **kw
) -> ScenarioOutcome:
    measured = Measurement(qualname, spec.id, Metric.WALL, Histogram.of(values), size)
    return ScenarioOutcome(spec, size, measurements=[measured], **kw)


def test_a_reply_may_only_concern_its_own_task():
    request = ProfileEntry("pkg", ENTRY, specs=[FILE_SPEC])
    assert violation(request, outcome(DOC_SPEC, -1, "pkg.f")) == ""
    assert violation(request, outcome(FILE_SPEC, 100, "other.g")) == ""  # a file's target
    assert "json.dumps, which its task did not ask" in violation(
        request, outcome(DOC_SPEC, -1, "json.dumps")
    )
    assert "size 5" in violation(request, outcome(FILE_SPEC, 5, "pkg.f"))
    forged_file = ScenarioSpec("file:x.toml#y", "pkg.f", ScenarioSource.FILE, "", "", "")
    assert "no scenario file of its task" in violation(request, outcome(forged_file, -1, "pkg.f"))
    stolen = ScenarioSpec("doc:other.g#1", "pkg.f", ScenarioSource.DOCSTRING, "", "", "")
    assert "other than its entry point" in violation(request, outcome(stolen, -1, "pkg.f"))
    sneaky = ScenarioSpec(
        "doc:pkg.f#2", "pkg.f", ScenarioSource.DOCSTRING, "", "", "", targets=("x.y",)
    )
    assert "measures other entry points" in violation(request, outcome(sneaky, -1, "pkg.f"))
    absurd = outcome(DOC_SPEC, -1, "pkg.f", values=(2.0**60,))
    assert "outside physical sense" in violation(request, absurd)
    assert "answered a Ping request with EntryFinished" in violation(Ping(), EntryFinished())
    assert "measures nothing" in violation(Call("os:getpid"), outcome(DOC_SPEC, -1, "pkg.f"))
    assert "announced itself again" in violation(Ping(), Ready(1))
    assert violation(Ping(), Pong(1, "/")) == ""
    assert "more than 8192 characters" in violation(Ping(), Attempted(Attempt("x" * 9000)))
    assert "not a Python name" in violation(Ping(), Attempted(Attempt("x", module="../x")))


def test_captured_arguments_and_failed_attempts_are_checked_too():
    request = CaptureExamples("pkg", [ENTRY])
    own = CapturedCall("pkg.f", "", "doc:pkg.f#1")
    assert violation(request, Captured([own])) == ""
    foreign = CapturedCall("other.g", "", "doc:pkg.f#1")
    assert "captured arguments of other.g" in violation(request, Captured([own, foreign]))
    forged = Failure(Coverage.CRASHED, "raised", scenario="synth:pkg.f\x1b[2J")
    entry = ProfileEntry("pkg", ENTRY)
    assert "control characters" in violation(entry, EntryFinished(failures=[forged]))
    assert violation(entry, EntryFinished(failures=[Failure(Coverage.CRASHED, "raised")])) == ""


def test_take_listener_refuses_a_descriptor_the_process_does_not_have():
    with pytest.raises(OSError):
        seccomp.take_listener(os.getpid(), 987_654)
