"""End to end: the installed ``apiprof-lsp`` driven over stdio by a real LSP client (pytest-lsp).

One server per fixture, shared by the module's tests (starting jedi costs a second): the default
*companion* (beside another Python server) and a *standalone* one. Wrong and pulled settings:
``test_lsp_settings.py``.
"""

from __future__ import annotations

import asyncio

import jedi
import pytest
import pytest_lsp
from lsp_support import (
    DUMPS_BYTES,
    DUMPS_NS,
    ENV,
    LOADS_COLLECTED_NS,
    LOADS_NS,
    MARKDOWN_CLIENT,
    SERVER,
    SOURCE,
    build_db,
    complete,
    count_refreshes,
    hint_of,
    hover,
    inlay_hint_list,
    inlay_hints,
    logged,
    open_doc,
    settings,
    settle,
    typical,
    wait_for,
    wrap_ns,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_entry_points
from apiprof.format import format_ns
from apiprof.model.histogram import Histogram
from apiprof.model.records import EntryKind, EntryPoint, Metric

pytestmark = pytest.mark.asyncio(loop_scope="module")

DOCS = "https://docs.example.org/pkg/"


def jedi_completions(client: LanguageClient, name: str, text: str, line: int, column: int):
    script = jedi.Script(text, path=client.root / name, project=jedi.Project(client.root))
    return script.complete(line + 1, column)


# -- the companion (the default) ----------------------------------------------------------------


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    build_db(root / "apiprof.db")  # the default database: <root>/apiprof.db
    lsp_client.root = root
    lsp_client.refreshes = count_refreshes(lsp_client)
    lsp_client.result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=MARKDOWN_CLIENT,
            root_uri=root.as_uri(),
            initialization_options={"docsUrl": DOCS},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_companion_completes_on_dot_only(client: LanguageClient):
    options = client.result.capabilities.completion_provider
    assert list(options.trigger_characters) == ["."] and options.resolve_provider
    assert client.result.capabilities.inlay_hint_provider is not None


async def test_companion_completion_has_only_costed_items_shaped_like_the_other_server(
    client: LanguageClient,
):
    uri = open_doc(client, "alias.py", SOURCE)
    items = await complete(client, uri, 8, 3)  # after "js."
    assert {i.label for i in items} == {"dumps", "loads", "JSONDecoder"}
    by_label = {i.label: i for i in items}
    assert by_label["dumps"].label_details.description == hint_of(DUMPS_NS, DUMPS_BYTES)
    assert by_label["loads"].label_details.description == typical(LOADS_NS)  # the lab figure
    # what jedi-language-server answers for the same names, so merging clients fold the twins
    found = jedi_completions(client, "alias.py", SOURCE, 8, 3)
    for index, completion in enumerate(found):
        if completion.name in by_label:
            item = by_label[completion.name]
            assert item.filter_text == item.insert_text == completion.name
            assert item.sort_text == "v" + str(index).zfill(len(str(len(found))))
    assert by_label["dumps"].detail is None and by_label["dumps"].data == "json.dumps"
    assert all("not profiled" not in (i.label_details.description or "") for i in items)


async def test_completion_after_from_import_and_nothing_where_no_costs_are(client: LanguageClient):
    text = "from json import "
    uri = open_doc(client, "reexport.py", text)
    labels = {i.label for i in await complete(client, uri, 0, len(text))}
    assert labels == {"dumps", "loads", "JSONDecoder"}
    # after `x = ` jedi offers 160 builtins and keywords, none profiled: nothing from us
    blank = open_doc(client, "blank.py", "x = \n# a comment ")
    assert await complete(client, blank, 0, 4) == []
    assert await complete(client, blank, 1, 12) == []


async def test_cost_hints_off_leaves_a_companion_nothing_to_complete(client: LanguageClient):
    uri = open_doc(client, "nohints.py", SOURCE)
    settings(client, docsUrl=DOCS, completion={"costHints": False})
    assert await complete(client, uri, 8, 3) == []
    settings(client, docsUrl=DOCS)
    assert len(await complete(client, uri, 8, 3)) == 3


async def test_completion_resolve_adds_the_full_profile(client: LanguageClient):
    uri = open_doc(client, "resolve.py", SOURCE)
    item = next(i for i in await complete(client, uri, 8, 3) if i.label == "dumps")
    resolved = await client.completion_item_resolve_async(item)
    assert resolved.detail == hint_of(DUMPS_NS, DUMPS_BYTES)
    doc = resolved.documentation
    assert doc.kind == types.MarkupKind.Markdown
    assert doc.value.startswith("`json.dumps(obj, **kw)`")
    assert "Serialize obj to a JSON str." in doc.value
    assert "```text\nCPU time (sampled calls) per call\n" in doc.value and "█" in doc.value
    assert f"[Full profile (100 samples)](<{DOCS}apiprof/json.dumps.html>)" in doc.value


async def test_hover_is_the_cost_section_only(client: LanguageClient):
    uri = open_doc(client, "hover.py", SOURCE)
    text = await hover(client, uri, 6, 2)  # dumps({'a': 1})
    p90 = format_ns(Histogram.of(DUMPS_NS).percentile(90))
    lines = text.split("  \n")
    assert lines[0] == (
        f"`json.dumps` costs {typical(DUMPS_NS)} typical, p90 {p90} · allocates "
        f"{hint_of(DUMPS_NS, DUMPS_BYTES).split(' · ')[1]}"
    )
    assert lines[-1] == f"[Full profile (100 samples)](<{DOCS}apiprof/json.dumps.html>)"
    assert len(lines) <= 3
    # the other server shows the signature and the docstring; a table would show as raw pipes
    assert "(obj" not in text and "Serialize" not in text and "|" not in text
    assert await hover(client, uri, 6, 9) == text  # inside the call's arguments


async def test_hover_states_the_input_size_its_figures_stand_for(client: LanguageClient):
    uri = open_doc(client, "method.py", SOURCE)
    text = await hover(client, uri, 5, 3)  # w.wrap, measured at n = 10 … 10,000
    at_100 = Histogram.of(wrap_ns(100))  # the reference size, as `apiprof show` and the docs
    assert text.startswith(
        f"`textwrap.TextWrapper.wrap` costs {typical(wrap_ns(100))} typical, "
        f"p90 {format_ns(at_100.percentile(90))} at n = 100"
    )
    small, large = Histogram.of(wrap_ns(10)).median, Histogram.of(wrap_ns(10000)).median
    assert (
        f"Grows O(n) in n: {format_ns(small)} at n = 10 → {format_ns(large)} at n = 10,000" in text
    )


async def test_hover_shows_lab_and_real_program_figures_apart(client: LanguageClient):
    uri = open_doc(client, "collected.py", "import json\njson.loads('1')\n")
    text = await hover(client, uri, 1, 6)
    lines = text.split("  \n")
    real = Histogram.of(LOADS_COLLECTED_NS)
    assert lines[0] == (
        f"`json.loads` in the lab: {typical(LOADS_NS)} typical, p90 "
        f"{format_ns(Histogram.of(LOADS_NS).percentile(90))}"
    )
    assert lines[1] == (
        f"In real programs: {typical(LOADS_COLLECTED_NS)} typical, p90 "
        f"{format_ns(real.percentile(90))} (34 calls)"
    )


async def test_hover_on_names_without_costs_is_left_to_the_other_server(client: LanguageClient):
    uri = open_doc(client, "quiet.py", SOURCE + "textwrap.dedent('x')\nlen('x')\n")
    assert await hover(client, uri, 9, 10) is None  # known, never measured
    assert await hover(client, uri, 10, 1) is None  # a builtin
    assert await hover(client, uri, 4, 0) is None  # the variable w


async def hints_after_refreshes(
    client: LanguageClient, uri: str, seen: int, *, until: tuple[int, int], timeout: float = 30.0
) -> dict[tuple[int, int], str]:
    """The hints asked for after each ``workspace/inlayHint/refresh``, until one at ``until``
    shows (a hang guard, not a race: hints are only asked for again when the server says so)."""
    hints: dict[tuple[int, int], str] = {}
    for _ in range(int(timeout / 0.05)):
        if client.refreshes["inlay"] > seen:
            seen = client.refreshes["inlay"]
            hints = await inlay_hints(client, uri)
            if until in hints:
                break
        await asyncio.sleep(0.05)
    return hints


async def test_inlay_hints_after_profiled_calls(client: LanguageClient):
    # a global of its own: jedi's answers for calls in other documents' copies of SOURCE
    # cannot be reused here, so the background must work and say so
    uri = open_doc(client, "inlay.py", "INLAY = 1\n" + SOURCE)
    before = client.refreshes["inlay"]
    hints = await inlay_hints(client, uri)
    # calls named by the imports are answered at once ...
    assert hints[(7, 15)] == typical(DUMPS_NS)  # dumps({'a': 1})
    assert hints[(8, 22)] == typical([700] * 10)  # os.path.join, stored as posixpath.join
    assert (5, 26) not in hints  # textwrap.TextWrapper(): not profiled
    # ... a method of an inferred instance once jedi has had its turn in the background and
    # asked for fresh hints (a refresh may also come from other documents' background work)
    hints = await hints_after_refreshes(client, uri, before, until=(6, 19))
    assert hints[(6, 19)] == typical(wrap_ns(100))
    assert set(await inlay_hints(client, uri, 7, 7)) == {(7, 15)}  # only the range asked for


async def test_inlay_hints_catch_up_with_edits_made_while_jedi_works(client: LanguageClient):
    uri = open_doc(client, "typing.py", "TYPING = 1\n" + SOURCE)
    for version in range(2, 6):  # edits arrive while the background names the calls
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangeWholeDocument(f"TYPING = {version}\n" + SOURCE)],
            )
        )
    await settle(client)

    async def wrap_hint() -> str | None:
        for _ in range(300):  # a hang guard: each refresh is followed by a new request
            hints = await inlay_hints(client, uri)
            if (6, 19) in hints:
                return hints[(6, 19)]
            await asyncio.sleep(0.1)
        return None

    assert await wrap_hint() == typical(wrap_ns(100))


async def test_inlay_hint_tooltips_come_on_resolve(client: LanguageClient):
    uri = open_doc(client, "tooltip.py", SOURCE)
    [hint] = await inlay_hint_list(client, uri, 6, 6)
    assert hint.tooltip is None and hint.data == "json.dumps" and hint.padding_left
    resolved = await client.inlay_hint_resolve_async(hint)
    assert resolved.tooltip.kind == types.MarkupKind.Markdown
    assert resolved.tooltip.value.startswith(f"`json.dumps` costs {typical(DUMPS_NS)} typical")


async def test_inlay_hint_threshold_and_switch(client: LanguageClient):
    uri = open_doc(client, "threshold.py", SOURCE)
    settings(client, docsUrl=DOCS, inlayHints={"minimumMicroseconds": 2})
    hints = await inlay_hints(client, uri)
    assert (6, 15) in hints and (7, 22) not in hints  # 3.1 µs stays, 700 ns goes
    settings(client, docsUrl=DOCS, inlayHints={"enabled": False})
    assert await inlay_hints(client, uri) == {}
    settings(client, docsUrl=DOCS)
    assert (7, 22) in await inlay_hints(client, uri)


async def test_code_lens_sums_the_profiled_calls_of_a_function(client: LanguageClient):
    text = "import json, os\n\ndef save(x):\n    json.dumps(x)\n    os.path.join('a', 'b')\n    print(x)\n"
    uri = open_doc(client, "lens.py", text)
    params = types.CodeLensParams(types.TextDocumentIdentifier(uri))
    assert not await client.text_document_code_lens_async(params)  # off by default
    settings(client, docsUrl=DOCS, codeLens={"enabled": True})
    [lens] = await client.text_document_code_lens_async(params)
    total = Histogram.of(DUMPS_NS).median + Histogram.of([700] * 10).median
    assert lens.range.start == types.Position(2, 0)
    assert lens.command.title == f"≈{format_ns(total)} in 2 profiled calls"
    settings(client, docsUrl=DOCS)


async def test_changed_database_refreshes_hints_and_hovers(client: LanguageClient):
    text = "import textwrap\ntextwrap.indent('x', ' ')\n"
    uri = open_doc(client, "dbchange.py", text)
    assert await hover(client, uri, 1, 11) is None
    assert await inlay_hints(client, uri) == {}
    before = client.refreshes["inlay"]
    db = open_db(client.root / "apiprof.db")
    store_entry_points(
        db, [EntryPoint("textwrap.indent", "textwrap", "textwrap", EntryKind.FUNCTION)]
    )
    add_histograms(db, "textwrap.indent", {Metric.CPU: Histogram.of([4000] * 7)}, environment=ENV)
    db.conn.close()
    # the server notices on its own and asks the editor to fetch the hints again
    assert await wait_for(lambda: client.refreshes["inlay"] > before)
    assert await inlay_hints(client, uri) == {(1, 25): typical([4000] * 7)}
    assert "7 samples" in (await hover(client, uri, 1, 11) or "")


async def test_positions_count_lsp_lines_only(client: LanguageClient):
    # a form feed and U+2028 are not line breaks in LSP; str.splitlines() thinks they are
    text = "import json\n\x0c\nx = 1 # \u2028 é😋\njson.dumps(1)\n"
    uri = open_doc(client, "odd_lines.py", text)
    assert (await hover(client, uri, 3, 6) or "").startswith("`json.dumps` costs")
    assert (3, 13) in await inlay_hints(client, uri)
    assert await hover(client, uri, 4, 0) is None  # the empty last line
    errors = [m for m in client.log_messages if m.type == types.MessageType.Error]
    assert errors == []


async def test_incremental_edits_use_lsp_lines_and_utf16_columns(client: LanguageClient):
    uri = open_doc(client, "edit.py", "s = '😋\x0c'\nimport json\n")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 5), types.Position(0, 5)), text="!"
                ),
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(2, 0), types.Position(2, 0)),
                    text="json.dumps(1)\n",
                ),
            ],
        )
    )
    assert await inlay_hints(client, uri) == {(2, 13): typical(DUMPS_NS)}
    assert (await hover(client, uri, 2, 6) or "").startswith("`json.dumps` costs")


async def test_untitled_buffers_and_edits_of_unopened_documents(client: LanguageClient):
    uri = open_doc(client, "untitled:Untitled-1", "import json\njson.")
    assert {i.label for i in await complete(client, uri, 1, 5)} == {"dumps", "loads", "JSONDecoder"}
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(
                uri=(client.root / "nope.py").as_uri(), version=2
            ),
            [types.TextDocumentContentChangeWholeDocument(text="x")],
        )
    )
    await settle(client)
    assert logged(client, "nope.py, which the client never opened")
    assert await complete(client, (client.root / "never.py").as_uri(), 0, 0) == []


async def test_latency_report_counts_requests(client: LanguageClient):
    report = await client.protocol.send_request_async("apiprof/latencyReport", None)
    by_method = {m.method: m for m in report.methods}
    assert by_method["textDocument/hover"].count >= 8
    assert 0 < by_method["textDocument/hover"].p50_ms <= by_method["textDocument/hover"].p95_ms
    assert by_method["textDocument/completion"].count >= 4
    assert by_method["textDocument/inlayHint"].count >= 4
    assert report.problems == []


async def test_no_popups_and_no_errors(client: LanguageClient):
    assert client.messages == []
    assert [m.message for m in client.log_messages if m.type == types.MessageType.Error] == []


# -- standalone: the full answers, for people who run it alone -------------------------------------


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def alone(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("standalone")
    build_db(root / "apiprof.db")
    lsp_client.root = root
    lsp_client.result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),  # plain text, no labelDetails
            root_uri=root.as_uri(),
            initialization_options={"mode": "standalone"},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_standalone_completes_everything_in_jedi_order(alone: LanguageClient):
    assert list(alone.result.capabilities.completion_provider.trigger_characters) == [".", " "]
    uri = open_doc(alone, "all.py", SOURCE)
    items = await complete(alone, uri, 8, 3)
    found = jedi_completions(alone, "all.py", SOURCE, 8, 3)
    assert [i.label for i in items] == [c.name for c in found]
    by_label = {i.label: i for i in items}
    assert by_label["dumps"].detail == hint_of(DUMPS_NS, DUMPS_BYTES)
    assert by_label["dumps"].label_details is None  # this client does not show labelDetails
    assert by_label["dump"].detail is None and by_label["decoder"].detail is None


async def test_tooltips_are_inline_for_clients_that_cannot_resolve(alone: LanguageClient):
    uri = open_doc(alone, "inline.py", SOURCE)
    [hint] = await inlay_hint_list(alone, uri, 6, 6)
    assert hint.label == typical(DUMPS_NS) and hint.data is None
    assert hint.tooltip.value.startswith("json.dumps costs ")


async def test_standalone_space_asks_only_after_import(alone: LanguageClient):
    uri = open_doc(alone, "space.py", "x = \nfrom json import ")
    context = types.CompletionContext(
        trigger_kind=types.CompletionTriggerKind.TriggerCharacter, trigger_character=" "
    )

    async def at(line: int, column: int) -> list[str]:
        result = await alone.text_document_completion_async(
            types.CompletionParams(
                types.TextDocumentIdentifier(uri), types.Position(line, column), context
            )
        )
        return [i.label for i in result.items]

    assert await at(0, 4) == []
    assert "dumps" in await at(1, 17)


async def test_standalone_hover_is_the_full_profile_in_plain_text(alone: LanguageClient):
    uri = open_doc(alone, "full.py", SOURCE)
    result = await alone.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(5, 3))
    )
    assert result.contents.kind == types.MarkupKind.PlainText
    text = result.contents.value
    assert text.startswith("textwrap.TextWrapper.wrap(self, text)\n\n")
    # the stored summary stops mid-sentence; only the whole sentence is shown
    assert "\n\nObject for wrapping/filling text.\n\n" in text
    assert "textwrap.TextWrapper.wrap costs" in text and "at n = 100" in text
    assert "CPU time (sampled calls) per call at n = 100" in text
    assert "Full profile (5 samples): apiprof show textwrap.TextWrapper.wrap" in text
    dedent = await hover(
        alone, open_doc(alone, "known.py", "import textwrap\ntextwrap.dedent"), 1, 10
    )
    assert (
        dedent == "textwrap.dedent(text)\n\nNot profiled (scanned, but no measurements stored yet)"
    )


async def test_standalone_without_cost_hints_is_plain_jedi(alone: LanguageClient):
    uri = open_doc(alone, "plain.py", SOURCE)
    settings(alone, mode="standalone", completion={"costHints": False})
    items = await complete(alone, uri, 8, 3)
    assert [i.label for i in items] == [
        c.name for c in jedi_completions(alone, "plain.py", SOURCE, 8, 3)
    ]
    assert all(i.detail is None and i.data is None for i in items)
    settings(alone, mode="standalone")
