"""Linux system-call numbers for the calls the worker filter inspects, per architecture.

Facts from the kernel's tables (``arch/x86/entry/syscalls/syscall_64.tbl`` and the generic table
that arm64 uses). A call missing from an architecture's table does not exist there (arm64 has no
``open`` or ``fork``: the ``*at`` forms and ``clone`` cover them), so the filter skips it.
"""

from __future__ import annotations

import platform

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
"""The ``arch`` value the kernel reports in ``seccomp_data`` for a native call."""

X32_SYSCALL_BIT = 0x40000000
"""x86_64 calls with this bit set use the x32 ABI, whose numbers differ: refused outright."""

X86_64 = {
    "execve": 59, "execveat": 322, "fork": 57, "vfork": 58, "clone": 56, "clone3": 435,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "pidfd_send_signal": 424, "pidfd_getfd": 438, "pidfd_open": 434, "kill": 62, "tkill": 200,
    "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "mount": 165,
    "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
    "move_mount": 429, "open_tree": 428, "fsopen": 430, "fsmount": 432, "fspick": 433,
    "fsconfig": 431, "mount_setattr": 442, "bpf": 321, "perf_event_open": 298, "mq_open": 240, "keyctl": 250,
    "add_key": 248, "request_key": 249, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "reboot": 169,
    "swapon": 167, "swapoff": 168, "acct": 163, "settimeofday": 164, "clock_settime": 227,
    "adjtimex": 159, "clock_adjtime": 305, "sethostname": 170, "setdomainname": 171,
    "iopl": 172, "ioperm": 173, "quotactl": 179, "quotactl_fd": 443, "userfaultfd": 323,
    "open_by_handle_at": 304, "name_to_handle_at": 303, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "personality": 135, "syslog": 103,
    "vhangup": 153, "lookup_dcookie": 212, "kcmp": 312, "process_madvise": 440,
    "modify_ldt": 154, "uselib": 134, "seccomp": 317, "prctl": 157, "ioctl": 16, "socket": 41,
    "open": 2, "openat": 257, "openat2": 437, "creat": 85, "unlink": 87, "unlinkat": 263,
    "rmdir": 84, "rename": 82, "renameat": 264, "renameat2": 316, "mkdir": 83, "mkdirat": 258,
    "link": 86, "linkat": 265, "symlink": 88, "symlinkat": 266, "mknod": 133, "mknodat": 259,
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93,
    "lchown": 94, "fchownat": 260, "truncate": 76, "utime": 132, "utimes": 235,
    "futimesat": 261, "utimensat": 280, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190,
    "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199, "connect": 42, "bind": 49,
    "sendto": 44, "sendmsg": 46, "sendmmsg": 307,
}  # fmt: skip

AARCH64 = {
    "execve": 221, "execveat": 281, "clone": 220, "clone3": 435, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_send_signal": 424,
    "pidfd_getfd": 438, "pidfd_open": 434, "kill": 129, "tkill": 130, "tgkill": 131,
    "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "mount": 40, "umount2": 39,
    "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268, "move_mount": 429,
    "open_tree": 428, "fsopen": 430, "fsmount": 432, "fspick": 433, "fsconfig": 431,
    "mount_setattr": 442, "bpf": 280, "perf_event_open": 241, "mq_open": 180, "keyctl": 219, "add_key": 217,
    "request_key": 218, "init_module": 105, "finit_module": 273, "delete_module": 106,
    "kexec_load": 104, "kexec_file_load": 294, "reboot": 142, "swapon": 224, "swapoff": 225,
    "acct": 89, "settimeofday": 170, "clock_settime": 112, "adjtimex": 171,
    "clock_adjtime": 266, "sethostname": 161, "setdomainname": 162, "quotactl": 60,
    "quotactl_fd": 443, "userfaultfd": 282, "open_by_handle_at": 265,
    "name_to_handle_at": 264, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "personality": 92, "syslog": 116, "vhangup": 58,
    "lookup_dcookie": 18, "kcmp": 272, "process_madvise": 440, "seccomp": 277, "prctl": 167,
    "ioctl": 29, "socket": 198, "openat": 56, "openat2": 437, "unlinkat": 35, "renameat": 38,
    "renameat2": 276, "mkdirat": 34, "linkat": 37, "symlinkat": 36, "mknodat": 33,
    "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchown": 55, "fchownat": 54,
    "truncate": 45, "utimensat": 88, "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7,
    "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16, "connect": 203, "bind": 200,
    "sendto": 206, "sendmsg": 211, "sendmmsg": 269,
}  # fmt: skip

TABLES = {"x86_64": X86_64, "aarch64": AARCH64}


def native_arch() -> str | None:
    """This machine's architecture if the filter knows its system calls, else None."""
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return machine if machine in TABLES else None
