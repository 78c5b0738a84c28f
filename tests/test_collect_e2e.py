"""Acceptance: real programs collected through the installed hook, uploaded to the real service
(SQLite and PostgreSQL), added exactly once — even when the service is killed mid-upload — and
nothing but the documented fields leaves the machine."""

from __future__ import annotations

import getpass
import http.client
import http.server
import json
import os
import platform
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest
from collecthelp import BUSY_PROGRAM, collect_env, make_reference, run_program, spooled_docs
from pgcluster import create_database, postgres_server  # noqa: F401  (fixture)
from servicehelp import UPLOAD_TOKEN, batch_doc, running_service, same_totals, sum_of

from apiprof.engine.collect.wire import API_FIELDS, BATCH_FIELDS

_databases = iter(range(1000))


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request, tmp_path):
    """A fresh, empty store for each test."""
    if request.param == "sqlite":
        return str(tmp_path / "service.db")
    server = request.getfixturevalue("postgres_server")
    return create_database(server, f"e2e_{next(_databases)}")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    return make_reference(tmp_path_factory.mktemp("ref") / "reference.db")


def apiprof(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "APIPROF_HOME": str(home), "APIPROF_COLLECT": "0"}
    return subprocess.run(
        [sys.executable, "-m", "apiprof.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_collected_programs_add_up_in_the_service_and_come_back(store_target, reference, tmp_path):
    home = tmp_path / "home"
    for _ in range(2):
        result = run_program(BUSY_PROGRAM, collect_env(home, reference), tmp_path, "0.8", "wait")
        assert result.returncode == 0 and result.stderr == ""
    sent = spooled_docs(home)
    assert len(sent) == 2 and all(doc["apis"] for doc in sent)
    with running_service(store_target) as service:
        upload = apiprof("upload", "--server", service.url, "--token", UPLOAD_TOKEN, home=home)
        assert upload.returncode == 0, upload.stderr
        assert "uploaded 2 batch(es)" in upload.stdout
        assert spooled_docs(home) == []
        assert same_totals(service.bucket_totals(), sum_of(sent))
        status, answer = service.post_batch(sent[0])  # a retry after a lost answer
        assert (status, answer["status"]) == (200, "duplicate")
        assert same_totals(service.bucket_totals(), sum_of(sent))
        mirror = tmp_path / "mirror.db"
        synced = apiprof("sync", "--server", service.url, "--db", str(mirror), home=home)
        assert synced.returncode == 0, synced.stderr
    shown = apiprof("show", "json.dumps", "--db", str(mirror), "--json", home=home)
    profile = json.loads(shown.stdout)
    assert [s["source"] for s in profile["scenarios"]] == ["collected"]
    expected = sum(
        count
        for (q, m, _, _), (count, _, _) in sum_of(sent).items()
        if q == "json.dumps" and m == "wall_ns"
    )
    assert profile["metrics"]["wall_ns"]["count"] == expected


class _Recorder(http.server.BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).bodies.append(body)
        answer = json.dumps({"status": "added"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def test_an_upload_carries_only_the_documented_fields(reference, tmp_path):
    secret_dir = tmp_path / "clients-acme-payroll"
    secret_dir.mkdir()
    secret_arg = "card-4111-1111-1111-1111"
    program = BUSY_PROGRAM.replace(
        'json.dumps({"a": [1, 2, 3], "b": "x" * 30})', "json.dumps({'arg': sys.argv[2]})"
    )
    home = secret_dir / "home"
    result = run_program(
        program, collect_env(home, reference), secret_dir, "0.8", secret_arg, "wait"
    )
    assert result.returncode == 0, result.stderr
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        upload = apiprof("upload", "--server", url, "--token", "t", home=home)
        assert upload.returncode == 0, upload.stderr
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert _Recorder.bodies
    for body in _Recorder.bodies:
        doc = json.loads(body)
        assert set(doc) <= BATCH_FIELDS
        for api in doc["apis"]:
            assert set(api) <= API_FIELDS
            assert set(api["metrics"]) <= {"wall_ns", "cpu_ns"}
            for rows in api["metrics"].values():
                assert all(
                    len(row) == 4 and all(isinstance(x, (int, float)) for x in row) for row in rows
                )
        text = body.decode()
        never = [str(tmp_path), "clients-acme-payroll", secret_arg, "program.py", str(Path.home())]
        never += [getpass.getuser(), socket.gethostname(), platform.processor(), platform.node()]
        leaked = [item for item in never if item and item in text]
        assert not leaked, f"the upload carries {leaked}"


def test_a_service_killed_mid_upload_loses_nothing_it_acknowledged(store_target):
    docs = [
        batch_doc([("textwrap.fill", "textwrap", (1000 + 37 * i, 9000 + i, 70_000))])
        for i in range(160)
    ]
    acknowledged: set[str] = set()
    lock = threading.Lock()

    def upload(service, chunk):
        for doc in chunk:
            try:
                status, _ = service.post_batch(doc)
            except (OSError, ValueError, http.client.HTTPException):
                return  # the service died under us (mid-answer: an incomplete read)
            if status == 200:
                with lock:
                    acknowledged.add(doc["batch_id"])

    with running_service(store_target) as service:
        threads = [threading.Thread(target=upload, args=(service, docs[i::8])) for i in range(8)]
        for t in threads:
            t.start()
        while len(acknowledged) < 40 and any(t.is_alive() for t in threads):
            threading.Event().wait(0.005)
        service.process.kill()  # SIGKILL: no shutdown, no flush, transactions cut off
        service.process.wait()
        for t in threads:
            t.join()
    acked = [d for d in docs if d["batch_id"] in acknowledged]
    assert 40 <= len(acked) < len(docs)
    with running_service(store_target) as service:
        survived = service.bucket_totals()
        for key, (count, _, _) in sum_of(acked).items():
            assert survived[key][0] >= count  # every acknowledged batch is there
        assert all(survived[k][0] <= v[0] for k, v in sum_of(docs).items() if k in survived)
        for doc in docs:  # the clients retry whatever they sent (acknowledged or not)
            status, answer = service.post_batch(doc)
            assert status == 200
            if doc["batch_id"] in acknowledged:
                assert answer["status"] == "duplicate"
        assert same_totals(service.bucket_totals(), sum_of(docs))  # nothing lost, nothing twice
