"""The service's HTTP interface (Starlette): batches in, the aggregate out, trace files kept.

==========================================  ===========  ==========================================
``GET /v1/health``                          anyone       ``{"status": "ok", "backend": ...}``
``POST /v1/batches``                        uploader     one batch (:mod:`~apiprof.engine.collect.wire`)
``GET /v1/aggregate[?slice=K&slices=N]``    anyone       the aggregate as NDJSON, whole or one slice
``PUT /v1/scans/{task_id}``                 uploader     a cluster scan task's database, added once
``PUT /v1/traces/{trace_id}/{filename}``    uploader     a delay trace's ``trace.sqlite``/``summary.json``
``GET /v1/traces``                          reader       the stored trace files
``GET /v1/traces/{trace_id}/{filename}``    reader       one of them
==========================================  ===========  ==========================================

Tokens travel as ``Authorization: Bearer TOKEN``. Every refusal is a 4xx with ``{"error":
reason}`` and changes nothing; 503 means the store is unavailable and the client should retry.
Bodies are read incrementally and refused as soon as they pass the size limit.
"""

from __future__ import annotations

import hmac
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from apiprof.engine.collect.wire import AGGREGATE_FORMAT, BatchError, parse_batch
from apiprof.errors import DatabaseError
from apiprof.service.contribution import from_batch, from_scan_upload
from apiprof.service.store import TRACE_FILES, StorageUnavailable, Store, TraceConflict

KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Trace and task ids."""
MAX_SLICES = 4096


@dataclass(frozen=True)
class Settings:
    upload_tokens: tuple[str, ...]
    reader_tokens: tuple[str, ...] = ()
    max_batch_bytes: int = 1 << 20
    max_trace_bytes: int = 64 << 20
    max_scan_bytes: int = 64 << 20


class Refused(HTTPException):
    """A request the service turns down, with the status and the reason it sends back."""


def _error(status: int, reason: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=status, headers=headers)


def _token_in(request: Request, tokens: tuple[str, ...], role: str) -> None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise Refused(401, f"this needs an {role} token: send Authorization: Bearer TOKEN")
    if not any(hmac.compare_digest(token.encode(), known.encode()) for known in tokens):
        raise Refused(401 if role == "upload" else 403, f"the token is not a valid {role} token")


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise Refused(400, "Content-Length must be a number")
        if int(declared) > limit:
            raise Refused(413, f"the body is {declared} bytes; the limit is {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"the body is larger than the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(store: Store, settings: Settings) -> Starlette:
    """The ASGI application serving ``store`` under ``settings``."""

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "backend": store.backend})

    async def post_batch(request: Request) -> Response:
        _token_in(request, settings.upload_tokens, "upload")
        content_type = request.headers.get("content-type", "").split(";")[0].strip()
        if content_type != "application/json":
            raise Refused(415, "send the batch as Content-Type: application/json")
        body = await _body(request, settings.max_batch_bytes)
        try:
            batch = parse_batch(body)
        except BatchError as exc:
            raise Refused(exc.status, exc.reason) from None
        contribution = from_batch(batch)
        added = await run_in_threadpool(store.add, contribution)
        return JSONResponse(
            {
                "batch_id": batch.batch_id,
                "status": "added" if added else "duplicate",
                "bucket_rows": contribution.bucket_rows if added else 0,
            }
        )

    async def get_aggregate(request: Request) -> Response:
        part, slices = _slice_params(request)
        chunks = store.aggregate(part, slices)

        def lines() -> Iterator[bytes]:
            yield _line({"format": AGGREGATE_FORMAT, "slice": part, "slices": slices})
            total = 0
            for table, rows in chunks:
                total += len(rows)
                yield _line({"table": table, "rows": [list(r) for r in rows]})
            yield _line({"end": True, "rows": total})

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    async def put_scan(request: Request) -> Response:
        _token_in(request, settings.upload_tokens, "upload")
        task_id = _key(request, "task_id")
        data = await _body(request, settings.max_scan_bytes)
        if not data:
            raise Refused(400, "the scan database is empty")
        try:
            contribution = await run_in_threadpool(from_scan_upload, task_id, data)
        except DatabaseError as exc:
            raise Refused(422, f"the scan database cannot be added: {exc}") from None
        added = await run_in_threadpool(store.add, contribution)
        return JSONResponse(
            {
                "task_id": task_id,
                "status": "added" if added else "duplicate",
                "bucket_rows": contribution.bucket_rows if added else 0,
            }
        )

    async def put_trace(request: Request) -> Response:
        _token_in(request, settings.upload_tokens, "upload")
        trace_id, filename = _trace_key(request)
        data = await _body(request, settings.max_trace_bytes)
        if not data:
            raise Refused(400, "the trace file is empty")
        try:
            created = await run_in_threadpool(store.put_trace, trace_id, filename, data)
        except TraceConflict as exc:
            raise Refused(409, str(exc)) from None
        return JSONResponse(
            {"trace_id": trace_id, "filename": filename, "stored": created},
            status_code=201 if created else 200,
        )

    async def list_traces(request: Request) -> Response:
        _token_in(request, settings.reader_tokens, "reader")
        found = await run_in_threadpool(store.traces)
        return JSONResponse({"traces": [asdict(t) for t in found]})

    async def get_trace(request: Request) -> Response:
        _token_in(request, settings.reader_tokens, "reader")
        trace_id, filename = _trace_key(request)
        data = await run_in_threadpool(store.trace, trace_id, filename)
        if data is None:
            raise Refused(404, f"no trace file {trace_id}/{filename}")
        media = "application/json" if filename.endswith(".json") else "application/vnd.sqlite3"
        return Response(data, media_type=media)

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
        return _error(exc.status_code, str(exc.detail), headers)

    async def unavailable(request: Request, exc: Exception) -> Response:
        return _error(503, f"{exc}; retry later", {"Retry-After": "5"})

    return Starlette(
        routes=[
            Route("/v1/health", health, methods=["GET"]),
            Route("/v1/batches", post_batch, methods=["POST"]),
            Route("/v1/aggregate", get_aggregate, methods=["GET"]),
            Route("/v1/scans/{task_id}", put_scan, methods=["PUT"]),
            Route("/v1/traces", list_traces, methods=["GET"]),
            Route("/v1/traces/{trace_id}/{filename}", put_trace, methods=["PUT"]),
            Route("/v1/traces/{trace_id}/{filename}", get_trace, methods=["GET"]),
        ],
        exception_handlers={HTTPException: refused, StorageUnavailable: unavailable},
    )


def _line(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def _slice_params(request: Request) -> tuple[int | None, int]:
    query = request.query_params
    if "slice" not in query and "slices" not in query:
        return None, 1
    try:
        part, slices = int(query["slice"]), int(query["slices"])
    except (KeyError, ValueError):
        raise Refused(400, "give both slice=K and slices=N as integers") from None
    if not 1 <= slices <= MAX_SLICES or not 0 <= part < slices:
        raise Refused(400, f"need 1 ≤ slices ≤ {MAX_SLICES} and 0 ≤ slice < slices")
    return part, slices


def _key(request: Request, name: str) -> str:
    value = request.path_params[name]
    if not KEY.fullmatch(value):
        raise Refused(400, f"{name} must be 1–64 letters, digits, '-' or '_'")
    return value


def _trace_key(request: Request) -> tuple[str, str]:
    trace_id = _key(request, "trace_id")
    filename = request.path_params["filename"]
    if filename not in TRACE_FILES:
        raise Refused(400, f"filename must be one of {', '.join(TRACE_FILES)}")
    return trace_id, filename
