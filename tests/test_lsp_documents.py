"""The language server's parts in-process: JSON-RPC frames, documents and call sites, inlay hints."""

from __future__ import annotations

import json
from pathlib import Path

import parso
import pytest
from lsp_support import DUMPS_NS, build_db, typical
from lsprotocol import types

from apiprof.lsp_server.calls import map_calls
from apiprof.lsp_server.framing import BadFrame, FrameParser, Message, Skipped
from apiprof.lsp_server.session import Session
from apiprof.lsp_server.text import Document

# -- frames -----------------------------------------------------------------------------------------


def body(payload: dict) -> bytes:
    return json.dumps(payload).encode()


REQUEST = body({"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover", "params": {}})
NEXT = body({"jsonrpc": "2.0", "id": 8, "method": "shutdown"})


def framed(data: bytes, length: int | str | None = None) -> bytes:
    return (
        b"Content-Length: %s\r\n\r\n" % str(len(data) if length is None else length).encode() + data
    )


@pytest.mark.parametrize(
    ("stream", "problem"),
    [
        (framed(REQUEST, "abc"), "Content-Length 'abc' is not a byte count"),
        (framed(REQUEST, -5), "Content-Length '-5' is not a byte count"),
        (framed(REQUEST, 100_000_000_000), "exceeds the limit"),
        (framed(REQUEST, len(REQUEST) - 10), "the body is not valid JSON"),
        (framed(REQUEST, len(REQUEST) + 40), "is longer than the message"),
        (b"\r\n" + REQUEST, "without a Content-Length header"),
        (b"Content-Type: x\r\n\r\n" + REQUEST, "the frame has no Content-Length header"),
    ],
)
@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_a_bad_frame_is_answered_and_the_next_one_read(stream: bytes, problem: str, chunk: int):
    data = stream + framed(NEXT)
    parser = FrameParser()
    events = []
    for start in range(0, len(data), chunk):
        events += parser.feed(data[start : start + chunk])
    events += parser.close()
    answered = [e for e in events if not isinstance(e, Skipped)]
    assert len(answered) == 2
    bad, good = answered
    assert isinstance(bad, BadFrame) and problem in bad.problem and bad.request_id == 7
    assert isinstance(good, Message) and good.value["id"] == 8


def test_frames_read_case_insensitively_and_across_chunks():
    data = b"content-length: %d\n\n" % len(REQUEST) + REQUEST + framed(NEXT)
    parser = FrameParser()
    events = [e for b in (data[:5], data[5:40], data[40:]) for e in parser.feed(b)]
    assert [e.value["id"] for e in events] == [7, 8]  # type: ignore[union-attr]


def test_garbage_is_skipped_and_no_buffer_is_preallocated():
    parser = FrameParser()
    events = parser.feed(b"hello\r\nworld\r\n" + framed(NEXT))
    assert isinstance(events[0], Skipped) and isinstance(events[-1], Message)
    assert parser.feed(b"Content-Length: 60000000\r\n\r\n{") == []
    assert len(parser._buffer) == 1  # waits for bytes instead of allocating 60 MB
    deep = b"[" * 100_000 + b"]" * 100_000
    [event] = FrameParser().feed(framed(deep))
    assert isinstance(event, BadFrame) and "nests too deeply" in event.problem
    [event] = FrameParser().feed(framed(b'{"id": 3, "x": "\xff"}'))
    assert isinstance(event, BadFrame) and event.request_id == 3 and "UTF-8" in event.problem


# -- documents and call sites -------------------------------------------------------------------------


def test_documents_use_lsp_lines_and_utf16_columns():
    doc = Document("file:///a.py", "x = '😋'\x0c\u2028y\r\nz")
    assert doc.lines == ["x = '😋'\x0c\u2028y", "z"]
    assert doc.position(types.Position(0, 7)) == (0, 6)  # after the emoji: 2 UTF-16 units
    assert doc.client_position(0, 6) == types.Position(0, 7)
    assert (
        doc.position(types.Position(0, 99)) == (0, 10)
        and doc.position(types.Position(2, 0)) is None
    )
    doc.apply(
        types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(0, 7), types.Position(1, 0)), text="!"
        )
    )
    assert doc.source == "x = '😋!z"
    assert Document("untitled:Untitled-1", "").path is None


def test_call_sites_are_resolved_from_imports_where_the_source_says_so():
    source = (
        "import json as js, os.path\nfrom textwrap import (dedent, indent as ind)\n"
        "from . import sibling\nx = js.dumps(1).strip()\nlen(x)\n"
        "def f(a):\n    ind(dedent(a), ' ')\n    return sibling.g(a)\n"
        "def g():\n    os.path.join('a')\n    json = None\n"
    )
    calls = map_calls(parso.parse(source), source)
    targets = {s.end: calls.target(s) for s in calls.sites}
    assert targets[(4, 15)] == "json.dumps" and targets[(4, 23)] is None  # a call's result
    assert targets[(5, 6)] == "builtins.len"
    assert targets[(7, 23)] == "textwrap.indent" and targets[(7, 17)] == "textwrap.dedent"
    assert targets[(8, 23)] is None  # a relative import: left to jedi
    assert targets[(10, 21)] == "os.path.join"
    assert [(f.name, len(f.sites)) for f in calls.functions] == [("f", 3), ("g", 1)]
    # jedi's answers are cached by the code around a call: an edit elsewhere keeps them
    edited_source = source.replace("len(x)", "len(x)  # ok")
    edited = map_calls(parso.parse(edited_source), edited_source)
    assert [s.key for s in edited.sites if s.end[0] == 8] == [
        s.key for s in calls.sites if s.end[0] == 8
    ]


def test_calls_ending_in_a_range_come_in_document_order():
    source = "import json\nx = json.dumps(len(str(1)))\n\ny = json.loads('1')\n"
    calls = map_calls(parso.parse(source), source)
    ends = [site.end for site in calls.by_end]
    assert ends == [(2, 25), (2, 26), (2, 27), (4, 19)]  # inner calls close first
    assert list(calls.ending_between((2, 26), (3, 0))) == [1, 2]  # both ends included
    assert [calls.by_end[i].dotted for i in calls.ending_between((1, 0), (9, 0))] == [
        "str",
        "len",
        "json.dumps",
        "json.loads",
    ]
    assert not calls.ending_between((3, 0), (4, 18))


def test_inlay_hints_of_a_version_are_built_once_and_follow_edits(tmp_path: Path):
    """A whole-file request after a viewport reuses the viewport's hints; an edit moves them."""
    build_db(tmp_path / "apiprof.db")
    session = Session()
    session.start(str(tmp_path), {})
    uri = (tmp_path / "calls.py").as_uri()
    source = "import json\n" + "json.dumps(1)\n" * 40
    session.did_open(types.TextDocumentItem(uri, "python", 1, source))

    def hints(first: int, last: int) -> list[dict]:
        where = types.Range(types.Position(first, 0), types.Position(last, 0))
        return session.inlay_hints(uri, where)

    viewport = hints(10, 20)
    whole = hints(0, 99)
    assert [h["position"]["line"] for h in whole] == list(range(1, 41))
    assert {h["label"] for h in whole} == {typical(DUMPS_NS)}
    assert all(a is b for a, b in zip(whole[9:19], viewport, strict=True))
    start = types.Position(3, 0)
    session.did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [types.TextDocumentContentChangePartial(types.Range(start, start), "# note\n")],
        )
    )
    assert [h["position"]["line"] for h in hints(0, 99)] == [1, 2, *range(4, 42)]
