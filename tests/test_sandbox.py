"""The sandbox guard: policy decisions (pure) and the real hook in a throwaway interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from apiprof.engine.isolation.sandbox import Guard, SandboxViolation, is_loopback, resolve_path


@pytest.fixture
def guard(tmp_path):
    box = tmp_path / "box"
    box.mkdir()
    return Guard(box)


def refused(guard: Guard, event: str, args: tuple) -> str | None:
    """The recorded reason if ``guard`` refuses the event, else None."""
    try:
        guard(event, args)
    except SandboxViolation:
        return guard.take_events()[-1].reason
    assert guard.take_events() == []
    return None


def test_writes_inside_the_sandbox_are_allowed_and_outside_refused(guard, tmp_path):
    inside = str(tmp_path / "box" / "out.txt")
    outside = str(tmp_path / "canary")
    assert refused(guard, "open", (inside, "w", os.O_WRONLY | os.O_CREAT)) is None
    assert refused(guard, "open", (outside, "r", os.O_RDONLY)) is None  # reading is fine
    assert (
        refused(guard, "open", (outside, "a", os.O_APPEND))
        == f"tried to write {outside} outside the sandbox"
    )
    assert refused(guard, "open", (outside, None, os.O_RDWR)) is not None  # os.open form
    assert refused(guard, "open", ("/dev/null", "w", os.O_WRONLY)) is None


def test_deletes_renames_and_escapes_through_dotdot_are_refused(guard, tmp_path):
    canary = str(tmp_path / "canary")
    assert (
        refused(guard, "os.remove", (canary, -1)) == f"tried to delete {canary} outside the sandbox"
    )
    assert refused(guard, "os.remove", (str(tmp_path / "box" / ".." / "canary"), -1)) is not None
    assert refused(guard, "os.rename", (str(tmp_path / "box" / "a"), canary, -1, -1)) is not None
    assert refused(guard, "shutil.rmtree", (str(tmp_path), None)) is not None
    assert refused(guard, "os.remove", (str(tmp_path / "box" / "a"), -1)) is None


def test_symlinks_out_of_the_sandbox_do_not_count_as_inside(guard, tmp_path):
    (tmp_path / "box" / "link").symlink_to(tmp_path)
    assert (
        refused(guard, "open", (str(tmp_path / "box" / "link" / "canary"), "w", os.O_WRONLY))
        is not None
    )


def test_relative_paths_with_dir_fd_resolve_against_the_directory(guard, tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert resolve_path("canary", fd) == str(tmp_path / "canary")
        assert refused(guard, "os.remove", ("canary", fd)) is not None
    finally:
        os.close(fd)


def test_network_beyond_loopback_and_processes_are_refused(guard):
    import socket

    with socket.socket() as sock:
        assert refused(guard, "socket.connect", (sock, ("127.0.0.1", 80))) is None
        assert "192.0.2.1:9" in refused(guard, "socket.connect", (sock, ("192.0.2.1", 9)))
    assert refused(guard, "socket.getaddrinfo", ("localhost", 80, 0, 0, 0)) is None
    assert "example.org" in refused(guard, "socket.getaddrinfo", ("example.org", 80, 0, 0, 0))
    assert (
        refused(guard, "subprocess.Popen", ("ls", ["ls", "-l"], None, None))
        == "tried to spawn a process: ls -l"
    )
    assert refused(guard, "os.system", ("rm -rf /",)) is not None
    assert refused(guard, "os.fork", ()) is not None
    assert refused(guard, "os.kill", (1, 9)) is not None
    # a crash of its own is the worker's business
    assert refused(guard, "os.kill", (os.getpid(), 11)) is None
    # `import ctypes` opens the interpreter itself
    assert refused(guard, "ctypes.dlopen", (None,)) is None
    assert refused(guard, "ctypes.dlopen", ("libc.so.6",)) is not None
    assert refused(guard, "resource.setrlimit", (9, (1, 1))) is not None


def test_loopback_detection():
    assert all(map(is_loopback, ["localhost", "127.0.0.1", "127.8.0.1", "::1", b"localhost"]))
    assert not any(map(is_loopback, ["example.org", "10.0.0.1", "0.0.0.0", 42]))


def test_installed_hook_stops_real_operations_and_keeps_the_canary(tmp_path):
    """The real hook in a fresh interpreter: the operations fail, the canary survives, the
    refusals are recorded even when the code swallows the exception."""
    box = tmp_path / "box"
    box.mkdir()
    canary = tmp_path / "canary"
    canary.write_text("alive")
    script = textwrap.dedent(
        f"""
        import json, os, socket, subprocess
        from apiprof.engine.isolation.sandbox import install_guard
        guard = install_guard({str(box)!r})
        outcomes = {{}}
        def attempt(name, fn):
            try:
                fn()
                outcomes[name] = "ok"
            except PermissionError as exc:
                outcomes[name] = "refused"
        attempt("delete", lambda: os.remove({str(canary)!r}))
        attempt("spawn", lambda: subprocess.run(["true"]))
        attempt("connect", lambda: socket.create_connection(("192.0.2.1", 9), timeout=1))
        attempt("write_inside", lambda: open("inside.txt", "w").write("x"))
        attempt("read_outside", lambda: open({str(canary)!r}).read())
        try:
            os.remove({str(canary)!r})
        except OSError:
            pass  # swallowed: the record must still exist
        outcomes["recorded"] = [e.reason for e in guard.take_events()]
        print(json.dumps(outcomes))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=box,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    outcomes = json.loads(out.stdout)
    assert outcomes["delete"] == outcomes["spawn"] == outcomes["connect"] == "refused"
    assert outcomes["write_inside"] == outcomes["read_outside"] == "ok"
    assert len(outcomes["recorded"]) == 4
    assert outcomes["recorded"][-1] == f"tried to delete {canary} outside the sandbox"
    assert canary.read_text() == "alive"
    assert (box / "inside.txt").read_text() == "x"


# -- the reporter: report-only mode, the second pass's doors, and whose code it was ------------------


def test_report_only_mode_records_and_sends_each_attempt_without_refusing(tmp_path):
    sent: list = []
    box = tmp_path / "box"
    box.mkdir()
    reporter = Guard(box, refuse=False, report=sent.append)
    reporter("os.remove", (str(tmp_path / "canary"), -1))  # no exception: the OS refuses
    reason = f"tried to delete {tmp_path / 'canary'} outside the sandbox"
    assert [a.reason for a in sent] == [reason]
    assert [e.reason for e in reporter.take_events()] == [reason]


def test_host_names_that_start_like_loopback_addresses_are_looked_up(guard):
    assert not is_loopback("127.0.0.1.attacker.invalid")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("LOCALHOST")
    assert "127.0.0.1.attacker.invalid" in refused(
        guard, "socket.getaddrinfo", ("127.0.0.1.attacker.invalid", 80, 0, 0, 0)
    )


def test_the_second_passs_doors_are_watched(guard, tmp_path):
    import socket

    canary = tmp_path / "canary"
    canary.write_text("alive")
    folder = os.open(tmp_path, os.O_RDONLY)
    readonly = os.open(canary, os.O_RDONLY)
    try:
        inside = str(tmp_path / "box" / "x")
        assert "create a link to" in refused(guard, "os.link", (str(canary), inside, -1, -1))
        assert "change timestamps of" in refused(guard, "os.utime", ("canary", None, None, folder))
        assert "create a symlink at" in refused(guard, "os.symlink", ("/etc", "evil", folder))
        assert f"change permissions of {canary}" in refused(
            guard, "os.chmod", (readonly, 0o777, -1)
        )
    finally:
        os.close(folder)
        os.close(readonly)
    uri = f"file:{tmp_path / 'new.db'}?mode=rwc"
    assert "open a database at" in refused(guard, "sqlite3.connect", (uri,))
    assert refused(guard, "sqlite3.connect", (f"file:{canary}?mode=ro",)) is None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        assert "192.0.2.1:9" in refused(guard, "socket.sendmsg", (sock, ("192.0.2.1", 9)))
        assert refused(guard, "socket.sendmsg", (sock, None)) is None  # connected: no address
    assert "the environment of process 1" in refused(guard, "open", ("/proc/1/environ", "r", 0))
    assert refused(guard, "open", (f"/proc/{os.getpid()}/environ", "r", 0)) is None


def test_deleting_a_link_is_about_the_link_not_where_it_points(guard, tmp_path):
    link = tmp_path / "box" / "link"
    link.symlink_to(tmp_path / "canary")
    assert refused(guard, "os.remove", (str(link), -1)) is None
    assert refused(guard, "open", (str(link), "w", os.O_WRONLY)) is not None


def test_attempts_are_blamed_on_the_import_the_entry_point_or_a_thread(tmp_path):
    """The real hook: an import's top-level code, a thread it starts, the entry point's own
    code and a thread the entry point starts, each blamed correctly."""
    box = tmp_path / "box"
    box.mkdir()
    package = tmp_path / "blamed"
    package.mkdir()
    outside = tmp_path / "outside"
    (package / "__init__.py").write_text(
        textwrap.dedent(
            f"""
            import threading
            def _write(path):
                try:
                    open(path, "w")
                except OSError:
                    pass
            _write({str(outside / "import")!r})
            woken = threading.Event()
            done = threading.Event()
            def _later():
                woken.wait()
                _write({str(outside / "import-thread")!r})
                done.set()
            threading.Thread(target=_later, daemon=True).start()
            """
        )
    )
    script = textwrap.dedent(
        f"""
        import json, sys, threading
        sys.path.insert(0, {str(tmp_path)!r})
        from apiprof.engine.isolation.sandbox import install_guard
        sent = []
        guard = install_guard({str(box)!r}, refuse=False, report=sent.append)
        import blamed
        blamed._write({str(outside / "entry")!r})
        exec(compile("blamed._write({str(outside / "exec")!r})", "<scenario>", "exec"))
        thread = threading.Thread(target=blamed._write, args=({str(outside / "entry-thread")!r},))
        thread.start(); thread.join()
        blamed.woken.set(); blamed.done.wait(10)
        print(json.dumps([[a.reason.split("/")[-1].split()[0], a.blame, a.module] for a in sent]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [
        ["import", "import", "blamed"],
        ["entry", "entry", ""],
        ["exec", "entry", ""],
        ["entry-thread", "thread", ""],
        ["import-thread", "thread", "blamed"],
    ]
