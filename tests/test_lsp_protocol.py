"""The server over raw pipes: what no well-behaved client sends, and an answer to every request.

Each test writes bytes to a real ``apiprof-lsp`` process and reads its frames back. A hostile
frame must get an error (with the request's id when it can be read) and must not cost the
server its hearing: the request after it is answered normally.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest
from lsp_support import SERVER, RawServer, build_db, frame

HOVER_PARAMS = {
    "textDocument": {"uri": "file:///nowhere.py"},
    "position": {"line": 0, "character": 0},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("raw")
    build_db(root / "apiprof.db")
    raw = RawServer(root)
    assert "capabilities" in raw.initialize()["result"]
    yield raw
    raw.close()


def still_answers(raw: RawServer) -> None:
    reply = raw.call("apiprof/latencyReport")
    assert "result" in reply and reply["result"]["problems"] == []


def request_body(raw: RawServer, msg_id: int) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover", "params": HOVER_PARAMS}
    ).encode()


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (lambda body: b"Content-Length: abc", "Content-Length 'abc' is not a byte count"),
        (lambda body: b"Content-Length: -5", "Content-Length '-5' is not a byte count"),
        (lambda body: b"Content-Length: 100000000000", "exceeds the limit"),
        (lambda body: b"Content-Length: %d" % (len(body) - 10), "the body is not valid JSON"),
        (lambda body: b"Content-Length: %d" % (len(body) + 40), "is longer than the message"),
        (lambda body: b"Content-Type: application/json", "no Content-Length header"),
    ],
    ids=["abc", "negative", "huge", "10-short", "40-long", "missing"],
)
def test_a_hostile_frame_gets_an_error_and_the_server_keeps_listening(server, header, problem):
    bad_id = server.next_id = server.next_id + 1
    body = request_body(server, bad_id)
    server.next_id += 1
    good = {"jsonrpc": "2.0", "id": server.next_id, "method": "apiprof/latencyReport"}
    server.send(header(body) + b"\r\n\r\n" + body + frame(good))
    error = server.response(bad_id)["error"]
    assert error["code"] == -32700 and problem in error["message"]
    assert "result" in server.response(server.next_id)
    still_answers(server)


def test_a_hostile_length_allocates_nothing(server):
    rss = lambda: int(  # noqa: E731
        next(
            line.split()[1]
            for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines()
            if line.startswith("VmRSS:")
        )
    )
    before = rss()
    server.send(b"Content-Length: 60000000\r\n\r\n")  # under the limit, and nothing follows
    server.send(b'{"jsonrpc": "2.0", "id": 1, "method": "apiprof/latencyReport"}')
    # the next frame shows the first was a lie: the lie is answered with an error, then the frame
    reply_to = server.request("apiprof/latencyReport")
    assert server.response(1)["error"]["code"] == -32700
    assert server.response(reply_to)["result"]
    assert rss() - before < 50_000  # KiB: nothing like 60 MB was set aside
    still_answers(server)


def test_lower_case_headers_and_bare_newlines_are_understood(server):
    body = json.dumps({"jsonrpc": "2.0", "id": "lc", "method": "apiprof/latencyReport"}).encode()
    server.send(
        b"content-length: %d\ncontent-type: application/vscode-jsonrpc\n\n" % len(body) + body
    )
    assert "result" in server.response("lc")


@pytest.mark.parametrize(
    ("body", "code", "problem"),
    [
        (
            b'{"jsonrpc": "2.0", "id": 51, "method": "textDocument/hover", "params": {"foo": 1}}',
            -32602,
            "required field missing @ $.params.textDocument",
        ),
        (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 52,
                    "method": "textDocument/hover",
                    "params": {**HOVER_PARAMS, "position": {"line": -1, "character": 0}},
                }
            ).encode(),
            -32602,
            "Position.line should be in range [0:2147483647], but was -1. @ $.params.position",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 53, "method": "textDocument/hover", params: }',
            -32700,
            "not valid JSON",
        ),
        (b'[{"jsonrpc": "2.0", "id": 54, "method": "shutdown"}]', -32600, "not a batch"),
        (b'{"id": 55, "method": "textDocument/hover", "params": {}}', -32600, '"jsonrpc": "2.0"'),
        (b'{"jsonrpc": "2.0", "id": 56, "method": "no/suchMethod"}', -32601, "no/suchMethod"),
    ],
    ids=["params", "negative-line", "json", "batch", "no-jsonrpc", "unknown-method"],
)
def test_every_bad_request_gets_an_error(server, body: bytes, code: int, problem: str):
    server.send(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    msg_id = json.loads(body.replace(b"params: }", b'"params": {}}'))
    msg_id = msg_id[0]["id"] if isinstance(msg_id, list) else msg_id["id"]
    reply = server.response(None if code in (-32600,) and body.startswith(b"[") else msg_id)
    assert reply["error"]["code"] == code
    if problem != "not a batch":
        assert problem in reply["error"]["message"]
    still_answers(server)


def test_a_notification_with_bad_params_is_logged_not_fatal(server):
    server.message({"method": "textDocument/didOpen", "params": {"textDocument": 3}})
    still_answers(server)


def test_jedi_warms_up_in_the_background_before_any_request(tmp_path: Path):
    with RawServer(tmp_path) as raw:
        raw.initialize()
        for _ in range(1200):  # a hang guard: warming up takes about a second
            report = raw.call("apiprof/latencyReport")["result"]
            if report["warmedUp"]:
                break
            time.sleep(0.1)
        assert report["warmedUp"] and not report["background"]
        # no request asked jedi for anything: the server did it on its own
        assert {m["method"] for m in report["methods"]} <= {
            "initialize",
            "initialized",
            "apiprof/latencyReport",
        }


def test_requests_before_initialize_after_shutdown_and_the_exit_codes(tmp_path: Path):
    with RawServer(tmp_path) as raw:
        assert raw.call("textDocument/hover", HOVER_PARAMS)["error"]["code"] == -32002
        raw.initialize()
        assert raw.call("shutdown") == {"jsonrpc": "2.0", "id": raw.next_id, "result": None}
        after = raw.call("textDocument/hover", HOVER_PARAMS)["error"]
        assert after["code"] == -32600 and "shut down" in after["message"]
        raw.message({"method": "exit"})
        assert raw.exit_code() == 0


def test_exit_without_shutdown_exits_1(tmp_path: Path):
    with RawServer(tmp_path) as raw:
        raw.initialize()
        raw.message({"method": "exit"})
        assert raw.exit_code() == 1


def test_the_end_of_input_ends_the_server(tmp_path: Path):
    with RawServer(tmp_path) as raw:
        raw.initialize()
        raw.send(b"Content-Length: 40\r\n\r\n{")  # cut off mid-frame
        assert raw.process.stdin is not None
        raw.process.stdin.close()
        assert raw.exit_code() == 1


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_tcp_transport_has_the_same_framing(tmp_path: Path):
    port = free_port()
    process = subprocess.Popen([SERVER, "--tcp", f"127.0.0.1:{port}"], cwd=tmp_path)
    try:
        for _ in range(600):
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=60)
                break
            except OSError:
                time.sleep(0.05)
        reader = conn.makefile("rb")

        def reply() -> dict:
            """The next response (log notifications skipped)."""
            while True:
                length = 0
                while (line := reader.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length"):
                        length = int(line.split(b":")[1])
                message = json.loads(reader.read(length))
                if "method" not in message:
                    return message

        conn.sendall(
            b"Content-Length: abc\r\n\r\n"
            + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x"}).encode()
        )
        assert reply()["error"]["code"] == -32700
        conn.sendall(
            frame(
                {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {}}}
            )
        )
        assert "capabilities" in reply()["result"]
        conn.sendall(
            frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
            + frame({"jsonrpc": "2.0", "method": "exit"})
        )
        assert reply()["id"] == 3
        assert process.wait(timeout=60) == 0
        conn.close()
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
