"""End to end: the installed ``apiprof-lsp`` driven over stdio by a real LSP client (pytest-lsp).

One server per fixture, shared by the module's tests (starting jedi costs a second). The
database is built with the public store API; the expected cost hints come from the same
formatting functions the server must reuse.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import jedi
import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_batch, store_entry_points
from apiprof.format import cost_hint
from apiprof.model.histogram import Histogram
from apiprof.model.records import (
    EntryKind,
    EntryPoint,
    Environment,
    Measurement,
    Metric,
    ScanBatch,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER = shutil.which("apiprof-lsp", path=str(Path(sys.executable).parent)) or "apiprof-lsp"
ENV = Environment("3.12.0", "cpython", "Linux", "x86_64", "test cpu")

DUMPS_NS = [3000, 3100, 3300, 3200, 2900] * 20
DUMPS_BYTES = [1100, 1150, 1126] * 30


def build_db(path: Path) -> None:
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
    add_histograms(db, "json.loads", {Metric.CPU: Histogram.of([900] * 10)}, environment=ENV)
    add_histograms(
        db, "json.decoder.JSONDecoder", {Metric.CPU: Histogram.of([500] * 10)}, environment=ENV
    )
    add_histograms(db, "posixpath.join", {Metric.CPU: Histogram.of([700] * 10)}, environment=ENV)
    sized = [
        Measurement(
            "textwrap.TextWrapper.wrap", "synth", Metric.CPU, Histogram.of([100 * n] * 5), size=n
        )
        for n in (10, 100, 1000, 10000)
    ]
    store_batch(db, ScanBatch(measurements=sized), environment_id=ENV.id, package="textwrap")
    db.conn.close()


def hint_of(ns: list[float], nbytes: list[float] | None = None) -> str:
    alloc = Histogram.of(nbytes).median if nbytes else None
    return cost_hint(Histogram.of(ns).median, alloc)


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


LABEL_DETAILS = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        completion=types.CompletionClientCapabilities(
            completion_item=types.ClientCompletionItemOptions(
                label_details_support=True, documentation_format=[types.MarkupKind.Markdown]
            )
        ),
        hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
    )
)


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    build_db(root / "apiprof.db")  # the default database: <root>/apiprof.db
    lsp_client.root = root
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=LABEL_DETAILS,
            root_uri=root.as_uri(),
            initialization_options={"docsUrl": "https://docs.example.org/pkg/"},
        )
    )
    yield
    await lsp_client.shutdown_session()


def open_doc(client: LanguageClient, name: str, text: str, version: int = 1) -> str:
    uri = (client.root / name).as_uri()
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


def jedi_labels(client: LanguageClient, name: str, text: str, line: int, column: int) -> list[str]:
    script = jedi.Script(text, path=client.root / name, project=jedi.Project(client.root))
    return [c.name for c in script.complete(line + 1, column)]


async def test_module_alias_completion_has_cost_hints_and_jedi_order(client: LanguageClient):
    uri = open_doc(client, "alias.py", SOURCE)
    items = await complete(client, uri, 8, 3)  # after "js."
    assert [i.label for i in items] == jedi_labels(client, "alias.py", SOURCE, 8, 3)
    by_label = {i.label: i for i in items}
    expected = hint_of(DUMPS_NS, DUMPS_BYTES)
    assert expected.startswith("≈") and "·" in expected
    assert by_label["dumps"].label_details.description == expected
    # the client shows labelDetails; detail comes on resolve
    assert by_label["dumps"].detail is None
    assert by_label["dumps"].data == "json.dumps"
    assert by_label["loads"].label_details.description == hint_of([900] * 10)
    # callables without data are marked; modules and constants get no hint at all
    assert by_label["dump"].label_details.description == "not profiled"
    assert by_label["decoder"].label_details is None
    assert by_label["dumps"].documentation is None  # documentation comes lazily


async def test_completion_resolve_adds_markdown_documentation(client: LanguageClient):
    uri = open_doc(client, "resolve.py", SOURCE)
    item = next(i for i in await complete(client, uri, 8, 3) if i.label == "dumps")
    resolved = await client.completion_item_resolve_async(item)
    assert resolved.detail == hint_of(DUMPS_NS, DUMPS_BYTES)
    doc = resolved.documentation
    assert doc.kind == types.MarkupKind.Markdown
    assert "**json.dumps**" in doc.value and "Serialize obj to a JSON str." in doc.value
    assert (
        "[Cost profile of `json.dumps`](https://docs.example.org/pkg/apiprof/json.dumps.html)"
        in doc.value
    )


async def test_from_import_completion_maps_reexports_through_aliases(client: LanguageClient):
    text = "from json import JSOND"
    uri = open_doc(client, "reexport.py", text)
    items = await complete(client, uri, 0, len(text))
    assert [i.label for i in items] == jedi_labels(client, "reexport.py", text, 0, len(text))
    decoder = next(i for i in items if i.label == "JSONDecoder")
    assert decoder.label_details.description == hint_of([500] * 10)


async def test_hover_on_imported_function_call(client: LanguageClient):
    uri = open_doc(client, "hover.py", SOURCE)
    text = await hover(client, uri, 6, 2)  # dumps({'a': 1})
    assert text is not None
    assert "**json.dumps**" in text
    assert "| CPU time (sampled calls) |" in text and "| allocated |" in text
    assert "```text" in text and "█" in text
    assert "100 samples" in text
    assert "https://docs.example.org/pkg/apiprof/json.dumps.html" in text
    # inside the call's arguments the callee is still found
    assert "**json.dumps**" in (await hover(client, uri, 6, 9) or "")


async def test_hover_on_method_of_inferred_instance_shows_growth(client: LanguageClient):
    uri = open_doc(client, "method.py", SOURCE)
    text = await hover(client, uri, 5, 3)  # w.wrap
    assert text is not None and "**textwrap.TextWrapper.wrap**" in text
    assert "Growth: **O(n)**" in text
    # measured at n = 10 … 10000: the typical figure is the one at n=100, and says so
    assert "| | typical (median) at n=100 | p90 |" in text
    assert "| CPU time (sampled calls) | 10.0 µs | 10.0 µs |" in text


async def test_hover_follows_reexport_alias_and_skips_unknown_names(client: LanguageClient):
    uri = open_doc(client, "reexport_hover.py", SOURCE)
    text = await hover(client, uri, 7, 9)  # os.path.join
    assert text is not None and "**posixpath.join**" in text
    assert await hover(client, uri, 4, 0) is None  # the variable w: nothing profiled


async def test_did_change_is_seen_by_completion_and_hover(client: LanguageClient):
    uri = open_doc(client, "change.py", "import textwrap\n")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [
                types.TextDocumentContentChangeWholeDocument(
                    text="import textwrap\ntextwrap.dedent('x')\ntextwrap."
                )
            ],
        )
    )
    labels = [i.label for i in await complete(client, uri, 2, 9)]
    assert "dedent" in labels and "wrap" in labels
    text = await hover(client, uri, 1, 10)
    assert text is not None and "**textwrap.dedent**" in text and "not profiled" in text


async def test_changed_database_is_noticed_on_next_request(client: LanguageClient):
    text = "import textwrap\ntextwrap.indent('x', ' ')\n"
    uri = open_doc(client, "dbchange.py", text)
    assert await hover(client, uri, 1, 11) is None
    db = open_db(client.root / "apiprof.db")
    store_entry_points(
        db, [EntryPoint("textwrap.indent", "textwrap", "textwrap", EntryKind.FUNCTION)]
    )
    add_histograms(db, "textwrap.indent", {Metric.CPU: Histogram.of([4000] * 7)}, environment=ENV)
    db.conn.close()
    after = await hover(client, uri, 1, 11)
    assert after is not None and "**textwrap.indent**" in after and "7 samples" in after


async def test_latency_report_counts_requests(client: LanguageClient):
    report = await client.protocol.send_request_async("apiprof/latencyReport", None)
    by_method = {
        m.method: m for m in report.methods
    }  # pygls hands JSON objects back as attribute objects
    assert by_method["textDocument/hover"].count >= 8
    assert 0 < by_method["textDocument/hover"].p50_ms <= by_method["textDocument/hover"].p95_ms
    assert by_method["textDocument/completion"].count >= 4
    assert report.problems == []


async def test_no_error_popups(client: LanguageClient):
    assert client.messages == []


# -- robustness: a second server whose configuration is wrong in every way ------------------------


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def broken(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("broken")
    (root / "garbage.db").write_bytes(b"this is not sqlite" * 100)
    lsp_client.root = root
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            initialization_options={
                "databases": ["missing.db", "garbage.db"],
                "docsUrl": 42,
                "hover": "yes",
                "bogus": 1,
            },
        )
    )
    yield
    await lsp_client.shutdown_session()


def logged(client: LanguageClient, text: str) -> list[str]:
    return [m.message for m in client.log_messages if text in m.message]


async def test_bad_options_are_logged_and_defaults_kept(broken: LanguageClient):
    assert logged(broken, "docsUrl: expected str")
    assert logged(broken, "hover: expected an object")
    assert logged(broken, "bogus: unknown option")
    assert logged(broken, "missing.db: no such database")
    assert logged(broken, "garbage.db: not a usable SQLite database")


async def test_missing_database_still_completes_like_jedi(broken: LanguageClient):
    text = "import json\njson."
    uri = open_doc(broken, "nodb.py", text)
    items = await complete(broken, uri, 1, 5)
    assert [i.label for i in items] == jedi_labels(broken, "nodb.py", text, 1, 5)
    dumps = next(i for i in items if i.label == "dumps")
    assert dumps.detail == "not profiled" and dumps.label_details is None  # no labelDetails support
    assert await hover(broken, uri, 0, 8) is None
    await complete(broken, uri, 1, 5)
    # reported once, not per request
    assert len(logged(broken, "missing.db: no such database")) == 1


async def test_unparsable_document_and_positions_past_the_end(broken: LanguageClient):
    text = "def f(:\n    json.\n)))\nclass\n"
    uri = open_doc(broken, "broken.py", text)
    assert isinstance(await complete(broken, uri, 1, 9), list)
    assert await hover(broken, uri, 0, 4) is None
    assert await complete(broken, uri, 400, 0) == []
    assert await hover(broken, uri, 400, 3) is None
    short = open_doc(broken, "short.py", "import json\njson.")
    past_line_end = [i.label for i in await complete(broken, short, 1, 500)]
    assert "dumps" in past_line_end  # the column is clamped to the end of the line


async def test_unknown_document_is_logged_not_shown(broken: LanguageClient):
    uri = (broken.root / "never_opened.py").as_uri()
    assert await complete(broken, uri, 0, 0) == []
    assert logged(broken, "textDocument/completion failed")


async def test_database_that_appears_later_and_configuration_change(broken: LanguageClient):
    build_db(broken.root / "missing.db")
    text = "from json import dumps\ndumps(1)\n"
    uri = open_doc(broken, "later.py", text)
    result = await broken.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(1, 1))
    )
    # this client did not ask for markdown
    assert result.contents.kind == types.MarkupKind.PlainText
    assert "**json.dumps**" in result.contents.value
    other = broken.root / "other.db"
    build_db(other)
    broken.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"apiprof": {"databases": [str(other)], "hover": {"histogram": "sparkline"}}}
        )
    )
    text_after = await hover(broken, uri, 1, 1)
    assert text_after is not None and "CPU time (sampled calls): " in text_after  # sparkline form
    assert logged(broken, f"apiprof databases: {other}")


async def test_broken_server_shows_no_popups(broken: LanguageClient):
    assert broken.messages == []


# -- pull-model settings: the server asks for them with workspace/configuration -------------------


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def pulling(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("pulling")
    build_db(root / "first.db")
    build_db(root / "second.db")
    lsp_client.root = root
    lsp_client.set_configuration(
        {"databases": ["first.db"], "hover": {"histogram": "sparkline"}}, section="apiprof"
    )
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(configuration=True)
            ),
            root_uri=root.as_uri(),
        )
    )
    yield
    await lsp_client.shutdown_session()


async def wait_for_log(client: LanguageClient, text: str) -> list[str]:
    for _ in range(100):
        if found := logged(client, text):
            return found
        await __import__("asyncio").sleep(0.05)
    return []


async def test_settings_are_pulled_after_initialized_and_on_change(pulling: LanguageClient):
    assert await wait_for_log(pulling, f"apiprof databases: {pulling.root / 'first.db'}")
    uri = open_doc(pulling, "pull.py", "from json import dumps\ndumps(1)\n")
    text = await hover(pulling, uri, 1, 1)
    assert text is not None and "CPU time (sampled calls): " in text  # the pulled sparkline form
    pulling.set_configuration({"databases": ["second.db"]}, section="apiprof")
    pulling.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    assert await wait_for_log(pulling, f"apiprof databases: {pulling.root / 'second.db'}")
    assert pulling.messages == []
