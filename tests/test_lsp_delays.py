"""The delay tracker in apiprof-lsp, driven by a real LSP client (pytest-lsp).

``delays.testDelayMs`` makes every completion wait 1.5 s in ``simulated_slow_request`` —
fifteen times its 100 ms threshold — while hover and resolve get thresholds no request here
comes near, so exactly one trace must appear, and its window report must name the wait.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from apiprof.tracing.window import window_report

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

SERVER = shutil.which("apiprof-lsp", path=str(Path(sys.executable).parent)) or "apiprof-lsp"
TRACE_MESSAGE = re.compile(
    r"trace (\S+) \(summary (\S+)\)\. Where the time went: (apiprof window .+)$"
)


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    lsp_client.root = root
    lsp_client.traces = root / "traces"
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            initialization_options={
                "mode": "standalone",  # our own completion items, without a database
                "delays": {
                    "outputDir": "traces",  # relative: below the workspace root
                    "testDelayMs": 1500,
                    "completionMs": 100,
                    "hoverMs": 60_000,
                    "resolveMs": 60_000,
                    "traceSeconds": 0.5,
                },
            },
        )
    )
    yield
    await lsp_client.shutdown_session()


async def wait_for_log(client: LanguageClient, pattern: re.Pattern[str], timeout: float = 60):
    for _ in range(int(timeout * 20)):
        for message in client.log_messages:
            found = pattern.search(message.message)
            if found:
                return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"no log message matching {pattern.pattern}: {client.log_messages}")


async def test_the_log_says_what_is_watched_and_where_traces_go(client: LanguageClient):
    found = await wait_for_log(client, re.compile(r"tracing the first (.+); traces go to (.+)$"))
    assert "completion > 100 ms" in found.group(1) and "hover > 60000 ms" in found.group(1)
    assert Path(found.group(2)) == client.traces


async def test_a_slow_completion_produces_one_trace_showing_where_the_time_went(
    client: LanguageClient,
):
    uri = (client.root / "slow.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri, "python", 1, "import json\njson.")
        )
    )
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 8))
    )
    assert hover is None or hover.contents  # fast enough; no database: maybe no answer
    result = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(1, 5))
    )
    items = result.items if isinstance(result, types.CompletionList) else result
    assert any(item.label == "dumps" for item in items)  # slow, but answered

    found = await wait_for_log(client, TRACE_MESSAGE)
    trace, summary = Path(found.group(1)), Path(found.group(2))
    assert trace.parent.parent == client.traces
    assert json.loads(summary.read_text())["trigger"]["event"] == "completion"
    command = re.search(r"--from (\S+) --to (\S+) --thread (\S+)$", found.group(3))
    assert command is not None and command[3] == "MainThread"  # the server's event loop
    start, end = round(float(command[1]) * 1e9), round(float(command[2]) * 1e9)
    report = window_report(trace, start, end, threads=[command[3]])
    assert report.by_exclusive[0].frame.function == "simulated_slow_request"
    assert report.by_exclusive[0].exclusive > 0.8 * report.samples
    assert [d for d in client.traces.iterdir() if d.is_dir()] == [trace.parent]
    assert client.messages == []  # no pop-ups, ever
