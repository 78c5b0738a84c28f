"""The worker's system-call filter (seccomp), and the scanner's end of its notifications.

A worker installs :func:`build_filter`'s program on itself before it imports any package code.
The program sorts system calls into three kinds:

* **never needed by a scan** — starting programs or processes (``execve``, ``fork``, ``clone``
  without ``CLONE_THREAD``), signalling or tracing other processes (``kill``, ``pidfd_*``,
  ``ptrace``), mounting, namespaces, kernel modules, ``bpf``, ``io_uring`` (which would run
  calls past this filter), installing another filter, injecting terminal input;
* **allowed or not depending on the arguments' contents** — opening a file for writing,
  deleting, renaming, linking, changing permissions or timestamps, ``connect``/``bind``/
  ``sendmsg`` to an address: the filter cannot read memory, so it hands these to the scanner;
* everything else, allowed at once (reads, memory, threads, time, pipes...).

With a supervisor (:data:`Mode.NOTIFY`, the normal case) both kinds of refusal go to the
scanner as *user notifications* (``SECCOMP_RET_USER_NOTIF``): the calling thread waits while the
scanner reads the arguments from ``/proc/PID/mem``, decides (:mod:`~apiprof.engine.isolation.
supervisor`) and answers — refuse with ``EPERM`` and record what was tried, or let the kernel go
on. The listener descriptor lives only in the scanner (it takes it with ``pidfd_getfd``; the
worker closes its own copy before package code runs), so nothing inside the worker can answer
its own notifications or silence the record. Without a supervisor (:data:`Mode.DENY`) the
first kind is refused with ``EPERM`` unreported and the second kind allowed: the mount namespace
(or, at the process level, the in-process reporter) decides those.
"""

from __future__ import annotations

import ctypes
import enum
import errno
import fcntl
import os
import struct
from dataclasses import dataclass

from apiprof.engine.isolation.syscalls import AUDIT_ARCH, TABLES, X32_SYSCALL_BIT

RET_ALLOW = 0x7FFF0000
RET_NOTIFY = 0x7FC00000
RET_KILL_PROCESS = 0x80000000


def ret_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class Mode(enum.StrEnum):
    NOTIFY = "notify"  # the scanner decides and records (a supervisor takes the listener)
    DENY = "deny"  # refuse what a scan never needs, unreported; allow what needs inspection


class Kind(enum.StrEnum):
    """Why a call is in the filter, which decides what :data:`Mode.DENY` does with it."""

    NEVER = "never"  # a scan never needs it: refused
    INSPECT = "inspect"  # allowed or refused depending on memory the filter cannot read


# constants shared by x86_64 and arm64
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
CLONE_THREAD = 0x00010000
ALLOWED_SOCKET_FAMILIES = (1, 2, 10, 16)  # AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
PR_SET_DUMPABLE, PR_SET_SECCOMP = 4, 22
PERF_FLAG_PID_CGROUP = 1 << 2
OWN = object()
"""Stands for the worker's own pid (and its process group) in a rule's allowed values."""


@dataclass(frozen=True)
class Rule:
    """When one system call goes to the supervisor (or is refused): always, or only for some
    values of one argument (the low 32 bits, which hold every int, flag and pid argument)."""

    kind: Kind
    arg: int = -1  # -1: always
    unless_flags: int = 0  # allowed when any of these bits is set
    only_flags: int = 0  # matched only when any of these bits is set
    unless_values: tuple[object, ...] = ()  # allowed for these values (OWN: the worker's pid)
    only_values: tuple[int, ...] = ()  # matched only for these values
    unless_null: bool = False  # allowed when the (64-bit pointer) argument is NULL
    also: tuple[Rule, ...] = ()  # allowed only when these rules allow it too (other arguments)


NEVER, INSPECT = Rule(Kind.NEVER), Rule(Kind.INSPECT)
_OWN_PROCESS = Rule(Kind.NEVER, arg=0, unless_values=(OWN,))
RULES: dict[str, Rule] = {
    # programs and processes (threads are clone with CLONE_THREAD; clone3's flags sit in memory)
    "execve": NEVER, "execveat": NEVER, "fork": NEVER, "vfork": NEVER,
    "clone": Rule(Kind.NEVER, arg=0, unless_flags=CLONE_THREAD), "clone3": INSPECT,
    # other processes: signals (only to itself), pidfds, tracing
    "kill": Rule(Kind.NEVER, arg=0, unless_values=(OWN, 0)), "tkill": _OWN_PROCESS,
    "tgkill": _OWN_PROCESS, "rt_sigqueueinfo": _OWN_PROCESS, "rt_tgsigqueueinfo": _OWN_PROCESS,
    "pidfd_open": _OWN_PROCESS, "pidfd_send_signal": NEVER, "pidfd_getfd": NEVER,
    "ptrace": NEVER, "process_vm_readv": NEVER, "process_vm_writev": NEVER, "kcmp": NEVER,
    "process_madvise": NEVER,
    # the system itself
    "mount": NEVER, "umount2": NEVER, "pivot_root": NEVER, "chroot": NEVER, "unshare": NEVER,
    "setns": NEVER, "move_mount": NEVER, "open_tree": NEVER, "fsopen": NEVER, "fsmount": NEVER,
    "fspick": NEVER, "fsconfig": NEVER, "mount_setattr": NEVER, "bpf": NEVER,
    # only what the timing passes open: the calling thread (pid 0) on any CPU (-1), no cgroup
    # (with PERF_FLAG_PID_CGROUP the pid would name a cgroup); other processes, CPU-wide and
    # cgroup-wide events stay out of reach whatever perf_event_paranoid allows
    "perf_event_open": Rule(
        Kind.NEVER, arg=1, unless_values=(0,),
        also=(Rule(Kind.NEVER, arg=2, unless_values=(-1,)),
              Rule(Kind.NEVER, arg=4, only_flags=PERF_FLAG_PID_CGROUP)),
    ),
    "keyctl": NEVER, "add_key": NEVER, "request_key": NEVER,
    # a POSIX message queue outlives its worker in the IPC namespace (a zygote's children share
    # one); a scan never needs one
    "mq_open": NEVER,
    "init_module": NEVER, "finit_module": NEVER, "delete_module": NEVER, "kexec_load": NEVER,
    "kexec_file_load": NEVER, "reboot": NEVER, "swapon": NEVER, "swapoff": NEVER, "acct": NEVER,
    "settimeofday": NEVER, "clock_settime": NEVER, "adjtimex": NEVER, "clock_adjtime": NEVER,
    "sethostname": NEVER, "setdomainname": NEVER, "iopl": NEVER, "ioperm": NEVER,
    "quotactl": NEVER, "quotactl_fd": NEVER, "userfaultfd": NEVER, "open_by_handle_at": NEVER,
    "name_to_handle_at": NEVER, "io_uring_setup": NEVER, "io_uring_enter": NEVER,
    "io_uring_register": NEVER, "personality": NEVER, "syslog": NEVER, "vhangup": NEVER,
    "lookup_dcookie": NEVER, "modify_ldt": NEVER, "uselib": NEVER, "seccomp": NEVER,
    "prctl": Rule(Kind.NEVER, arg=0, only_values=(PR_SET_DUMPABLE, PR_SET_SECCOMP)),
    "ioctl": Rule(Kind.NEVER, arg=1, only_values=(TIOCSTI, TIOCLINUX)),
    "socket": Rule(Kind.NEVER, arg=0, unless_values=ALLOWED_SOCKET_FAMILIES),
    # files: writes are checked against the sandbox directory
    "open": Rule(Kind.INSPECT, arg=1, only_flags=WRITE_FLAGS),
    "openat": Rule(Kind.INSPECT, arg=2, only_flags=WRITE_FLAGS), "openat2": INSPECT,
    "creat": INSPECT, "unlink": INSPECT, "unlinkat": INSPECT, "rmdir": INSPECT,
    "rename": INSPECT, "renameat": INSPECT, "renameat2": INSPECT, "mkdir": INSPECT,
    "mkdirat": INSPECT, "link": INSPECT, "linkat": INSPECT, "symlink": INSPECT,
    "symlinkat": INSPECT, "mknod": INSPECT, "mknodat": INSPECT, "chmod": INSPECT,
    "fchmod": INSPECT, "fchmodat": INSPECT, "fchmodat2": INSPECT, "chown": INSPECT,
    "fchown": INSPECT, "lchown": INSPECT, "fchownat": INSPECT, "truncate": INSPECT,
    "utime": INSPECT, "utimes": INSPECT, "futimesat": INSPECT, "utimensat": INSPECT,
    "setxattr": INSPECT, "lsetxattr": INSPECT, "fsetxattr": INSPECT, "removexattr": INSPECT,
    "lremovexattr": INSPECT, "fremovexattr": INSPECT,
    # network: the address decides (loopback, or a socket file inside the sandbox)
    "connect": INSPECT, "bind": INSPECT, "sendto": Rule(Kind.INSPECT, arg=4, unless_null=True),
    "sendmsg": INSPECT, "sendmmsg": INSPECT,
}  # fmt: skip

# -- classic BPF ---------------------------------------------------------------------------------

LD_W_ABS, JEQ, JGE, JSET, JA, RET = 0x20, 0x15, 0x35, 0x45, 0x05, 0x06
OFFSET_NR, OFFSET_ARCH = 0, 4


def _arg_low(index: int) -> int:
    return 16 + 8 * index


@dataclass(frozen=True)
class _Insn:
    code: int
    k: int = 0
    true: str | None = None  # label to jump to (conditional: when true; JA: always)
    false: str | None = None  # label to jump to when false (None: the next instruction)


class _Program:
    """A little assembler: instructions with symbolic jump targets."""

    def __init__(self) -> None:
        self.insns: list[_Insn] = []
        self.where: dict[str, int] = {}
        self._labels = 0

    def new_label(self) -> str:
        self._labels += 1
        return f"L{self._labels}"

    def mark(self, label: str) -> None:
        """Put ``label`` on the next instruction emitted."""
        self.where[label] = len(self.insns)

    def emit(
        self, code: int, k: int = 0, true: str | None = None, false: str | None = None
    ) -> None:
        self.insns.append(_Insn(code, k & 0xFFFFFFFF, true, false))

    def assemble(self) -> bytes:
        out = bytearray()
        for i, insn in enumerate(self.insns):
            jt = self.where[insn.true] - i - 1 if insn.true else 0
            jf = self.where[insn.false] - i - 1 if insn.false else 0
            if insn.code == JA:
                out += struct.pack("<HBBI", JA, 0, 0, jt if insn.true else insn.k)
                continue
            if not (0 <= jt <= 255 and 0 <= jf <= 255):
                raise ValueError("a conditional jump is too far for classic BPF")
            out += struct.pack("<HBBI", insn.code, jt, jf, insn.k)
        if len(self.insns) > 4096:
            raise ValueError("the filter is longer than the kernel accepts")
        return bytes(out)


def build_filter(arch: str, own_pid: int, mode: Mode) -> bytes:
    """The filter program for ``arch`` (``x86_64`` or ``aarch64``), as raw ``sock_filter``
    structs. ``own_pid`` is the worker's pid in its own PID namespace: signals to it (and to its
    process group) are its own business."""
    table = TABLES[arch]
    rules = sorted((table[name], rule) for name, rule in RULES.items() if name in table)
    program = _Program()
    program.emit(LD_W_ABS, OFFSET_ARCH)
    native = program.new_label()
    program.emit(JEQ, AUDIT_ARCH[arch], true=native)
    program.emit(RET, RET_KILL_PROCESS)  # another ABI (e.g. 32-bit calls on x86_64)
    program.mark(native)
    program.emit(LD_W_ABS, OFFSET_NR)
    if arch == "x86_64":
        x32, native64 = program.new_label(), program.new_label()
        program.emit(JGE, X32_SYSCALL_BIT, true=x32, false=native64)
        program.mark(x32)
        program.emit(RET, RET_KILL_PROCESS)
        program.mark(native64)
    _emit_tree(program, rules, own_pid, mode)
    return program.assemble()


def _emit_tree(program: _Program, rules: list[tuple[int, Rule]], own_pid: int, mode: Mode) -> None:
    """A binary search on the call number (the accumulator), so an ordinary call costs a
    handful of comparisons; unmatched calls are allowed."""
    if len(rules) <= 3:
        for number, rule in rules:
            matched, other = program.new_label(), program.new_label()
            program.emit(JEQ, number, true=matched, false=other)
            program.mark(matched)
            _emit_rule(program, rule, own_pid, mode)
            program.mark(other)
        program.emit(RET, RET_ALLOW)
        return
    middle = len(rules) // 2
    upper, lower = program.new_label(), program.new_label()
    program.emit(JGE, rules[middle][0], true=upper, false=lower)
    program.mark(upper)
    far = program.new_label()
    program.emit(JA, true=far)  # the upper half may be too far for a conditional jump
    program.mark(lower)
    _emit_tree(program, rules[:middle], own_pid, mode)
    program.mark(far)
    _emit_tree(program, rules[middle:], own_pid, mode)


def _action(rule: Rule, mode: Mode) -> int:
    if mode is Mode.NOTIFY:
        return RET_NOTIFY
    return ret_errno(errno.EPERM) if rule.kind is Kind.NEVER else RET_ALLOW


def _emit_rule(program: _Program, rule: Rule, own_pid: int, mode: Mode) -> None:
    """The body of one call's rule; it always ends in a return."""
    action = _action(rule, mode)
    if rule is RULES["clone3"] and mode is Mode.DENY:
        action = ret_errno(errno.ENOSYS)  # glibc then starts threads with clone, checked above
    if rule.arg < 0 or action == RET_ALLOW:
        program.emit(RET, action)
        return
    act = program.new_label()
    for condition in (rule, *rule.also):
        allow = program.new_label()
        _emit_condition(program, condition, own_pid, act, allow)
        program.mark(allow)
    program.emit(RET, RET_ALLOW)
    program.mark(act)
    program.emit(RET, action)


def _emit_condition(program: _Program, rule: Rule, own_pid: int, act: str, allow: str) -> None:
    """Jump to ``act`` when ``rule`` matches the call's argument, to ``allow`` when not."""
    program.emit(LD_W_ABS, _arg_low(rule.arg))
    if rule.unless_null:
        high = program.new_label()
        program.emit(JEQ, 0, true=high, false=act)
        program.mark(high)
        program.emit(LD_W_ABS, _arg_low(rule.arg) + 4)
        program.emit(JEQ, 0, true=allow, false=act)
    elif rule.unless_flags:
        program.emit(JSET, rule.unless_flags, true=allow, false=act)
    elif rule.only_flags:
        program.emit(JSET, rule.only_flags, true=act, false=allow)
    elif rule.unless_values:
        values = [v for v in rule.unless_values if v is not OWN]
        if OWN in rule.unless_values:
            values += [own_pid, -own_pid]  # the worker, and its process group
        for value in values:
            nxt = program.new_label()
            program.emit(JEQ, int(value), true=allow, false=nxt)  # type: ignore[call-overload]
            program.mark(nxt)
        program.emit(JA, true=act)
    else:
        for value in rule.only_values:
            nxt = program.new_label()
            program.emit(JEQ, value, true=act, false=nxt)
            program.mark(nxt)
        program.emit(JA, true=allow)


# -- installing (inside the worker) -----------------------------------------------------------------

PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}
SYS_PIDFD_GETFD = 438


class SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, doing: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{doing}: {os.strerror(code)}")
    return result


def no_new_privileges() -> None:
    """Make this process (and whatever it could execute) unable to gain privileges."""
    libc = _libc()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def install_filter(arch: str, mode: Mode) -> int:
    """Install the filter on this (single-threaded) process; returns the listener descriptor in
    :data:`Mode.NOTIFY` (for the scanner to take), -1 otherwise."""
    program = build_filter(arch, os.getpid(), mode)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    no_new_privileges()
    flags = SECCOMP_FILTER_FLAG_NEW_LISTENER if mode is Mode.NOTIFY else 0
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(
        ctypes.c_long(SYS_SECCOMP[arch]),
        ctypes.c_long(SECCOMP_SET_MODE_FILTER),
        ctypes.c_long(flags),
        ctypes.byref(fprog),
    )
    fd = _check(int(result), "seccomp(SECCOMP_SET_MODE_FILTER)")
    return fd if mode is Mode.NOTIFY else -1


# -- notifications (in the scanner) ---------------------------------------------------------------

NOTIF_RECV = 0xC0502100  # _IOWR('!', 0, struct seccomp_notif)
NOTIF_SEND = 0xC0182101  # _IOWR('!', 1, struct seccomp_notif_resp)
NOTIF_ID_VALID = 0x40082102  # _IOW('!', 2, __u64)
FLAG_CONTINUE = 1
_NOTIF = struct.Struct("<QIIiIQ6Q")  # id, pid, flags, nr, arch, instruction pointer, args
_RESPONSE = struct.Struct("<QqiI")  # id, val, error, flags


@dataclass(frozen=True)
class Notification:
    """One call a worker thread is waiting on: which thread (pid in the scanner's namespace),
    the call number and its six raw arguments."""

    id: int
    pid: int
    nr: int
    arch: int
    args: tuple[int, ...]

    def signed(self, index: int) -> int:
        """Argument ``index`` as a C ``int`` (pids, descriptors, ``AT_FDCWD``)."""
        value = self.args[index] & 0xFFFFFFFF
        return value - (1 << 32) if value & 0x80000000 else value


def take_listener(pid: int, fd: int) -> int:
    """Copy descriptor ``fd`` out of process ``pid`` (``pidfd_getfd``); close-on-exec."""
    pidfd = os.pidfd_open(pid)
    try:
        libc = _libc()
        libc.syscall.restype = ctypes.c_long
        result = libc.syscall(
            ctypes.c_long(SYS_PIDFD_GETFD),
            ctypes.c_long(pidfd),
            ctypes.c_long(fd),
            ctypes.c_long(0),
        )
        return _check(int(result), "pidfd_getfd")
    finally:
        os.close(pidfd)


def receive(listener: int) -> Notification | None:
    """The next pending notification, or None when its caller went away meanwhile."""
    buffer = bytearray(_NOTIF.size)
    try:
        fcntl.ioctl(listener, NOTIF_RECV, buffer, True)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.EINTR):
            return None
        raise
    nid, pid, _flags, nr, arch, _ip, *args = _NOTIF.unpack(buffer)
    return Notification(nid, pid, nr, arch, tuple(args))


def still_waiting(listener: int, notification: Notification) -> bool:
    """Whether the caller still waits (so memory read meanwhile was its own)."""
    try:
        fcntl.ioctl(listener, NOTIF_ID_VALID, struct.pack("<Q", notification.id))
    except OSError:
        return False
    return True


def respond(listener: int, notification: Notification, *, error: int = 0) -> None:
    """Answer a notification: refuse with ``error`` (an errno), or let the kernel go on."""
    flags = 0 if error else FLAG_CONTINUE
    payload = bytearray(_RESPONSE.pack(notification.id, 0, -error if error else 0, flags))
    try:
        fcntl.ioctl(listener, NOTIF_SEND, payload, True)
    except OSError as error_:
        if error_.errno != errno.ENOENT:  # the caller was killed meanwhile
            raise


def names_by_number(arch: str) -> dict[int, str]:
    return {number: name for name, number in TABLES[arch].items()}
