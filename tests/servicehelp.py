"""Running the real aggregation service (``apiprof serve`` under uvicorn) on loopback for tests
and benchmarks, and talking to it the way clients do."""

from __future__ import annotations

import http.client
import json
import os
import queue
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from apiprof.engine.collect.wire import FORMAT, new_batch_id

UPLOAD_TOKEN = "upload-token-for-tests"
READER_TOKEN = "reader-token-for-tests"


@dataclass
class Service:
    url: str
    process: subprocess.Popen

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        token: str | None = UPLOAD_TOKEN,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        try:
            sent = {"Content-Type": content_type, **(headers or {})}
            if token:
                sent["Authorization"] = f"Bearer {token}"
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def post_batch(
        self, doc: dict[str, Any] | bytes, token: str | None = UPLOAD_TOKEN
    ) -> tuple[int, dict]:
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        status, answer = self.request("POST", "/v1/batches", body, token=token)
        return status, json.loads(answer)

    def aggregate(self, query: str = "") -> dict[str, list[list]]:
        status, body = self.request("GET", f"/v1/aggregate{query}", token=None)
        assert status == 200, body
        tables: dict[str, list[list]] = defaultdict(list)
        lines = [json.loads(line) for line in body.splitlines()]
        assert lines[-1].get("end") is True
        for line in lines[1:-1]:
            tables[line["table"]].extend(line["rows"])
        return dict(tables)

    def bucket_totals(self) -> dict[tuple, tuple[int, float, float]]:
        """Collected bucket rows by (qualname, metric, bucket): the aggregate's sums."""
        totals: dict[tuple, list] = defaultdict(lambda: [0, 0.0, 0.0])
        for (
            q,
            metric,
            scenario,
            _size,
            _env,
            bucket,
            count,
            total,
            total_sq,
        ) in self.aggregate().get("buckets", []):
            acc = totals[(q, metric, scenario, bucket)]
            acc[0] += count
            acc[1] += total
            acc[2] += total_sq
        return {k: tuple(v) for k, v in totals.items()}


def sum_of(docs: Sequence[dict[str, Any]]) -> dict[tuple, tuple[int, float, float]]:
    """What the aggregate must hold after ``docs`` were each added once."""
    totals: dict[tuple, list] = defaultdict(lambda: [0, 0.0, 0.0])
    for doc in docs:
        for api in doc["apis"]:
            for metric, rows in api["metrics"].items():
                for bucket, count, total, total_sq in rows:
                    acc = totals[(api["qualname"], metric, "collected", bucket)]
                    acc[0] += count
                    acc[1] += total
                    acc[2] += total_sq
    return {k: tuple(v) for k, v in totals.items()}


def same_totals(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    return all(
        a[k][0] == b[k][0]
        and all(
            abs(x - y) <= 1e-9 * max(1.0, abs(x)) for x, y in zip(a[k][1:], b[k][1:], strict=True)
        )
        for k in a
    )


def batch_doc(
    apis: Sequence[tuple[str, str, Sequence[float]]] = (
        ("json.dumps", "json", (3000, 3100, 9000)),
    ),
    batch_id: str | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """A valid batch: ``apis`` are (qualname, module, wall-time values in ns)."""
    from apiprof.model.histogram import Histogram

    doc = {
        "format": FORMAT,
        "batch_id": batch_id or new_batch_id(),
        "python": "3.12.1",
        "implementation": "cpython",
        "system": "Linux",
        "machine": "x86_64",
        "machine_speed_ns": 1_500_000.0,
        "apis": [
            {
                "qualname": qualname,
                "module": module,
                "kind": "function",
                "version": "2.0.9",
                "metrics": {"wall_ns": [list(row) for row in Histogram.of(values).rows()]},
            }
            for qualname, module, values in apis
        ],
    }
    doc.update(overrides)
    return doc


def _read_lines(stream, lines: queue.Queue) -> None:
    for line in iter(stream.readline, ""):
        lines.put(line)
    lines.put(None)


@contextmanager
def running_service(
    db: str,
    *extra: str,
    tokens: Sequence[str] = (UPLOAD_TOKEN,),
    reader_tokens: Sequence[str] = (READER_TOKEN,),
    port: int = 0,
) -> Iterator[Service]:
    """``apiprof serve`` as a subprocess on 127.0.0.1 until the block ends (then stopped)."""
    args = [sys.executable, "-m", "apiprof.cli", "serve", "--db", db, "--port", str(port), *extra]
    for token in tokens:
        args += ["--token", token]
    for token in reader_tokens:
        args += ["--reader-token", token]
    process = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "APIPROF_COLLECT": "0"},
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True).start()
    try:
        output = []
        while True:
            try:
                line = lines.get(timeout=120)
            except queue.Empty:
                raise RuntimeError(f"apiprof serve did not start: {''.join(output)}") from None
            if line is None:
                raise RuntimeError(f"apiprof serve exited: {''.join(output)}")
            output.append(line)
            if "listening on" in line:
                url = line.split("listening on ", 1)[1].split()[0]
                break
        yield Service(url, process)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
