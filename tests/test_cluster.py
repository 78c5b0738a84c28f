"""Scanning on a Dask cluster: a real scheduler and two workers as processes on loopback."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import pytest

from apiprof.db.merge import MergedTask, merge_files, merge_into, merged_tasks
from apiprof.db.schema import open_db
from apiprof.engine.cluster.coordinator import (
    ClusterReport,
    add_output,
    combine_summary,
    connect,
    later_batches,
    scan_on_cluster,
)
from apiprof.engine.cluster.inputs import Target, targets_from_requirements
from apiprof.engine.cluster.tasks import ScanTask, TaskOutput
from apiprof.engine.isolation.confine import strict_unavailable
from apiprof.engine.scan import ScanOptions, scan
from apiprof.errors import UsageError

distributed = pytest.importorskip("distributed")

FIXTURES = Path(__file__).parent / "fixtures"
FAST = ScanOptions(  # a pass never hits its time cap, so run counts are the same everywhere
    repeat=3, max_seconds=10.0, sizes=(4, 8), python_path=(str(FIXTURES),), call_timeout=5.0
)
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


def _profile(path: Path) -> dict[str, tuple[str, set[tuple[str, str, int]], int]]:
    """Per entry point: coverage, the (metric, scenario, size) slices measured, and how many
    scenario runs the allocation pass counted (a count a fixed --repeat makes deterministic)."""
    db = open_db(path, readonly=True)
    try:
        out = {}
        for qualname, status in db.execute("SELECT qualname, status FROM coverage"):
            slices = {
                (metric, scenario, size)
                for metric, scenario, size in db.execute(
                    "SELECT DISTINCT metric, scenario_id, size FROM buckets WHERE qualname = ?",
                    [qualname],
                )
            }
            runs = db.execute(
                "SELECT COALESCE(SUM(count), 0) FROM buckets WHERE qualname = ? AND metric = 'calls_per_run'",
                [qualname],
            ).fetchone()[0]
            out[qualname] = (status, slices, runs)
        return out
    finally:
        db.conn.close()


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
    assert _profile(tmp_path / "cluster.db") == _profile(tmp_path / "local.db")
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
    before = _profile(path)
    again = scan_on_cluster(
        [Target("colorsys")],
        cluster=dask_cluster.address,
        db_path=path,
        options=options,
        resume=True,
    )
    assert again.skipped_tasks == 1 and again.tasks == []
    assert _profile(path) == before


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
    assert _profile(tmp_path / "batched.db") == _profile(tmp_path / "whole.db")
    assert summary["discovered"] == len(_profile(tmp_path / "whole.db"))
    resumed = scan_on_cluster(
        [Target("tiny_pkg")],
        cluster=dask_cluster.address,
        db_path=tmp_path / "batched.db",
        options=FAST,
        batch_size=2,
        resume=True,
    )
    assert resumed.skipped_tasks == len(report.tasks) and resumed.tasks == []
    assert _profile(tmp_path / "batched.db") == _profile(tmp_path / "whole.db")


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


# -- without a cluster --------------------------------------------------------------------------


def _wheel(directory: Path, name: str, version: str, body: str) -> Path:
    """A pure-Python wheel built by hand, so installing it needs no build tools or index."""
    files = {
        f"{name}/__init__.py": body,
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{name}-{version}.dist-info/top_level.txt": f"{name}\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    files[f"{name}-{version}.dist-info/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


@pytest.mark.slow
def test_requirements_are_scanned_at_the_version_asked_for_in_their_own_environment(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("APIPROF_CLUSTER_CACHE", str(tmp_path / "environments"))
    body = 'def shout(text: str) -> str:\n    """Upper case."""\n    return text.upper() + "!"\n'
    _wheel(tmp_path, "pinned_dist", "1.0", body)
    wanted = _wheel(tmp_path, "pinned_dist", "2.0", body)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"# the newer one\n{wanted}\n")
    report = scan_on_cluster(
        targets_from_requirements(requirements),
        cluster="local:1",
        db_path=tmp_path / "req.db",
        options=FAST,
    )
    assert report.packages["pinned_dist"]["version"] == "2.0"
    assert report.packages["pinned_dist"]["profiled"] == 1
    assert [t["requirement"] for t in report.tasks] == [str(wanted)]


def test_requirement_files_refuse_pip_options_with_the_line(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("six==1.16.0\n\n-r other.txt\n")
    with pytest.raises(UsageError, match=r"r\.txt:3: pip options \(-r\)"):
        targets_from_requirements(path)
    path.write_text("# nothing\n")
    with pytest.raises(UsageError, match="no requirement lines"):
        targets_from_requirements(path)


def test_large_packages_are_cut_into_batches_with_stable_ids():
    first = ScanTask("p", FAST.to_json(), batch_size=3)
    names = [f"p.f{i}" for i in range(8)]
    rest = later_batches(first, names)
    assert [t.only for t in rest] == [("p.f3", "p.f4", "p.f5"), ("p.f6", "p.f7")]
    assert [t.batch for t in rest] == [1, 2]
    assert [t.id for t in rest] == [t.id for t in later_batches(first, list(reversed(names)))]
    assert len({first.id, *(t.id for t in rest)}) == 3
    assert later_batches(first, names[:3]) == []


def test_batch_summaries_add_up_to_the_package():
    def part(discovered: int, profiled: int, slowest: float) -> dict:
        return {
            "package": "p",
            "version": "1",
            "status": "finished",
            "discovered": discovered,
            "profiled": profiled,
            "profiled_fraction": profiled / discovered,
            "resumed_skipped": 0,
            "elapsed_seconds": 1.0,
            "coverage": {"profiled": profiled, "crashed": discovered - profiled},
            "not_profiled": [{"qualname": "p.x", "status": "crashed", "reason": "r"}]
            * (discovered - profiled),
            "import_failures": {},
            "most_expensive": [{"qualname": "p.slow", "time_median_ns": slowest}],
        }

    first = part(3, 3, 10.0) | {
        "isolation": "strict: namespaces",
        "warnings": [],
        "blocked_at_import": {"p.a": ["tried to write /x outside the sandbox"]},
    }
    second = part(2, 1, 99.0) | {
        "isolation": "process: no namespaces (no bwrap)",
        "warnings": ["isolation below strict — process: no namespaces (no bwrap)"],
        "blocked_at_import": {
            "p.a": ["tried to write /x outside the sandbox", "tried to start a process"],
            "p.b": ["tried to connect to 192.0.2.1:9"],
        },
    }
    packages: dict = {}
    combine_summary(packages, first)
    combine_summary(packages, second)
    total = packages["p"]
    assert (total["discovered"], total["profiled"], total["tasks"]) == (5, 4, 2)
    assert total["coverage"] == {"profiled": 4, "crashed": 1}
    assert total["profiled_fraction"] == 0.8 and len(total["not_profiled"]) == 1
    assert total["most_expensive"][0]["time_median_ns"] == 99.0
    # every level the package's tasks got, and what each task's scan warned about or blocked
    assert total["isolation"] == "strict: namespaces | process: no namespaces (no bwrap)"
    assert total["warnings"] == second["warnings"]
    assert total["blocked_at_import"] == second["blocked_at_import"]
    assert first["blocked_at_import"]["p.a"] == ["tried to write /x outside the sandbox"]


def test_a_task_database_that_fails_the_checks_is_refused_and_the_scan_goes_on(tmp_path):
    forged = open_db(tmp_path / "forged.db")
    forged.execute(
        "INSERT INTO entry_points (qualname, package, module, kind) "
        "VALUES ('p/../../x', 'p', 'p', 'function')"
    )
    forged.conn.commit()
    forged.conn.close()
    task = ScanTask("p", FAST.to_json())
    summary = {"package": "p", "isolation": "strict: namespaces"}
    output = TaskOutput(
        task.id, "p", "finished", database=(tmp_path / "forged.db").read_bytes(), summary=summary
    )
    report = ClusterReport("local:1", 1, str(tmp_path / "all.db"))
    target = open_db(tmp_path / "all.db")
    try:
        add_output(target, task, output, report)
        assert merged_tasks(target) == {}
        assert target.execute("SELECT COUNT(*) FROM entry_points").fetchone() == (0,)
    finally:
        target.conn.close()
    (record,) = report.tasks
    assert record["status"] == "refused" and record["isolation"] == "strict: namespaces"
    assert "not a dotted Python name" in record["reason"]
    assert report.packages == {}


def test_a_task_is_merged_once_even_when_it_arrives_twice(tmp_path):
    scan("colorsys", db_path=tmp_path / "part.db", options=FAST)
    target = open_db(tmp_path / "all.db")
    try:
        task = MergedTask("t-1", "colorsys", "finished", "host (Python 3)", 1.0)
        first = merge_into(target, tmp_path / "part.db", task=task)
        second = merge_into(target, tmp_path / "part.db", task=task)
        assert first["buckets"] > 0 and second == {"skipped": 1}
        assert set(merged_tasks(target)) == {"t-1"}
    finally:
        target.conn.close()
    merge_files(tmp_path / "once.db", [tmp_path / "part.db"])
    assert _profile(tmp_path / "all.db") == _profile(tmp_path / "once.db")


def test_cluster_addresses_are_checked():
    with pytest.raises(UsageError, match="local:N with N >= 1"), connect(distributed, "local:zero"):
        pass
    with (
        pytest.raises(UsageError, match="cannot reach a Dask scheduler"),
        connect(distributed, "tcp://127.0.0.1:9"),
    ):
        pass


def test_without_dask_the_flag_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(UsageError, match=r"pip install 'apiprof\[cluster\]'"):
        scan_on_cluster([Target("json")], cluster="local:1", db_path=tmp_path / "x.db")
