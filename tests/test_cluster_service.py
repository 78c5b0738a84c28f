"""``apiprof-scan --cluster local:1 --server URL``: a real Dask cluster's task results sent to the
real aggregation service on loopback, each task added there once, none added locally that the
service did not take."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from servicehelp import UPLOAD_TOKEN, running_service, same_totals

from apiprof.db.schema import open_db

pytest.importorskip("distributed")

FIXTURES = Path(__file__).parent / "fixtures"


def cluster_scan(tmp_path: Path, name: str, server: str, token: str, *packages: str) -> dict:
    """Run the scan command on a local Dask cluster; its exit code and --summary-json."""
    summary = tmp_path / f"{name}.json"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from apiprof.cli import scan_main; sys.exit(scan_main())",
            *packages,
            "--cluster",
            "local:1",
            "--server",
            server,
            "--token",
            token,
            "--db",
            str(tmp_path / f"{name}.db"),
            "--quiet",
            "--repeat",
            "3",
            "--sizes",
            "4,8",
            "--summary-json",
            str(summary),
        ],
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(FIXTURES), *sys.path]),
            "APIPROF_HOME": str(tmp_path / "home"),
            "APIPROF_COLLECT": "0",
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    document = json.loads(summary.read_text()) if summary.exists() else {}
    return {"code": result.returncode, "output": result.stdout + result.stderr, **document}


def local_totals(path: Path) -> dict[tuple, tuple[int, float, float]]:
    """A scan database's buckets summed the way the service's aggregate is compared."""
    db = open_db(path, readonly=True)
    try:
        totals: dict[tuple, tuple[int, float, float]] = defaultdict(lambda: (0, 0.0, 0.0))
        for q, metric, scenario, bucket, count, total, total_sq in db.execute(
            "SELECT qualname, metric, scenario_id, bucket, SUM(count), SUM(sum), SUM(sum_sq) "
            "FROM buckets GROUP BY qualname, metric, scenario_id, bucket"
        ):
            totals[(q, metric, scenario, bucket)] = (count, total, total_sq)
        return dict(totals)
    finally:
        db.conn.close()


@pytest.mark.slow
def test_cluster_results_reach_the_service_once_per_task(tmp_path):
    with running_service(str(tmp_path / "service.db")) as service:
        first = cluster_scan(tmp_path, "first", service.url, UPLOAD_TOKEN, "colorsys", "tiny_pkg")
        assert first["code"] == 0, first["output"]
        tasks = first["cluster"]["tasks"]
        assert [t["service"] for t in tasks] == ["added"] * len(tasks) and len(tasks) == 2
        sent = local_totals(tmp_path / "first.db")
        assert sent and same_totals(service.bucket_totals(), sent)

        refused = cluster_scan(tmp_path, "refused", service.url, "not-a-token", "colorsys")
        assert refused["code"] == 1
        (task,) = refused["cluster"]["tasks"]
        assert task["status"] == "failed" and "HTTP 401" in task["reason"], task
        assert local_totals(tmp_path / "refused.db") == {}  # not taken there, not added here

        again = cluster_scan(tmp_path, "again", service.url, UPLOAD_TOKEN, "colorsys")
        assert again["code"] == 0, again["output"]
        assert [t["service"] for t in again["cluster"]["tasks"]] == ["duplicate"]
        assert same_totals(service.bucket_totals(), sent)  # the same task counts once
