"""The connection: frames in (:mod:`.framing`), every request answered, pygls for the rest.

pygls dispatches well-formed messages to the registered features, but leaves some requests
without any answer: params that do not fit the method (it only logs "Invalid Params"), a body
that is not JSON, anything after ``shutdown``. It also exits 0 on ``exit`` without ``shutdown``
(the specification says 1). :class:`Connection` sits in front of it and owns those rules:

* a bad frame or invalid JSON → error -32700 (with the request's id when it can be read);
* a message that is not a JSON-RPC object → -32600; params that do not fit → -32602 saying which
  field; a request before ``initialize`` → -32002; a request after ``shutdown`` → -32600;
* ``exit`` ends the connection with exit code 0 after ``shutdown``, else 1; so does the end of
  the input stream.

Everything else goes to pygls' protocol unchanged (``structure_message`` then
``handle_message``), so the features stay plain pygls features.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import cattrs
from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from apiprof.lsp_server import framing
from apiprof.lsp_server.framing import BadFrame, Message, Skipped

log = logging.getLogger(__name__)

INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
READ_SIZE = 64 * 2**10


class Writer(Protocol):
    def write(self, data: bytes) -> Any: ...


def describe_invalid_params(exc: BaseException) -> str:
    """Which fields of the params are wrong, in the client's (camelCase) spelling."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    try:
        problems = cattrs.transform_error(cause, path="$", format_exception=_explain)
    except Exception:
        problems = [str(cause)]
    camel = [re.sub(r"_([a-z])", lambda m: m.group(1).upper(), p) for p in problems]
    return "; ".join(camel[:5]) or "params do not fit the method"


def _explain(exc: BaseException, expected: Any) -> str:
    if isinstance(exc, ValueError) and not isinstance(exc, KeyError) and str(exc):
        return str(exc)  # lsprotocol's range checks say what they want
    return cattrs.v.format_exception(exc, expected)


class Connection:
    """One client connection: reads frames until ``exit`` or the end of input."""

    def __init__(
        self,
        server: LanguageServer,
        writer: Writer,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.server = server
        self.protocol = server.protocol
        self.writer = writer
        self.protocol.set_writer(writer)  # type: ignore[arg-type]
        self.report = report or log.warning
        self.initialized = False
        self.shut_down = False
        self.exit_code: int | None = None

    async def run(self, read: Callable[[], Awaitable[bytes]]) -> int:
        parser = framing.FrameParser()
        try:
            while self.exit_code is None:
                chunk = await read()
                for event in parser.feed(chunk) if chunk else parser.close():
                    self.handle(event)
                    if self.exit_code is not None:
                        break
                if not chunk:
                    break
        except (BrokenPipeError, ConnectionError) as exc:
            log.warning("apiprof-lsp: the client went away (%s)", exc)
            return 1
        if self.exit_code is None:  # the input ended without `exit`
            return 0 if self.shut_down else 1
        return self.exit_code

    # -- events -----------------------------------------------------------------------------------
    def handle(self, event: framing.Event) -> None:
        if isinstance(event, Skipped):
            self.report(f"apiprof-lsp: skipped {event.size} bytes that were not a message frame")
        elif isinstance(event, BadFrame):
            self.report(f"apiprof-lsp: bad message frame: {event.problem}")
            self.reply_error(event.request_id, event.code, event.problem)
        elif isinstance(event, Message):
            self.dispatch(event.value)

    def dispatch(self, value: Any) -> None:
        if not isinstance(value, dict):
            kind = "a batch (a JSON array)" if isinstance(value, list) else type(value).__name__
            self.reply_error(
                None, framing.INVALID_REQUEST, f"a message must be a JSON object, not {kind}"
            )
            return
        msg_id = framing.request_id(value)
        method = value.get("method")
        is_request = "method" in value and "id" in value
        if ("id" in value and msg_id is None) or (
            method is not None and not isinstance(method, str)
        ):
            self.reply_error(None, framing.INVALID_REQUEST, "the message's id or method is invalid")
            return
        if value.get("jsonrpc") != "2.0":
            if is_request:
                self.reply_error(
                    msg_id, framing.INVALID_REQUEST, 'the message lacks "jsonrpc": "2.0"'
                )
            else:
                self.report('apiprof-lsp: ignored a message without "jsonrpc": "2.0"')
            return
        if method == types.EXIT:
            self.exit_code = 0 if self.shut_down else 1
            return
        if self.shut_down and method is not None:
            if is_request:
                self.reply_error(
                    msg_id,
                    framing.INVALID_REQUEST,
                    "the server is shut down; only exit is accepted",
                )
            return
        if not self.initialized and method is not None and method != types.INITIALIZE:
            if is_request:
                self.reply_error(
                    msg_id, SERVER_NOT_INITIALIZED, "the server is not initialized yet"
                )
            return
        if method and "params" not in value and self.protocol.get_message_type(method) is None:
            value["params"] = None  # JSON-RPC lets params be left out; pygls' type does not
        try:
            message = self.protocol.structure_message(value)
        except Exception as exc:
            problem = describe_invalid_params(exc)
            if is_request:
                self.reply_error(msg_id, INVALID_PARAMS, f"invalid params for {method}: {problem}")
            else:
                self.report(f"apiprof-lsp: ignored {method or 'a response'}: {problem}")
            return
        if method == types.INITIALIZE:
            self.initialized = True
        self.protocol.handle_message(message)
        if method == types.SHUTDOWN:
            self.shut_down = True

    def reply_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        self.writer.write(
            framing.encode(
                {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
            )
        )


async def serve_stdio(server: LanguageServer, report: Callable[[str], None] | None = None) -> int:
    """Serve on stdin/stdout. stdin is read by a daemon thread (a blocked read must not keep the
    process alive after ``exit``), in chunks: nothing is allocated ahead of the bytes."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue()
    fd = sys.stdin.buffer.fileno()

    def pump() -> None:
        while True:
            try:
                chunk = os.read(fd, READ_SIZE)
            except OSError:
                chunk = b""
            try:
                loop.call_soon_threadsafe(chunks.put_nowait, chunk)
            except RuntimeError:  # the loop is gone: the server exited
                return
            if not chunk:
                return

    threading.Thread(target=pump, name="apiprof-lsp-stdin", daemon=True).start()
    connection = Connection(server, StdoutWriter(sys.stdout.buffer), report)
    return await connection.run(chunks.get)


async def serve_tcp(
    server: LanguageServer, host: str, port: int, report: Callable[[str], None] | None = None
) -> int:
    """Serve the first client that connects to HOST:PORT, then exit (as editors expect of a
    server they started)."""
    finished: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if finished.done() or getattr(connected, "busy", False):
            writer.close()
            return
        connected.busy = True  # type: ignore[attr-defined]
        try:
            code = await Connection(server, writer, report).run(lambda: reader.read(READ_SIZE))
        finally:
            writer.close()
        if not finished.done():
            finished.set_result(code)

    listener = await asyncio.start_server(connected, host, port)
    log.info("apiprof-lsp listening on %s", [s.getsockname() for s in listener.sockets])
    async with listener:
        return await finished
