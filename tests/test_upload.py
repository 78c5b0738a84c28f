"""Uploads to a real HTTP server on loopback: the PUT contract, retries, refusals, and the
tracker sending its traces (again, after a restart, when they could not be sent)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from apiprof.tracing.delays import DelayTracker
from apiprof.tracing.settings import UploadSettings, read_settings
from apiprof.tracing.upload import UPLOADED, UploadError, file_url, pending_traces, upload_trace


class Collector(ThreadingHTTPServer):
    """Stores PUT bodies by path; answers the queued error statuses first."""

    daemon_threads = True

    def __init__(self, token: str | None = None) -> None:
        super().__init__(("127.0.0.1", 0), CollectorHandler)
        self.token = token
        self.stored: dict[str, bytes] = {}
        self.requests: list[tuple[str, str | None, int]] = []
        self.failures: list[tuple[int, dict[str, str]]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/collect"


class CollectorHandler(BaseHTTPRequestHandler):
    server: Collector

    def log_message(self, *args: object) -> None:
        pass

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        auth = self.headers.get("Authorization")
        with self.server.lock:
            if self.server.token and auth != f"Bearer {self.server.token}":
                status, headers = 401, {}
            elif self.server.failures:
                status, headers = self.server.failures.pop(0)
                if status == 503 and headers.get("X-Store-Anyway"):  # stored, answer lost
                    self.server.stored[self.path] = body
            else:
                status, headers = 201, {}
                self.server.stored[self.path] = body
            self.server.requests.append((self.path, auth, status))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def collector():
    server = Collector(token="s3cret")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(10)


def trace_dir(root: Path, trace_id: str = "20250101T000000Z-completion-abcd1234") -> Path:
    directory = root / trace_id
    directory.mkdir(parents=True)
    (directory / "trace.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 4)
    (directory / "summary.json").write_text(json.dumps({"trace_id": trace_id}))
    return directory


def test_put_contract_with_retries_after_503(collector, tmp_path, monkeypatch):
    monkeypatch.setenv("TRACE_TOKEN", "s3cret")
    directory = trace_dir(tmp_path)
    collector.failures = [(503, {}), (503, {"Retry-After": "0", "X-Store-Anyway": "1"})]
    waits: list[float] = []
    settings = UploadSettings(url=collector.url, token_env="TRACE_TOKEN", backoff_seconds=0.5)
    result = upload_trace(directory, settings, sleep=waits.append)
    assert result.attempts == 4  # trace.sqlite: 503, 503, 201; summary.json: 201
    assert waits == [0.5, 0.0]  # exponential back-off, then the server's Retry-After
    base = "/collect/v1/traces/20250101T000000Z-completion-abcd1234"
    assert collector.stored == {
        f"{base}/trace.sqlite": (directory / "trace.sqlite").read_bytes(),
        f"{base}/summary.json": (directory / "summary.json").read_bytes(),
    }
    assert {auth for _, auth, _ in collector.requests} == {"Bearer s3cret"}
    assert json.loads((directory / UPLOADED).read_text())["attempts"] == 4
    assert pending_traces(tmp_path) == []


def test_a_refusal_is_final(collector, tmp_path):
    directory = trace_dir(tmp_path)
    settings = UploadSettings(url=collector.url, token="wrong")
    with pytest.raises(UploadError, match="refused the file \\(401"):
        upload_trace(directory, settings, sleep=lambda s: None)
    assert len(collector.requests) == 1 and not (directory / UPLOADED).exists()
    assert pending_traces(tmp_path) == [directory]


def test_an_unreachable_service_is_retried_then_reported(tmp_path):
    directory = trace_dir(tmp_path)
    closed = Collector()
    url = closed.url
    closed.server_close()  # nothing listens on the port any more
    waits: list[float] = []
    settings = UploadSettings(url=url, retries=3, backoff_seconds=1, timeout_seconds=5)
    with pytest.raises(UploadError, match="not stored after 4 attempts"):
        upload_trace(directory, settings, sleep=waits.append)
    assert waits == [1, 2, 4]


def test_urls_are_quoted():
    assert file_url("http://h/api/", "a b/c", "summary.json") == (
        "http://h/api/v1/traces/a%20b%2Fc/summary.json"
    )


@pytest.mark.slow
def test_the_tracker_uploads_its_traces_and_resends_pending_ones(collector, tmp_path):
    pending = trace_dir(tmp_path / "delays", "20240101T000000Z-old-00000000")
    uploaded = threading.Event()
    outcomes = []

    def done(directory, outcome):
        outcomes.append((directory.name, outcome))
        if len(outcomes) == 2:
            uploaded.set()

    settings = read_settings(
        {
            "output_dir": str(tmp_path / "delays"),
            "hang_seconds": 0,
            "interval_ms": 2,
            "events": {"save": {"threshold_ms": 20, "trace_seconds": 0.1}},
            "upload": {"url": collector.url, "token": "s3cret", "backoff_seconds": 0.01},
        }
    )
    collector.failures = [(503, {})]
    with DelayTracker(settings, on_upload=done) as tracker:
        with tracker.event("save"):
            threading.Event().wait(0.4)  # 20× the threshold
        assert uploaded.wait(60), outcomes
    names = [name for name, _ in outcomes]
    assert names == [pending.name, tracker.traces[0].trace_id]
    assert all(not isinstance(outcome, Exception) for _, outcome in outcomes)
    stored = {path.rsplit("/", 2)[-2] for path in collector.stored}
    assert stored == {pending.name, tracker.traces[0].trace_id}
    assert (tracker.traces[0].directory / UPLOADED).exists()
