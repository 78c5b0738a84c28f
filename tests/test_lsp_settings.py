"""End to end over stdio: ``apiprof-lsp`` with a configuration wrong in every way, and one that
pulls its settings with ``workspace/configuration`` (one server per fixture, as in
``test_lsp_server.py``)."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsp_support import (
    SERVER,
    build_db,
    complete,
    hover,
    inlay_hints,
    logged,
    open_doc,
    settings,
    settle,
    wait_for_log,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


# -- a configuration wrong in every way ------------------------------------------------------------


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def broken(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("broken")
    (root / "garbage.db").write_bytes(b"this is not sqlite" * 100)
    (root / "empty.db").write_bytes(b"")
    lsp_client.root = root
    lsp_client.bad_options = {
        "databases": ["missing.db", "garbage.db", "empty.db"],
        "docsUrl": 42,
        "docsPage": "{foo}.html",
        "mode": "solo",
        "hover": {"histogram": "pie", "histogramWidth": -5},
        "inlayHints": {"minimumMicroseconds": float("nan")},
        "latency": {"slowRequestMs": 10**9},
        "bogus": 1,
    }
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            initialization_options=lsp_client.bad_options,
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_bad_options_are_logged_once_and_defaults_kept(broken: LanguageClient):
    expected = [
        "docsUrl: expected str",
        "docsPage: expected a path whose only placeholder is {qualname}",
        "mode: expected one of 'companion', 'standalone'",
        "hover.histogram: expected one of 'bars', 'sparkline'",
        "hover.histogramWidth: expected a number from 4 to 80, got -5",
        "inlayHints.minimumMicroseconds: expected a number, got NaN",
        "latency.slowRequestMs: expected a number from 1 to 600000, got 1000000000",
        "bogus: unknown option",
    ]
    for text in expected:
        assert len(logged(broken, text)) == 1, text
    settings(broken, **broken.bad_options)  # the same problems again: not repeated
    settings(broken, hover={"histogramWidth": 10**6})
    await settle(broken)
    for text in expected:
        assert len(logged(broken, text)) == 1, text
    assert (
        len(logged(broken, "hover.histogramWidth: expected a number from 4 to 80, got 1000000"))
        == 1
    )


async def test_database_problems_speak_the_editors_language(broken: LanguageClient):
    assert logged(broken, "missing.db: no such database")
    [garbage] = logged(broken, "garbage.db: not a usable SQLite database")
    assert "set the `databases` option to another file" in garbage and "--db path" not in garbage
    [empty] = logged(broken, "empty.db: the database is empty")
    assert "older than" not in empty


async def test_missing_database_answers_nothing_and_says_so_once(broken: LanguageClient):
    text = "import json\njson."
    uri = open_doc(broken, "nodb.py", text)
    assert await complete(broken, uri, 1, 5) == []
    assert await hover(broken, uri, 0, 8) is None
    assert await inlay_hints(broken, "untitled:x") == {}
    await complete(broken, uri, 1, 5)
    assert len(logged(broken, "missing.db: no such database")) == 1


async def test_unparsable_document_and_positions_past_the_end(broken: LanguageClient):
    text = "def f(:\n    json.\n)))\nclass\n"
    uri = open_doc(broken, "broken.py", text)
    assert isinstance(await complete(broken, uri, 1, 9), list)
    assert await hover(broken, uri, 0, 4) is None
    assert await complete(broken, uri, 400, 0) == []
    assert await hover(broken, uri, 400, 3) is None
    assert await inlay_hints(broken, uri) == {}


async def test_database_that_appears_later_and_configuration_change(broken: LanguageClient):
    build_db(broken.root / "missing.db")
    text = "from json import dumps\ndumps(1)\n"
    uri = open_doc(broken, "later.py", text)
    result = await broken.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(1, 1))
    )
    # this client did not ask for markdown
    assert result.contents.kind == types.MarkupKind.PlainText
    assert result.contents.value.startswith("json.dumps costs ")
    other = broken.root / "other.db"
    build_db(other)
    settings(broken, databases=[str(other)], mode="standalone", hover={"histogram": "sparkline"})
    text_after = await hover(broken, uri, 1, 1)
    assert "CPU time (sampled calls): " in text_after  # the sparkline form
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
        {"databases": ["first.db"], "mode": "standalone", "hover": {"histogram": "sparkline"}},
        section="apiprof",
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


async def test_settings_are_pulled_after_initialized_and_on_change(pulling: LanguageClient):
    assert await wait_for_log(pulling, f"apiprof databases: {pulling.root / 'first.db'}")
    uri = open_doc(pulling, "pull.py", "from json import dumps\ndumps(1)\n")
    text = await hover(pulling, uri, 1, 1)
    assert text is not None and "CPU time (sampled calls): " in text  # the pulled sparkline form
    pulling.set_configuration({"databases": ["second.db"]}, section="apiprof")
    pulling.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    assert await wait_for_log(pulling, f"apiprof databases: {pulling.root / 'second.db'}")
    assert pulling.messages == []
