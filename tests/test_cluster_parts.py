"""The cluster scan's parts without a running cluster: requirements and wheels, batches, merged
task databases, addresses."""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

import pytest
from clusterhelp import FAST, stored_profile

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
from apiprof.engine.scan import scan
from apiprof.errors import UsageError

distributed = pytest.importorskip("distributed")


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
    assert stored_profile(tmp_path / "all.db") == stored_profile(tmp_path / "once.db")


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
