"""Shared parts of the language server tests: the database they read, and two kinds of client.

* pytest-lsp's :class:`LanguageClient` (a real JSON-RPC client over the server's stdio) for
  everything an editor does;
* :class:`RawServer`, bytes over a pipe, for what no well-behaved client sends: broken frames,
  invalid JSON, requests after ``shutdown``, ``exit`` without it.

The expected figures come from the same histogram and formatting code the server must reuse.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_batch, store_entry_points
from apiprof.format import format_bytes, format_ns
from apiprof.model.histogram import Histogram
from apiprof.model.records import (
    EntryKind,
    EntryPoint,
    Environment,
    Measurement,
    Metric,
    ScanBatch,
    Scenario,
    ScenarioSource,
)

SERVER = shutil.which("apiprof-lsp", path=str(Path(sys.executable).parent)) or "apiprof-lsp"
ENV = Environment("3.12.0", "cpython", "Linux", "x86_64", "test cpu")

DUMPS_NS = [3000, 3100, 3300, 3200, 2900] * 20
DUMPS_BYTES = [1100, 1150, 1126] * 30
LOADS_NS = [900] * 10
LOADS_COLLECTED_NS = [2500] * 30 + [40000] * 4  # real programs parse bigger documents
WRAP_SIZES = (10, 100, 1000, 10000)


def wrap_ns(size: int) -> list[float]:
    return [100.0 * size] * 5


def build_db(path: Path) -> None:
    """json.dumps (time + allocation), json.loads (lab and collected), a class and a re-export,
    textwrap.TextWrapper.wrap measured at four sizes (so its growth and the stated size show),
    textwrap.dedent known but not measured."""
    db = open_db(path)
    store_entry_points(
        db,
        [
            EntryPoint(
                "json.dumps",
                "json",
                "json",
                EntryKind.FUNCTION,
                "(obj, **kw)",
                "Serialize obj to a JSON str.",
            ),
            EntryPoint("json.loads", "json", "json", EntryKind.FUNCTION, "(s, **kw)"),
            EntryPoint(
                "json.decoder.JSONDecoder",
                "json",
                "json.decoder",
                EntryKind.CLASS,
                aliases=("json.JSONDecoder",),
            ),
            EntryPoint(
                "posixpath.join",
                "posixpath",
                "posixpath",
                EntryKind.FUNCTION,
                aliases=("os.path.join",),
            ),
            EntryPoint(
                "textwrap.TextWrapper.wrap",
                "textwrap",
                "textwrap",
                EntryKind.METHOD,
                "(self, text)",
                "Object for wrapping/filling text.  The public interface consists of",
            ),
            EntryPoint("textwrap.dedent", "textwrap", "textwrap", EntryKind.FUNCTION, "(text)"),
        ],
    )
    add_histograms(
        db,
        "json.dumps",
        {Metric.CPU: Histogram.of(DUMPS_NS), Metric.ALLOC_INCL: Histogram.of(DUMPS_BYTES)},
        environment=ENV,
    )
    add_histograms(db, "json.loads", {Metric.CPU: Histogram.of(LOADS_NS)}, environment=ENV)
    store_batch(
        db,
        ScanBatch(
            measurements=[
                Measurement("json.loads", "collected", Metric.CPU, Histogram.of(LOADS_COLLECTED_NS))
            ],
            scenarios=[Scenario("collected", "json.loads", ScenarioSource.COLLECTED)],
        ),
        environment_id=ENV.id,
        package="json",
    )
    add_histograms(
        db, "json.decoder.JSONDecoder", {Metric.CPU: Histogram.of([500] * 10)}, environment=ENV
    )
    add_histograms(db, "posixpath.join", {Metric.CPU: Histogram.of([700] * 10)}, environment=ENV)
    sized = [
        Measurement(
            "textwrap.TextWrapper.wrap", "synth", Metric.CPU, Histogram.of(wrap_ns(n)), size=n
        )
        for n in WRAP_SIZES
    ]
    store_batch(db, ScanBatch(measurements=sized), environment_id=ENV.id, package="textwrap")
    db.conn.close()


def typical(ns: list[float]) -> str:
    return "≈" + format_ns(Histogram.of(ns).median)


def hint_of(ns: list[float], nbytes: list[float] | None = None) -> str:
    """The completion hint: typical time · typical allocation."""
    text = typical(ns)
    return f"{text} · {format_bytes(Histogram.of(nbytes).median)}" if nbytes else text


SOURCE = """\
import json as js
import os
import textwrap
from json import dumps
w = textwrap.TextWrapper()
w.wrap('some text')
dumps({'a': 1})
os.path.join('a', 'b')
js.
"""

MARKDOWN_CLIENT = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        completion=types.CompletionClientCapabilities(
            completion_item=types.ClientCompletionItemOptions(
                label_details_support=True, documentation_format=[types.MarkupKind.Markdown]
            )
        ),
        hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
        inlay_hint=types.InlayHintClientCapabilities(
            resolve_support=types.ClientInlayHintResolveOptions(properties=["tooltip"])
        ),
    ),
    workspace=types.WorkspaceClientCapabilities(
        inlay_hint=types.InlayHintWorkspaceClientCapabilities(refresh_support=True),
        code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
    ),
)


def count_refreshes(client: LanguageClient) -> dict[str, int]:
    """Answer the server's refresh requests, counting them."""
    counts = {"inlay": 0, "lens": 0}

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_refresh(params: Any) -> None:
        counts["inlay"] += 1

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(params: Any) -> None:
        counts["lens"] += 1

    return counts


def open_doc(client: LanguageClient, name: str, text: str, version: int = 1) -> str:
    uri = name if ":" in name else (client.root / name).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )
    return uri


async def complete(
    client: LanguageClient, uri: str, line: int, character: int
) -> list[types.CompletionItem]:
    result = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(line, character))
    )
    items = result.items if isinstance(result, types.CompletionList) else (result or [])
    return sorted(items, key=lambda item: item.sort_text or "")


async def hover(client: LanguageClient, uri: str, line: int, character: int) -> str | None:
    result = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, character))
    )
    return result.contents.value if result else None


async def inlay_hint_list(
    client: LanguageClient, uri: str, first: int = 0, last: int = 10_000
) -> list[types.InlayHint]:
    """The hints on lines ``first`` to ``last``."""
    result = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            types.TextDocumentIdentifier(uri),
            types.Range(types.Position(first, 0), types.Position(last + 1, 0)),
        )
    )
    return list(result or [])


async def inlay_hints(
    client: LanguageClient, uri: str, first: int = 0, last: int = 10_000
) -> dict[tuple[int, int], str]:
    """{(line, character): label} of the hints on lines ``first`` to ``last``."""
    hints = await inlay_hint_list(client, uri, first, last)
    return {(h.position.line, h.position.character): h.label for h in hints}


def settings(client: LanguageClient, **options) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"apiprof": options})
    )


async def settle(client: LanguageClient) -> None:
    """Wait until the server has applied everything sent so far (requests are answered in order)."""
    await client.protocol.send_request_async("apiprof/latencyReport", None)


def logged(client: LanguageClient, text: str) -> list[str]:
    return [m.message for m in client.log_messages if text in m.message]


async def wait_for(predicate, timeout: float = 30.0) -> bool:
    """Poll a condition on the event loop (a hang guard, not a race: the condition is final)."""
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


async def wait_for_log(client: LanguageClient, text: str) -> list[str]:
    await wait_for(lambda: logged(client, text))
    return logged(client, text)


# -- raw pipes ------------------------------------------------------------------------------------


def frame(payload: Any) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawServer:
    """``apiprof-lsp`` on pipes, written to byte by byte and read frame by frame."""

    def __init__(self, root: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [SERVER, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=root,
        )
        self.root = root
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 1000

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while (line := stream.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line or length is None:
                self.messages.put(None)
                return
            self.messages.put(json.loads(stream.read(length)))

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def message(self, payload: dict[str, Any]) -> None:
        self.send(frame({"jsonrpc": "2.0", **payload}))

    def request(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        self.message({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def response(self, msg_id: int | str | None, timeout: float = 60.0) -> dict[str, Any]:
        """The response to ``msg_id`` (server requests and notifications are skipped)."""
        while True:
            message = self.messages.get(timeout=timeout)
            if message is None:
                raise EOFError("the server closed its output")
            if "method" not in message and message.get("id") == msg_id:
                return message

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        return self.response(self.request(method, params))

    def initialize(self, options: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.call(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": self.root.as_uri(),
                "capabilities": {},
                "initializationOptions": options or {},
            },
        )
        self.message({"method": "initialized", "params": {}})
        return result

    def exit_code(self, timeout: float = 60.0) -> int:
        return self.process.wait(timeout=timeout)

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
