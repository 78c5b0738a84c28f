"""Scanning on a Dask cluster: a real scheduler and two workers as processes on loopback."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import pytest
from clusterhelp import FAST, FIXTURES, stored_profile

from apiprof.db.merge import merged_tasks
from apiprof.db.schema import open_db
from apiprof.engine.cluster.coordinator import (
    scan_on_cluster,
)
from apiprof.engine.cluster.inputs import Target
from apiprof.engine.isolation.confine import strict_unavailable
from apiprof.engine.scan import scan

distributed = pytest.importorskip("distributed")

PACKAGES = ("tiny_pkg", "colorsys", "discover_pkg")


@dataclass
class DaskCluster:
    address: str
    scheduler: subprocess.Popen
    workers: list[subprocess.Popen]
    logs: BinaryIO


def _start_cluster(directory: Path, workers: int = 2) -> DaskCluster:
    directory.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FIXTURES), *sys.path])}
    scheduler_file = directory / "scheduler.json"
    logs = open(directory / "dask.log", "ab")  # noqa: SIM115 - closed by _stop_cluster
    scheduler = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dask",
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(scheduler_file),
        ],
        env=env,
        stdout=logs,
        stderr=logs,
    )
    deadline = time.monotonic() + 120
    while not scheduler_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    address = json.loads(scheduler_file.read_text())["address"]
    started = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dask",
                "worker",
                address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--local-directory",
                str(directory / f"w{i}"),
            ],
            env=env,
            stdout=logs,
            stderr=logs,
        )
        for i in range(workers)
    ]
    with distributed.Client(address, timeout=60) as client:
        client.wait_for_workers(workers, timeout=120)
    return DaskCluster(address, scheduler, started, logs)


def _stop_cluster(cluster: DaskCluster) -> None:
    for process in [*cluster.workers, cluster.scheduler]:
        if process.poll() is None:
            process.terminate()
    for process in [*cluster.workers, cluster.scheduler]:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    cluster.logs.close()


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory) -> Iterator[DaskCluster]:
    cluster = _start_cluster(tmp_path_factory.mktemp("dask"))
    yield cluster
    _stop_cluster(cluster)


@pytest.mark.slow
def test_a_cluster_scan_adds_what_local_scans_produce(dask_cluster, tmp_path):
    report = scan_on_cluster(
        [Target(p) for p in PACKAGES],
        cluster=dask_cluster.address,
        db_path=tmp_path / "cluster.db",
        options=FAST,
    )
    for package in PACKAGES:
        scan(package, db_path=tmp_path / "local.db", options=FAST)
    assert report.workers == 2 and not report.failures
    assert sorted(report.packages) == sorted(PACKAGES)
    assert all(t["status"] == "finished" for t in report.tasks), report.tasks
    assert stored_profile(tmp_path / "cluster.db") == stored_profile(tmp_path / "local.db")
    db = open_db(tmp_path / "cluster.db", readonly=True)
    try:
        assert len(merged_tasks(db)) == len(PACKAGES)
        hosts = {row[0] for row in db.execute("SELECT host FROM scans")}
        assert hosts and None not in hosts, "each scan says where it was measured"
        workers = {row[0] for row in db.execute("SELECT worker FROM merged_tasks")}
        assert all("Python" in w for w in workers)
    finally:
        db.conn.close()


@pytest.mark.slow
def test_resume_skips_tasks_already_added(dask_cluster, tmp_path):
    options = FAST
    path = tmp_path / "resumed.db"
    scan_on_cluster(
        [Target("colorsys")], cluster=dask_cluster.address, db_path=path, options=options
    )
    before = stored_profile(path)
    again = scan_on_cluster(
        [Target("colorsys")],
        cluster=dask_cluster.address,
        db_path=path,
        options=options,
        resume=True,
    )
    assert again.skipped_tasks == 1 and again.tasks == []
    assert stored_profile(path) == before


@pytest.mark.slow
def test_a_large_package_is_split_into_batches_that_add_up(dask_cluster, tmp_path):
    report = scan_on_cluster(
        [Target("tiny_pkg")],
        cluster=dask_cluster.address,
        db_path=tmp_path / "batched.db",
        options=FAST,
        batch_size=2,
    )
    summary = report.packages["tiny_pkg"]
    assert summary["tasks"] == len(report.tasks) >= 3
    scan("tiny_pkg", db_path=tmp_path / "whole.db", options=FAST)
    assert stored_profile(tmp_path / "batched.db") == stored_profile(tmp_path / "whole.db")
    assert summary["discovered"] == len(stored_profile(tmp_path / "whole.db"))
    resumed = scan_on_cluster(
        [Target("tiny_pkg")],
        cluster=dask_cluster.address,
        db_path=tmp_path / "batched.db",
        options=FAST,
        batch_size=2,
        resume=True,
    )
    assert resumed.skipped_tasks == len(report.tasks) and resumed.tasks == []
    assert stored_profile(tmp_path / "batched.db") == stored_profile(tmp_path / "whole.db")


HOSTILE_ON_THE_CLUSTER = {
    "hostile_pkg.write_outside": "tried to write {home}/written-by-hostile-pkg outside",
    "hostile_pkg.escapes.kill_the_scanner": "tried to open a handle on process",
    "hostile_pkg.escapes.forge_result_pipe": "sent measurements for json.dumps, which its task",
    "hostile_pkg.escapes.read_scanner_environ": "tried to read the environment of process",
    "hostile_pkg.escapes.setsid_child": "tried to fork the worker",
    "hostile_pkg.escapes.sqlite_attach_result_db": "tried to write {home}/hostile.db outside",
}
"""Attacks on the scanner, the files beside the package and the cluster's own database, each
with what its reason must say (tests/test_hostile.py runs every attack through the CLI)."""


def _files(home: Path) -> dict[str, tuple[str, int]]:
    return {
        str(path.relative_to(home)): (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "",
            path.lstat().st_mtime_ns,
        )
        for path in sorted(home.rglob("*"))
        if not path.name.startswith("hostile.db")
    }


@pytest.mark.slow
def test_hostile_code_on_the_cluster_is_contained_and_reported(dask_cluster, tmp_path):
    """The runner on a Dask worker is the scanner: the same sandboxed workers, the same checks."""
    if reason := strict_unavailable():
        pytest.skip(f"strict isolation is unavailable here: {reason}")
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    shutil.copytree(FIXTURES / "hostile_pkg", home / "hostile_pkg")
    (home / "CANARY").write_text("alive")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    db = home / "hostile.db"
    config = {"tcp": listener.getsockname()[1], "db": str(db), "skip": []}
    (home / "hostile_config.json").write_text(json.dumps(config))
    before = _files(home)
    options = replace(
        FAST,
        python_path=(str(home),),
        call_timeout=1.0,
        scenario_timeout=8.0,
        synthesize=False,
        bundled_scenarios=False,
        isolation="strict",
        only=tuple(HOSTILE_ON_THE_CLUSTER),
    )
    try:
        report = scan_on_cluster(
            [Target("hostile_pkg")], cluster=dask_cluster.address, db_path=db, options=options
        )
        with pytest.raises(TimeoutError):  # nothing connects to the listener outside
            listener.accept()
    finally:
        listener.close()
    (task,) = report.tasks
    assert task["status"] == "finished", task["reason"]
    assert task["isolation"].startswith("strict: user, mount, PID, network")
    summary = report.packages["hostile_pkg"]
    assert summary["discovered"] == len(HOSTILE_ON_THE_CLUSTER)
    verdicts = {item["qualname"]: item for item in summary["not_profiled"]}
    for name, reason in HOSTILE_ON_THE_CLUSTER.items():
        assert verdicts[name]["status"] == "blocked", verdicts.get(name)
        assert reason.format(home=home) in verdicts[name]["reason"], verdicts[name]
    assert _files(home) == before and (home / "CANARY").read_text() == "alive"
    stored = open_db(db, readonly=True)
    try:
        isolation = {row[0] for row in stored.execute("SELECT isolation FROM scans")}
        measured = {row[0] for row in stored.execute("SELECT DISTINCT qualname FROM buckets")}
    finally:
        stored.conn.close()
    assert isolation == {task["isolation"]}
    assert measured == set(), "blocked entry points keep nothing, forged numbers included"


@pytest.mark.slow
def test_a_worker_killed_mid_scan_loses_nothing_and_adds_nothing_twice(tmp_path):
    cluster = _start_cluster(tmp_path / "dask", workers=2)
    try:
        db = tmp_path / "killed.db"
        command = [
            sys.executable,
            "-c",
            "import sys; from apiprof.cli import scan_main; sys.exit(scan_main())",
        ]
        packages = ["textwrap", "colorsys", "tiny_pkg", "discover_pkg"]
        scan_cli = subprocess.Popen(
            [
                *command,
                *packages,
                "--cluster",
                cluster.address,
                "--db",
                str(db),
                "--quiet",
                "--repeat",
                "3",
                "--sizes",
                "4,8",
                "--summary-json",
                str(tmp_path / "s.json"),
            ],
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(FIXTURES), *sys.path])},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        killed = _kill_a_worker_running_a_scan(cluster)
        output, _ = scan_cli.communicate(timeout=600)
        assert scan_cli.returncode == 0, output.decode()
        assert killed, "no worker was seen running a scan task"
        document = json.loads((tmp_path / "s.json").read_text())
        assert sorted(p["package"] for p in document["packages"]) == sorted(packages)
        opened = open_db(db, readonly=True)
        try:
            per_package = dict(
                opened.execute("SELECT package, COUNT(*) FROM scans GROUP BY package").fetchall()
            )
            assert per_package == dict.fromkeys(packages, 1), "each package added exactly once"
            assert len(merged_tasks(opened)) == len(packages)
        finally:
            opened.conn.close()
    finally:
        _stop_cluster(cluster)


def _kill_a_worker_running_a_scan(cluster: DaskCluster) -> bool:
    """SIGKILL the first worker seen running a scan task (its tasks must go elsewhere)."""
    deadline = time.monotonic() + 180
    with distributed.Client(cluster.address, timeout=60) as client:
        while time.monotonic() < deadline:
            for worker, keys in client.processing().items():
                if any(str(key).startswith("apiprof-scan-") for key in keys):
                    pid = client.run(os.getpid, workers=[worker])[worker]
                    time.sleep(1.0)  # let its scan get going
                    os.kill(pid, signal.SIGKILL)
                    return True
            time.sleep(0.1)
    return False
