"""Isolation levels where the OS sandbox is missing: ``auto`` says so loudly (at the start and in
the stored provenance) and scans at the process level; ``--isolation strict`` refuses to scan.

Two ways to lose strict isolation, both real: no bubblewrap on the ``PATH``, and a container
without user namespaces (a user namespace whose ``user.max_user_namespaces`` is 0, made by the
test as root).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import apiprof
from apiprof.engine.isolation.confine import python_paths, strict_unavailable

FIXTURES = Path(__file__).parent / "fixtures"
QUICK = [
    "--scenarios", str(FIXTURES / "tiny_pkg" / "scenarios.toml"),
    "--no-docstrings", "--no-synth", "--repeat", "1", "--quiet",
]  # fmt: skip

WITHOUT_USER_NAMESPACES = """
    import os, sys
    command = sys.argv[1:]
    ready_r, ready_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        import ctypes
        if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:  # CLONE_NEWUSER
            os._exit(99)
        os.write(ready_w, b"x")
        os.read(mapped_r, 1)
        with open("/proc/sys/user/max_user_namespaces", "w") as limit:
            limit.write("0")  # this container allows no user namespaces inside it
        os.execv(command[0], command)
    os.read(ready_r, 1)
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{name}", "w") as mapping:
            mapping.write("0 0 65536")
    os.write(mapped_w, b"x")
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
"""


def scan(tmp_path: Path, isolation: str, *, env: dict[str, str], prefix: list[str]):
    db = tmp_path / f"{isolation}.db"
    summary = tmp_path / f"{isolation}.json"
    command = [*prefix, sys.executable, "-m", "apiprof.cli", "scan", "tiny_pkg", "--db", str(db)]
    command += ["--isolation", isolation, "--summary-json", str(summary), *QUICK]
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    found = json.loads(summary.read_text())["packages"][0] if summary.exists() else None
    return out, db, found


def check_fallback_and_refusal(tmp_path: Path, why: str, **how) -> None:
    out, db, summary = scan(tmp_path, "auto", **how)
    assert out.returncode == 0, out.stderr[-2000:]
    warning = next(line for line in out.stderr.splitlines() if "WARNING" in line)
    assert warning.startswith("apiprof-scan: WARNING: isolation below strict — process:")
    assert why in warning
    assert summary["isolation"].startswith("process:") and why in summary["isolation"]
    assert any(w.startswith("isolation below strict") for w in summary["warnings"])
    stored = sqlite3.connect(db).execute("SELECT isolation FROM scans").fetchall()
    assert stored == [(summary["isolation"],)]
    assert summary["status"] == "finished" and summary["profiled"] >= 1

    out, db, summary = scan(tmp_path, "strict", **how)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "--isolation strict cannot be met here" in out.stderr and why in out.stderr
    assert "Traceback" not in out.stderr and summary is None
    assert not db.exists()  # nothing was scanned: the database it created is not left behind


def test_without_bubblewrap_the_scan_says_so_and_strict_refuses(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(FIXTURES), "PATH": str(tmp_path / "empty-bin")}
    check_fallback_and_refusal(tmp_path, "bubblewrap is not installed", env=env, prefix=[])


@pytest.mark.skipif(os.geteuid() != 0, reason="making the user namespace needs root")
def test_in_a_container_without_user_namespaces_the_scan_says_so_and_strict_refuses(tmp_path):
    if strict_unavailable():
        pytest.skip(f"no strict isolation to lose here: {strict_unavailable()}")
    env = {**os.environ, "PYTHONPATH": str(FIXTURES)}
    prefix = [sys.executable, "-c", textwrap.dedent(WITHOUT_USER_NAMESPACES)]
    check_fallback_and_refusal(
        tmp_path, "user namespaces are unavailable here", env=env, prefix=prefix
    )


def test_the_folder_a_scan_starts_in_is_not_shown_to_workers(tmp_path, monkeypatch):
    """``python -m`` puts the current folder first on the scanner's import path; a worker
    starts in its sandbox, so that folder is not bound into it (a root scanner's private
    folder, such as a cluster task's scratch folder, does not cost strict isolation either)."""
    if strict_unavailable():
        pytest.skip(f"strict isolation is unavailable here: {strict_unavailable()}")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "secret.txt").write_text("not for packages")
    monkeypatch.setattr(sys, "path", [str(private), *sys.path])
    bound = python_paths()
    assert str(private) not in bound
    root = Path(apiprof.__file__).resolve().parent
    if Path(apiprof.__file__).parent != root:  # imported through an editable checkout's link
        monkeypatch.setattr(sys, "path", [str(root.parent), *sys.path])  # where pytest puts it
        around = python_paths([str(root.parent)])
        assert not [p for p in around if root != Path(p) and root.is_relative_to(p)], around
    found = strict_scan(tmp_path, "tiny_pkg", *QUICK, cwd=private)
    assert found["profiled"] >= 1


def strict_scan(
    tmp_path: Path, package: str, *options: str, cwd: Path | None = None, path: str = str(FIXTURES)
) -> dict:
    """Scan ``package`` at the strict level (``path`` as ``PYTHONPATH``) and return its summary."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"PYTHONPATH": path} if path else {})
    db, summary = tmp_path / f"{package}.db", tmp_path / f"{package}.json"
    command = [sys.executable, "-m", "apiprof.cli", "scan", package, "--db", str(db)]
    command += ["--isolation", "strict", "--summary-json", str(summary), *options]
    out = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(summary.read_text())["packages"][0]
    assert found["isolation"].startswith("strict:")
    return found


def test_async_entry_points_run_on_the_workers_event_loop_under_strict_isolation(tmp_path):
    """A coroutine is awaited on the worker's own event loop, whose creation opens a local
    socket pair (its wake-up channel) and whose tasks write to it: under bubblewrap and the
    system-call filter that is allowed, while the network rule stays as it is."""
    if strict_unavailable():
        pytest.skip(f"strict isolation is unavailable here: {strict_unavailable()}")
    found = strict_scan(tmp_path, "async_pkg", "--sizes", "1,10", "--repeat", "1", "--quiet")
    assert found["profiled"] == found["discovered"] == 3, found["not_profiled"]


def test_a_package_in_the_folder_a_scan_starts_in_is_scanned_from_there(tmp_path):
    """A project's own package, not installed: the scan imports it from the current folder, as
    ``python -m`` and pytest would, and that folder is bound into the workers (still strict)."""
    if strict_unavailable():
        pytest.skip(f"strict isolation is unavailable here: {strict_unavailable()}")
    project = tmp_path / "project"
    project.mkdir(mode=0o755)
    shutil.copytree(FIXTURES / "tiny_pkg", project / "tiny_pkg")
    found = strict_scan(tmp_path, "tiny_pkg", *QUICK, cwd=project, path="")
    assert found["profiled"] >= 1


@pytest.mark.parametrize("isolation", ["strict", "process"])
def test_process_shared_locks_and_a_main_reading_its_command_line_are_measured(tmp_path, isolation):
    """A ``multiprocessing`` lock makes a named semaphore in ``/dev/shm`` (the worker's own
    under bubblewrap; made and unlinked by the worker itself at the process level), and a
    ``main()`` sees a command line without the worker's own options."""
    if isolation == "strict" and strict_unavailable():
        pytest.skip(f"strict isolation is unavailable here: {strict_unavailable()}")
    env = {**os.environ, "PYTHONPATH": str(FIXTURES)}
    db, summary = tmp_path / "locks.db", tmp_path / "locks.json"
    command = [sys.executable, "-m", "apiprof.cli", "scan", "locks_pkg", "--db", str(db)]
    command += ["--isolation", isolation, "--summary-json", str(summary), "--quiet"]
    command += ["--sizes", "1,10", "--repeat", "1"]
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(summary.read_text())["packages"][0]
    assert found["isolation"].startswith(f"{isolation}:")
    profiled = found["profiled"]
    assert profiled == found["discovered"] == 3, found["not_profiled"]  # and the exception
