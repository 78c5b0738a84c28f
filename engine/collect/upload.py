"""Sending the spool to the aggregation service: one batch per request, each exactly once.

A batch file is deleted only after the service acknowledged it (200: added, or already counted
from an earlier try), so a lost answer or a crash at any point means the batch is sent again
and the service's batch id check keeps it from counting twice. Network errors, 5xx and 429
answers are retried with exponential back-off (and jitter, so many machines do not retry in
step); a 4xx refusal moves the batch to ``rejected/`` with the service's reason. One upload
runs at a time per apiprof home (a lock file); ``python -m apiprof.engine.collect.upload`` is
the detached uploader collected programs start when the spool passes its threshold.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from apiprof.engine.collect.config import load_config
from apiprof.engine.collect.paths import Layout
from apiprof.engine.collect.slots import try_lock_file
from apiprof.engine.collect.spool import reject, remove_stale_temporaries, spooled
from apiprof.engine.collect.state import save_upload
from apiprof.errors import ApiprofError, UsageError

RETRYABLE = frozenset({408, 425, 429, 500, 502, 503, 504})


class UploadError(ApiprofError):
    """The service could not be reached or kept failing; the spool is kept for the next try."""


@dataclass
class UploadReport:
    sent: int = 0  # batches the service added
    duplicates: int = 0  # batches it had already counted (an earlier answer was lost)
    rejected: list[str] = field(default_factory=list)  # "file: reason"
    remaining: int = 0  # still in the spool
    bytes_sent: int = 0


class ServiceConnection:
    """One keep-alive HTTP(S) connection to the service, re-opened after errors."""

    def __init__(self, server: str, token: str = "", timeout: float = 30.0) -> None:
        parts = urlsplit(server.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--server must be an http:// or https:// URL, got {server!r}")
        self.parts, self.token, self.timeout = parts, token, timeout
        self.conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            cls = (
                http.client.HTTPSConnection
                if self.parts.scheme == "https"
                else http.client.HTTPConnection
            )
            self.conn = cls(self.parts.hostname or "", self.parts.port, timeout=self.timeout)
        return self.conn

    def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str = ""
    ) -> tuple[int, bytes]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if content_type:
            headers["Content-Type"] = content_type
        conn = self._connection()
        try:
            conn.request(method, self.parts.path + path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def stream(self, path: str) -> http.client.HTTPResponse:
        """A GET whose body the caller reads incrementally (and then closes)."""
        conn = self._connection()
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            conn.request("GET", self.parts.path + path, headers=headers)
            return conn.getresponse()
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _reason(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"])
    except (ValueError, KeyError, TypeError):
        return body[:200].decode("utf-8", "replace") or "no reason given"


def send_with_retries(
    send: Callable[[], tuple[int, bytes]],
    *,
    attempts: int = 5,
    backoff: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    kept: str = "the spool is kept — run `apiprof upload` again later",
) -> tuple[int, bytes]:
    """Call ``send`` until it gets an answer that is not worth retrying; raises
    :class:`UploadError` (ending with ``kept``: what is safe and what to do) after ``attempts``
    network errors or retryable answers."""
    problem = ""
    for attempt in range(attempts):
        try:
            status, body = send()
        except (OSError, http.client.HTTPException) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        else:
            if status not in RETRYABLE:
                return status, body
            problem = f"HTTP {status}: {_reason(body)}"
        if attempt + 1 < attempts:
            sleep(backoff * 2**attempt * (0.5 + random.random()))
    raise UploadError(
        f"the service did not accept the upload after {attempts} tries ({problem}); {kept}"
    )


def upload_spool(
    layout: Layout,
    server: str,
    token: str,
    *,
    attempts: int = 5,
    backoff: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> UploadReport:
    """Send every spooled batch; see the module docstring for what happens on each answer."""
    if not token:
        raise UsageError("an upload token is needed: pass --token TOKEN (or APIPROF_TOKEN)")
    lock = try_lock_file(layout.upload_lock)
    if lock is None:
        raise UploadError("another upload from this apiprof home is running; try again later")
    report = UploadReport()
    connection = ServiceConnection(server, token)
    try:
        remove_stale_temporaries(layout)
        for path in spooled(layout):
            _send_one(connection, layout, path, report, attempts, backoff, sleep)
    finally:
        connection.close()
        report.remaining = len(spooled(layout))
        save_upload(layout, {"server": server, **asdict(report)})
        os.close(lock)
    return report


def _send_one(
    connection: ServiceConnection,
    layout: Layout,
    path: Path,
    report: UploadReport,
    attempts: int,
    backoff: float,
    sleep: Callable[[float], None],
) -> None:
    try:
        body = path.read_bytes()
    except OSError:
        return  # removed meanwhile (purge)
    status, answer = send_with_retries(
        lambda: connection.request("POST", "/v1/batches", body, "application/json"),
        attempts=attempts,
        backoff=backoff,
        sleep=sleep,
    )
    if status == 200:
        try:
            outcome = json.loads(answer).get("status")
        except (ValueError, AttributeError):
            outcome = "added"
        if outcome == "duplicate":
            report.duplicates += 1
        else:
            report.sent += 1
        report.bytes_sent += len(body)
        path.unlink(missing_ok=True)
    elif status in (401, 403):
        raise UploadError(
            f"the service refused the token (HTTP {status}: {_reason(answer)}); check --token"
        )
    else:
        reason = f"HTTP {status}: {_reason(answer)}"
        reject(layout, path, reason)
        report.rejected.append(f"{path.name}: {reason}")


def send_scan(
    connection: ServiceConnection,
    task_id: str,
    database: bytes,
    *,
    attempts: int = 5,
    backoff: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Send one cluster scan task's database (``apiprof-scan --cluster --server``); returns
    ``"added"``, or ``"duplicate"`` when the service had added this task before. Raises
    :class:`UploadError` when it refuses the database or stays unreachable."""
    status, answer = send_with_retries(
        lambda: connection.request(
            "PUT", f"/v1/scans/{task_id}", database, "application/vnd.sqlite3"
        ),
        attempts=attempts,
        backoff=backoff,
        sleep=sleep,
        kept="the task is not added locally either, so `--resume` runs it again",
    )
    if status != 200:
        raise UploadError(
            f"the service refused the task's results (HTTP {status}: {_reason(answer)})"
        )
    try:
        return str(json.loads(answer)["status"])
    except (ValueError, KeyError, TypeError):
        return "added"


def main() -> int:
    """The detached uploader: settings from the apiprof home, quiet, never interactive."""
    layout = Layout.current()
    config = load_config(layout)
    if not (config.server and config.token):
        return 0
    try:
        upload_spool(layout, config.server, config.token)
    except ApiprofError:
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
