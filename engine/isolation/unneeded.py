"""What the report says of a system call no scan needs: the supervisor refuses every one of
them (starting a program, signalling another process, mounting, loading kernel code), and the
sentence names what the code tried, with the program's command line where there is one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiprof.engine.isolation import seccomp
from apiprof.engine.isolation.sandbox import signal_name
from apiprof.engine.isolation.seccomp import Notification

if TYPE_CHECKING:
    from apiprof.engine.isolation.supervisor import Memory

_SENTENCES = {
    "fork": "tried to start a process (fork)",
    "vfork": "tried to start a process (vfork)",
    "clone": "tried to start a process (clone)",
    "clone3": "tried to start a process (clone3)",
    "pidfd_send_signal": "tried to signal a process through a process handle (pidfd_send_signal)",
    "pidfd_getfd": "tried to take a descriptor from another process (pidfd_getfd)",
    "ptrace": "tried to trace a process (ptrace)",
    "process_vm_readv": "tried to read another process's memory (process_vm_readv)",
    "process_vm_writev": "tried to write another process's memory (process_vm_writev)",
    "seccomp": "tried to install its own system-call filter (seccomp)",
    "io_uring_setup": "tried to use io_uring, whose operations would bypass the sandbox's filter",
    "unshare": "tried to create new namespaces (unshare)",
    "setns": "tried to enter other namespaces (setns)",
    "bpf": "tried to load a BPF program (bpf)",
    "perf_event_open": (
        "tried to open a performance counter beyond its own thread (perf_event_open)"
    ),
    "mq_open": "tried to open a POSIX message queue, which would outlive it (mq_open)",
    "userfaultfd": "tried to create a userfaultfd (a common kernel-exploit tool)",
    "open_by_handle_at": "tried to open a file by handle, around the sandbox's mounts",
    "syslog": "tried to read the kernel log (syslog)",
}
_MOUNTING = {"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen"}
_MOUNTING |= {"fsmount", "fspick", "fsconfig", "mount_setattr"}
_KERNEL = {"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load"}


def never_needed(name: str, call: Notification, memory: Memory) -> str:
    """The report's sentence for a call a scan never needs (it is refused)."""
    if name in ("execve", "execveat"):
        offset = 1 if name == "execveat" else 0
        return f"tried to run a program: {_command(call, memory, offset)}"
    if name in ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        sig = call.signed(2 if name in ("tgkill", "rt_tgsigqueueinfo") else 1)
        return f"tried to send {signal_name(sig)} to process {call.signed(0)}"
    if name == "pidfd_open":
        return f"tried to open a handle on process {call.signed(0)} (pidfd_open)"
    if name == "prctl":
        if call.signed(0) == seccomp.PR_SET_SECCOMP:
            return _SENTENCES["seccomp"]
        return "tried to hide its memory from the sandbox supervisor (PR_SET_DUMPABLE)"
    if name == "ioctl":
        return "tried to inject input into a terminal (ioctl TIOCSTI)"
    if name == "socket":
        return f"tried to open a socket of family {call.signed(0)} (only Unix, IP and netlink sockets are allowed)"
    if name in _SENTENCES:
        return _SENTENCES[name]
    if name in _MOUNTING:
        return f"tried to change the mounted file systems ({name})"
    if name in _KERNEL:
        return f"tried to load or replace kernel code ({name})"
    if name in ("add_key", "request_key", "keyctl"):
        return f"tried to use the kernel keyring ({name})"
    return f"tried to make the system call {name}, which scans never need"


def _command(call: Notification, memory: Memory, offset: int) -> str:
    program = memory.string(call.args[offset])
    words = []
    argv = call.args[offset + 1]
    for i in range(16):
        pointer = memory.u64(argv + 8 * i) if argv else 0
        if not pointer:
            break
        words.append(memory.string(pointer)[:200])
    shown = " ".join(words[1:]) if words else ""
    text = f"{program} {shown}".strip()
    return text if len(text) <= 240 else text[:239] + "…"
