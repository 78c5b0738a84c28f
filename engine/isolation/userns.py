"""A worker's own user namespace, for workers that bubblewrap started as root."""

from __future__ import annotations

import os


def enter_user_namespace() -> None:
    """Become uid/gid 65534 of a user namespace of this process's own (bubblewrap ran as root
    and ``setpriv`` already dropped to uid 65534 outside, so this grants nothing outside), then
    give up the capabilities a new user namespace hands its creator."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def check(result: int, doing: str) -> None:
        if result != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"{doing}: {os.strerror(code)}")

    uid, gid = os.getuid(), os.getgid()
    check(libc.unshare(0x10000000), "user namespaces are unavailable here: unshare(CLONE_NEWUSER)")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as stream:
            stream.write(text)
    pr_capbset_drop, pr_cap_ambient, pr_cap_ambient_clear_all = 24, 47, 4
    for capability in range(64):
        if libc.prctl(pr_capbset_drop, capability, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    check(libc.prctl(pr_cap_ambient, pr_cap_ambient_clear_all, 0, 0, 0), "clearing ambient caps")

    class Header(ctypes.Structure):
        _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))

    empty = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable, for two 32-bit halves
    check(libc.capset(ctypes.byref(Header(0x20080522, 0)), empty), "capset")
