"""The aggregation service over real HTTP (uvicorn on loopback), on SQLite and on PostgreSQL:
additive, exactly once, strict, and the same on both backends."""

from __future__ import annotations

import copy
import json
import sqlite3
import threading

import pytest
from pgcluster import create_database, postgres_server  # noqa: F401  (fixture)
from servicehelp import (
    READER_TOKEN,
    UPLOAD_TOKEN,
    batch_doc,
    running_service,
    same_totals,
    sum_of,
)

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_entry_points
from apiprof.engine.collect.sync import sync
from apiprof.engine.collect.wire import MAX_APIS, slice_of
from apiprof.model.histogram import Histogram
from apiprof.model.records import EntryKind, EntryPoint, Environment, Metric


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend(request, tmp_path_factory):
    if request.param == "sqlite":
        return str(tmp_path_factory.mktemp("service") / "service.db")
    server = request.getfixturevalue("postgres_server")
    return create_database(server, "service_tests")


@pytest.fixture(scope="module")
def service(backend):
    with running_service(
        backend,
        "--max-batch-bytes",
        "200000",
        "--max-trace-bytes",
        "5000",
        "--max-scan-bytes",
        "2000000",
    ) as svc:
        yield svc


def test_health_names_the_backend(service, backend):
    status, body = service.request("GET", "/v1/health", token=None)
    assert status == 200
    assert json.loads(body)["backend"] == ("sqlite" if backend.endswith(".db") else "postgresql")


def test_batches_add_up_and_a_retry_counts_once(service):
    before = service.bucket_totals()
    first = batch_doc([("textwrap.wrap", "textwrap", (5000, 5200, 70000))])
    second = batch_doc([("textwrap.wrap", "textwrap", (5100, 900))])
    assert service.post_batch(first) == (
        200,
        {"batch_id": first["batch_id"], "status": "added", "bucket_rows": 2},
    )
    status, answer = service.post_batch(second)
    assert (status, answer["status"]) == (200, "added")
    status, answer = service.post_batch(first)  # the client never saw the first answer
    assert (status, answer["status"], answer["bucket_rows"]) == (200, "duplicate", 0)
    expected = sum_of([first, second])
    after = service.bucket_totals()
    added = {
        k: tuple(a - b for a, b in zip(v, before.get(k, (0, 0.0, 0.0)), strict=True))
        for k, v in after.items()
    }
    assert same_totals({k: v for k, v in added.items() if v[0]}, expected)


def _hostile_batches() -> list[tuple[str, bytes, int]]:
    good = batch_doc()

    def variant(change) -> bytes:
        doc = copy.deepcopy(good)
        change(doc)
        return json.dumps(doc).encode()

    def api(doc):
        return doc["apis"][0]

    return [
        ("not JSON", b"{'format': nope", 400),
        ("NaN sum", json.dumps(good).replace("9000.0,", "NaN,", 1).encode(), 400),
        ("deep nesting", b"[" * 50_000 + b"]" * 50_000, 400),
        ("unknown field", variant(lambda d: d.update(hostname="laptop-of-alice")), 422),
        ("unknown API field", variant(lambda d: api(d).update(path="/home/alice/x.py")), 422),
        ("missing field", variant(lambda d: d.pop("python")), 422),
        ("wrong format", variant(lambda d: d.update(format="apiprof-batch/9")), 422),
        ("bad batch id", variant(lambda d: d.update(batch_id="../../etc")), 422),
        ("bad python", variant(lambda d: d.update(python="3.12; DROP TABLE buckets")), 422),
        ("bad qualname", variant(lambda d: api(d).update(qualname="os.system('rm -rf /')")), 422),
        ("module not a prefix", variant(lambda d: api(d).update(module="textwrap")), 422),
        ("unknown kind", variant(lambda d: api(d).update(kind="exploit")), 422),
        (
            "unknown metric",
            variant(lambda d: api(d)["metrics"].update(evil_ns=[[1, 1, 1.0, 1.0]])),
            422,
        ),
        (
            "negative count",
            variant(lambda d: api(d)["metrics"].update(wall_ns=[[11, -3, 6000.0, 1.2e7]])),
            422,
        ),
        (
            "boolean count",
            variant(lambda d: api(d)["metrics"].update(wall_ns=[[11, True, 3000.0, 9e6]])),
            422,
        ),
        (
            "sum below bounds",
            variant(lambda d: api(d)["metrics"].update(wall_ns=[[11, 2, 100.0, 5000.0]])),
            422,
        ),
        (
            "sum above bounds",
            variant(lambda d: api(d)["metrics"].update(wall_ns=[[11, 1, 9000.0, 8.1e7]])),
            422,
        ),
        (
            "sum_sq inconsistent",
            variant(lambda d: api(d)["metrics"].update(wall_ns=[[11, 2, 6000.0, 1.0e7]])),
            422,
        ),
        (
            "repeated bucket",
            variant(lambda d: api(d)["metrics"].update(wall_ns=[[11, 1, 3000.0, 9e6]] * 2)),
            422,
        ),
        (
            "bucket out of range",
            variant(lambda d: api(d)["metrics"].update(wall_ns=[[99, 1, 3000.0, 9e6]])),
            422,
        ),
        (
            "a call longer than a week",  # well-formed, but no real measurement (model/checks)
            variant(
                lambda d: api(d)["metrics"].update(wall_ns=[[50, 1, 1.5 * 2**50, 2.25 * 2**100]])
            ),
            422,
        ),
        ("no APIs", variant(lambda d: d.update(apis=[])), 422),
        ("too many APIs", variant(lambda d: d.update(apis=[api(d)] * (MAX_APIS + 1))), 413),
    ]


@pytest.mark.parametrize("name", [case[0] for case in _hostile_batches()])
def test_a_bad_batch_gets_a_clear_4xx_and_changes_nothing(service, name):
    body, expected = next((b, s) for n, b, s in _hostile_batches() if n == name)
    before = service.aggregate()
    status, answer = service.request("POST", "/v1/batches", body)
    assert status == expected, answer
    assert json.loads(answer)["error"]
    assert service.aggregate() == before


def test_uploads_need_a_valid_token_and_json(service):
    body = json.dumps(batch_doc()).encode()
    status, answer = service.request("POST", "/v1/batches", body, token=None)
    assert status == 401 and "Bearer" in json.loads(answer)["error"]
    assert service.request("POST", "/v1/batches", body, token="guess")[0] == 401
    assert service.request("POST", "/v1/batches", body, token=READER_TOKEN)[0] == 401
    assert service.request("POST", "/v1/batches", body, content_type="text/plain")[0] == 415
    huge = b'{"pad": "' + b"x" * 300_000 + b'"}'
    status, answer = service.request("POST", "/v1/batches", huge)
    assert status == 413 and "limit" in json.loads(answer)["error"]


def test_trace_files_are_stored_once_and_readable_by_readers(service):
    path = "/v1/traces/lsp-slow-7f3a/summary.json"
    summary = b'{"event": "completion", "delay_ms": 912}'
    assert service.request("PUT", path, summary, content_type="application/json")[0] == 201
    assert service.request("PUT", path, summary, content_type="application/json")[0] == 200
    status, answer = service.request("PUT", path, b'{"other": 1}')
    assert status == 409 and "different content" in json.loads(answer)["error"]
    trace = b"SQLite format 3\x00" + bytes(range(256)) * 4
    tpath = "/v1/traces/lsp-slow-7f3a/trace.sqlite"
    assert service.request("PUT", tpath, trace, content_type="application/octet-stream")[0] == 201
    assert service.request("PUT", "/v1/traces/x/notes.txt", b"hi")[0] == 400
    assert service.request("PUT", "/v1/traces/../summary.json", b"{}")[0] in (400, 404)
    assert service.request("PUT", "/v1/traces/big/trace.sqlite", b"x" * 6000)[0] == 413
    assert service.request("PUT", path, summary, token=None)[0] == 401
    status, listing = service.request("GET", "/v1/traces", token=READER_TOKEN)
    stored = {(t["trace_id"], t["filename"]): t["size"] for t in json.loads(listing)["traces"]}
    assert stored[("lsp-slow-7f3a", "summary.json")] == len(summary)
    assert stored[("lsp-slow-7f3a", "trace.sqlite")] == len(trace)
    assert service.request("GET", tpath, token=READER_TOKEN) == (200, trace)
    assert service.request("GET", tpath, token=UPLOAD_TOKEN)[0] == 403
    assert service.request("GET", "/v1/traces", token=None)[0] == 401
    assert service.request("GET", "/v1/traces/none/trace.sqlite", token=READER_TOKEN)[0] == 404


def test_slices_partition_the_aggregate_the_same_way_on_every_backend(service):
    names = [f"pkg{i}.mod.func{i}" for i in range(40)]
    service.post_batch(batch_doc([(n, n.rsplit(".", 1)[0], (1000,)) for n in names]))
    whole = service.aggregate()
    pieces: dict[str, list] = {}
    for part in range(4):
        sliced = service.aggregate(f"?slice={part}&slices=4")
        for row in sliced["buckets"]:
            assert slice_of(row[0], 4) == part
        for table, rows in sliced.items():
            pieces.setdefault(table, [])
            pieces[table] += [r for r in rows if r not in pieces[table]]
    assert sorted(map(str, pieces["buckets"])) == sorted(map(str, whole["buckets"]))
    assert sorted(map(str, pieces["entry_points"])) == sorted(map(str, whole["entry_points"]))
    assert service.request("GET", "/v1/aggregate?slice=4&slices=4", token=None)[0] == 400


def test_concurrent_uploads_add_up_exactly(service):
    before = service.bucket_totals()
    docs = [
        batch_doc([("statistics.mean", "statistics", (i * 97 + 1000, 50_000 + i))])
        for i in range(60)
    ]
    errors: list = []

    def send(chunk):
        for doc in chunk:
            status, answer = service.post_batch(doc)
            if status != 200:
                errors.append(answer)

    threads = [threading.Thread(target=send, args=(docs[i::6],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    after = service.bucket_totals()
    expected = sum_of(docs)
    for key, (count, total, _) in expected.items():
        was = before.get(key, (0, 0.0, 0.0))
        assert after[key][0] - was[0] == count
        assert after[key][1] - was[1] == pytest.approx(total)


def test_sync_mirrors_the_aggregate_whole_then_in_rotating_slices(service, tmp_path):
    mirror = tmp_path / "mirror.db"
    report = sync(service.url, mirror, whole=True, slices=4)
    assert report.slices == [] and report.rows["buckets"] > 0

    def mirrored():
        db = open_db(mirror, readonly=True)
        try:
            return sorted(db.execute("SELECT * FROM buckets").fetchall())
        finally:
            db.conn.close()

    def served():
        return sorted(tuple(r) for r in service.aggregate()["buckets"])

    assert mirrored() == served()
    service.post_batch(
        batch_doc([(f"pkg{i}.mod.func{i}", f"pkg{i}.mod", (2000,)) for i in range(40)])
    )
    first = sync(service.url, mirror, slices=4, per_call=2)
    second = sync(service.url, mirror, slices=4, per_call=2)
    assert first.slices == [0, 1] and second.slices == [2, 3]
    assert mirrored() == served()


def _lab_database(path, qualname="colorsys.rgb_to_hsv", values=(400, 410, 900)):
    """A small scan result: one entry point with three timed calls."""
    db = open_db(path)
    module = qualname.rsplit(".", 1)[0]
    store_entry_points(db, [EntryPoint(qualname, module, module, EntryKind.FUNCTION, "(r, g, b)")])
    add_histograms(
        db,
        qualname,
        {Metric.WALL: Histogram.of(list(values))},
        scenario_id="synth:rgb",
        environment=Environment("3.12.1", "cpython", "Linux", "x86_64", "lab-cpu"),
    )
    db.conn.close()
    return path


def test_a_lab_database_is_imported_once(backend, tmp_path):
    lab = _lab_database(tmp_path / "lab.db")
    target = backend if not backend.endswith(".db") else str(tmp_path / "imported.db")
    for _ in range(2):  # a restart with the same --import adds nothing
        with running_service(target, "--import", str(lab)) as svc:
            rows = [r for r in svc.aggregate()["buckets"] if r[0] == "colorsys.rgb_to_hsv"]
            entries = [r for r in svc.aggregate()["entry_points"] if r[0] == "colorsys.rgb_to_hsv"]
    assert sum(r[6] for r in rows) == 3
    assert entries[0][4] == "(r, g, b)"


def test_serve_refuses_to_start_without_an_upload_token(tmp_path, capsys):
    from apiprof.cli import main

    assert main(["serve", "--db", str(tmp_path / "s.db")]) == 2
    assert "--token" in capsys.readouterr().err


def test_a_cluster_scan_task_is_added_once_and_a_bad_one_changes_nothing(service, tmp_path):
    def put(task_id, body, token=UPLOAD_TOKEN):
        status, answer = service.request(
            "PUT", f"/v1/scans/{task_id}", body, token=token, content_type="application/vnd.sqlite3"
        )
        return status, json.loads(answer)

    def rows():
        return [r for r in service.aggregate().get("buckets", []) if r[0] == "shlex.quote"]

    good = _lab_database(tmp_path / "task.db", "shlex.quote", (700, 720, 5000, 90))
    broken = _lab_database(tmp_path / "broken.db", "shlex.quote", (700,))
    with sqlite3.connect(broken) as conn:
        conn.execute("UPDATE buckets SET sum = sum * 1000")  # no real values give this
    conn.close()
    refusals = [
        (put("t1", good.read_bytes(), token="wrong"), 401, "token"),
        (put("t1", b"not a database" * 100), 422, "SQLite"),
        (put("t1", broken.read_bytes()), 422, "shlex.quote wall_ns: bucket"),
        (put("t1", b"x" * 2_000_001), 413, "limit"),
        (put("t.1", good.read_bytes()), 400, "task_id"),
    ]
    for (status, answer), expected, words in refusals:
        assert status == expected and words in answer["error"], answer
        assert str(tmp_path) not in answer["error"]
    assert rows() == []
    assert put("t1", good.read_bytes()) == (
        200,
        {"task_id": "t1", "status": "added", "bucket_rows": 3},
    )
    assert put("t1", good.read_bytes())[1]["status"] == "duplicate"  # a retried task
    assert sum(r[6] for r in rows()) == 4
    entries = [r for r in service.aggregate()["entry_points"] if r[0] == "shlex.quote"]
    assert entries and entries[0][4] == "(r, g, b)"
