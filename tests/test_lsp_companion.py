"""apiprof-lsp beside a second real Python server (jedi-language-server): no duplicates.

Editors that run two servers for a buffer merge their completion lists and show both hovers.
In companion mode our items must be twins of the other server's (same label, filterText,
sortText, insertText), so a client that folds equal items shows each name once, with our cost
on it; our hover must add only the cost section; inlay hints are ours alone. Checked twice:
with two pytest-lsp clients, and in Neovim (headless, both servers attached to one buffer).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsp_support import (
    DUMPS_BYTES,
    DUMPS_NS,
    MARKDOWN_CLIENT,
    SERVER,
    SOURCE,
    build_db,
    complete,
    count_refreshes,
    hint_of,
    hover,
    inlay_hints,
    open_doc,
    typical,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

JEDI_LS = shutil.which("jedi-language-server", path=str(Path(sys.executable).parent))
NVIM = shutil.which("nvim")
needs_jedi_ls = pytest.mark.skipif(
    JEDI_LS is None, reason="jedi-language-server is not installed (pip install -e '.[test]')"
)
on_server_loop = pytest.mark.asyncio(loop_scope="module")

TWIN_FIELDS = ("label", "filter_text", "sort_text", "insert_text", "kind")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pair")
    build_db(root / "apiprof.db")
    (root / "pair.py").write_text(SOURCE)
    return root


async def start(client: LanguageClient, root: Path) -> None:
    client.root = root
    client.refreshes = count_refreshes(client)
    client.result = await client.initialize_session(
        types.InitializeParams(capabilities=MARKDOWN_CLIENT, root_uri=root.as_uri())
    )


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def ours(lsp_client: LanguageClient, workspace: Path):
    await start(lsp_client, workspace)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    scope="module", config=ClientServerConfig(server_command=[JEDI_LS or "jedi-language-server"])
)
async def theirs(lsp_client: LanguageClient, workspace: Path):
    await start(lsp_client, workspace)
    yield
    await lsp_client.shutdown_session()


def merged(*lists: list[types.CompletionItem]) -> dict[tuple, list[types.CompletionItem]]:
    """What a client that folds equal items shows: one entry per (label, filterText, sortText)."""
    shown: dict[tuple, list[types.CompletionItem]] = {}
    for items in lists:
        for item in items:
            shown.setdefault((item.label, item.filter_text, item.sort_text), []).append(item)
    return shown


@needs_jedi_ls
@on_server_loop
async def test_merged_completion_lists_have_no_duplicates(ours, theirs):
    uri_a, uri_b = open_doc(ours, "pair.py", SOURCE), open_doc(theirs, "pair.py", SOURCE)
    mine, other = await complete(ours, uri_a, 8, 3), await complete(theirs, uri_b, 8, 3)
    assert len(other) > 20 and {i.label for i in mine} == {"dumps", "loads", "JSONDecoder"}
    shown = merged(mine, other)
    assert len(shown) == len(other)  # every one of ours folds into its twin
    for item in mine:
        [twin] = [t for t in other if t.label == item.label]
        assert [getattr(item, f) for f in TWIN_FIELDS] == [getattr(twin, f) for f in TWIN_FIELDS]
    dumps = next(i for i in mine if i.label == "dumps")
    assert dumps.label_details.description == hint_of(DUMPS_NS, DUMPS_BYTES)


@needs_jedi_ls
@on_server_loop
async def test_hovers_add_up_without_repeating(ours, theirs):
    uri_a, uri_b = open_doc(ours, "pair.py", SOURCE), open_doc(theirs, "pair.py", SOURCE)
    mine, other = await hover(ours, uri_a, 6, 2), await hover(theirs, uri_b, 6, 2)
    assert "dumps(obj" in other  # the other server shows the signature and the docstring ...
    assert mine.startswith(f"`json.dumps` costs {typical(DUMPS_NS)} typical")
    assert "dumps(obj" not in mine and "Serialize" not in mine  # ... so we do not
    assert len(mine.split("  \n")) <= 3


@needs_jedi_ls
@on_server_loop
async def test_inlay_hints_are_ours_alone(ours, theirs):
    assert theirs.result.capabilities.inlay_hint_provider is None
    uri = open_doc(ours, "pair.py", SOURCE)
    assert (await inlay_hints(ours, uri))[(6, 15)] == typical(DUMPS_NS)


# -- Neovim ------------------------------------------------------------------------------------------

NVIM_SCRIPT = r"""
local root, out = _G.apiprof_root, _G.apiprof_out
vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/pair.py'))
local buf = vim.api.nvim_get_current_buf()
local clients = {}
for name, cmd in pairs({ apiprof = _G.apiprof_cmd, jedi = _G.jedi_cmd }) do
  clients[name] = vim.lsp.start_client({ name = name, cmd = { cmd }, root_dir = root })
  vim.lsp.buf_attach_client(buf, clients[name])
end
local ready = vim.wait(60000, function()
  for _, id in pairs(clients) do
    local c = vim.lsp.get_client_by_id(id)
    if not c or not c.initialized then return false end
  end
  return true
end, 50)
local function ask(method, params)
  local answers = {}
  local replies = vim.lsp.buf_request_sync(buf, method, params, 60000) or {}
  for name, id in pairs(clients) do
    answers[name] = replies[id] and replies[id].result or vim.NIL
  end
  return answers
end
local function at(line, character)
  return { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = line, character = character } }
end
local completion = ask('textDocument/completion', at(8, 3))
local words = {}
for name, result in pairs(completion) do
  words[name] = {}
  if result ~= vim.NIL then
    for _, item in ipairs(vim.lsp.util.text_document_completion_list_to_complete_items(result, '')) do
      table.insert(words[name], { word = item.word, menu = item.menu })
    end
  end
end
local report = {
  ready = ready,
  words = words,
  completion = completion,
  hover = ask('textDocument/hover', at(6, 2)),
  inlay = ask('textDocument/inlayHint', {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = 0, character = 0 }, ['end'] = { line = 9, character = 0 } },
  }),
}
vim.fn.writefile({ vim.fn.json_encode(report) }, out)
for _, id in pairs(clients) do vim.lsp.stop_client(id) end
vim.wait(5000, function() return #vim.lsp.get_active_clients() == 0 end, 50)
vim.cmd('qa!')
"""


@pytest.mark.slow
@needs_jedi_ls
@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (.ci/run installs Debian's)")
def test_neovim_with_both_servers_attached(workspace: Path, tmp_path: Path):
    script, out = tmp_path / "pair.lua", tmp_path / "report.json"
    script.write_text(NVIM_SCRIPT)
    setup = (
        f"lua _G.apiprof_root = {json.dumps(str(workspace))}; _G.apiprof_out = {json.dumps(str(out))}; "
        f"_G.apiprof_cmd = {json.dumps(SERVER)}; _G.jedi_cmd = {json.dumps(JEDI_LS)}"
    )
    subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-c", setup, "-c", f"luafile {script}"],
        cwd=workspace,
        timeout=240,
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    report = json.loads(out.read_text())
    assert report["ready"] is True
    ours = {w["word"]: w["menu"] for w in report["words"]["apiprof"]}
    theirs = [w["word"] for w in report["words"]["jedi"]]
    # Neovim 0.7 announces no labelDetails support: the hint is in `detail`, its menu column
    assert ours == {
        "dumps": hint_of(DUMPS_NS, DUMPS_BYTES),
        "loads": typical([900] * 10),
        "JSONDecoder": typical([500] * 10),
    }
    assert set(ours) <= set(theirs) and len(theirs) == len(set(theirs))
    jedi_items = {i["label"]: i for i in report["completion"]["jedi"]["items"]}
    for item in report["completion"]["apiprof"]["items"]:
        twin = jedi_items[item["label"]]
        for field in ("filterText", "sortText", "insertText", "kind"):
            assert item[field] == twin[field], (item["label"], field)
    hover_ours = report["hover"]["apiprof"]["contents"]["value"]
    assert hover_ours.startswith("`json.dumps` costs") and "|" not in hover_ours
    assert "dumps(obj" in json.dumps(report["hover"]["jedi"])
    labels = {
        (h["position"]["line"], h["position"]["character"]): h["label"]
        for h in report["inlay"]["apiprof"]
    }
    assert labels[(6, 15)] == typical(DUMPS_NS)
    assert report["inlay"]["jedi"] is None
