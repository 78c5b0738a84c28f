"""Exports: speedscope files valid against speedscope's own schema, Chrome trace-event files
valid per the documented format, and both faithful to the recording."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from test_sphinx_browser import CHROMIUM, chromium

from apiprof.tracing.export import export, to_chrome_trace, to_speedscope
from apiprof.tracing.recording import Marker, Recording, write_recording
from apiprof.tracing.sampler import ThreadInfo
from apiprof.tracing.stacks import Frame, StackTable

SCHEMA = json.loads(
    (Path(__file__).parent / "schemas" / "speedscope-file-format-schema.json").read_text()
)
MAIN, LOAD, PARSE = (
    Frame("main", "app.py", 1),
    Frame("load", "app.py", 10),
    Frame("parse", "p.py", 3),
)
IDLE = Frame("idle", "pool.py", 7)
MS = 1_000_000


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """Thread 0: main → load → parse, then main → load, then main; thread 1 idles."""
    table = StackTable()
    deep, middle, top = (
        table.intern([MAIN, LOAD, PARSE]),
        table.intern([MAIN, LOAD]),
        table.intern([MAIN]),
    )
    idle = table.intern([IDLE])
    times, samples = [], []
    for tick in range(30):
        t = tick * MS
        stack = deep if tick < 10 else middle if tick < 20 else top
        times += [t, t]
        samples += [(0, stack), (1, idle)]
    path = tmp_path_factory.mktemp("export") / "e.trace"
    write_recording(
        path,
        times=times,
        samples=samples,
        stacks=table,
        threads=[ThreadInfo(0, 1, 4001, "MainThread"), ThreadInfo(1, 2, 4002, "pool")],
        markers=[
            Marker("completion", 0, 2 * MS, 12 * MS, 5 * MS),  # slow
            Marker("hover", 0, 8 * MS, 9 * MS, 50 * MS),  # overlaps completion
            Marker("resolve", 1, 25 * MS, None, 10 * MS),  # still running at the end
        ],
        meta={
            "interval_ns": MS,
            "duration_ns": 30 * MS,
            "pid": 321,
            "trigger": {"event": "completion", "at_ns": 7 * MS},
        },
    )
    return path


def test_speedscope_export_is_valid_and_faithful(recording, tmp_path):
    out = export(recording, "speedscope", tmp_path / "s.speedscope.json")
    data = json.loads(out.read_text())
    jsonschema.validate(data, SCHEMA)
    frames = [f["name"] for f in data["shared"]["frames"]]
    sampled = [p for p in data["profiles"] if p["type"] == "sampled"]
    assert [p["name"] for p in sampled] == ["MainThread (thread 0)", "pool (thread 1)"]
    main = sampled[0]
    assert len(main["samples"]) == len(main["weights"]) == 30
    assert [frames[i] for i in main["samples"][0]] == ["main", "load", "parse"]
    assert [frames[i] for i in main["samples"][-1]] == ["main"]
    assert sum(main["weights"]) == main["endValue"] - main["startValue"] == 30 * MS
    evented = [p for p in data["profiles"] if p["type"] == "evented"]
    assert len(evented) == 2  # completion and hover overlap: two lanes
    for profile in evented:  # open/close properly nested, as speedscope requires
        stack = []
        for event in profile["events"]:
            if event["type"] == "O":
                stack.append(event["frame"])
            else:
                assert stack.pop() == event["frame"]
        assert not stack
    labels = {frames[e["frame"]] for p in evented for e in p["events"]}
    assert labels == {"completion on MainThread", "hover on MainThread", "resolve on pool"}


def test_speedscope_export_of_a_window(recording):
    with Recording(recording) as r:
        data = to_speedscope(r, 10 * MS, 20 * MS)
    jsonschema.validate(data, SCHEMA)
    main = data["profiles"][0]
    frames = [f["name"] for f in data["shared"]["frames"]]
    assert {tuple(frames[i] for i in s) for s in main["samples"]} == {("main", "load")}


def check_trace_event_format(data: dict) -> None:
    """The Trace Event Format (JSON object form), as documented by the Chrome tracing project:
    required fields per phase, matched async begin/end, nested complete events per thread."""
    assert set(data) >= {"traceEvents"}
    assert data.get("displayTimeUnit", "ms") in ("ms", "ns")
    open_async: dict[tuple, float] = {}
    slices: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for event in data["traceEvents"]:
        ph = event["ph"]
        assert ph in {"X", "B", "E", "b", "e", "n", "i", "I", "M", "C"}, event
        assert isinstance(event["name"], str) and event["name"]
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        if ph == "M":
            assert event["name"] in {"process_name", "thread_name", "thread_sort_index"}
            assert isinstance(event["args"]["name"], str)
            continue
        assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0
        if ph == "X":
            assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0
            slices[event["pid"], event["tid"]].append((event["ts"], event["ts"] + event["dur"]))
        elif ph in "be":
            key = (event["cat"], event["id"], event["name"])
            if ph == "b":
                assert key not in open_async
                open_async[key] = event["ts"]
            else:
                assert open_async.pop(key) <= event["ts"]
        elif ph in "iI":
            assert event.get("s", "t") in ("g", "p", "t")
    assert not open_async, "async slices left open"
    for spans in slices.values():  # complete events on one thread nest or are disjoint
        stack: list[tuple[float, float]] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1][1], f"slice {start}-{end} crosses its parent"
            stack.append((start, end))


def test_chrome_export_is_valid_and_faithful(recording, tmp_path):
    out = export(recording, "chrome", tmp_path / "c.json")
    data = json.loads(out.read_text())
    check_trace_event_format(data)
    events = data["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"MainThread", "pool"}
    main = sorted(
        (e["name"], e["ts"], e["dur"]) for e in events if e["ph"] == "X" and e["tid"] == 4001
    )
    # consecutive samples sharing a frame are one slice
    assert main == [("load", 0, 20_000), ("main", 0, 30_000), ("parse", 0, 10_000)]
    markers = Counter((e["name"], e["ph"]) for e in events if e.get("cat") == "apiprof.marker")
    assert markers == {(n, ph): 1 for n in ("completion", "hover", "resolve") for ph in "be"}
    trigger = [e for e in events if e["ph"] == "i"]
    assert trigger[0]["ts"] == 7000 and "completion" in trigger[0]["name"]
    assert {e["pid"] for e in events} == {321}


def test_chrome_export_of_a_window(recording):
    with Recording(recording) as r:
        data = to_chrome_trace(r, 5 * MS, 15 * MS)
    check_trace_event_format(data)
    main = sorted(
        (e["name"], e["ts"], e["dur"])
        for e in data["traceEvents"]
        if e["ph"] == "X" and e["tid"] == 4001
    )
    assert main == [("load", 5000, 10_000), ("main", 5000, 10_000), ("parse", 5000, 5000)]


@pytest.mark.slow
def test_exports_of_a_real_trace(tmp_path):
    trace = tmp_path / "real.trace"
    program = Path(__file__).parent / "fixtures" / "traced_program.py"
    cli = [sys.executable, "-m", "apiprof.cli"]
    subprocess.run(
        [*cli, "trace", "-o", str(trace), "--", sys.executable, str(program), "0.2"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    for fmt, check in (
        ("speedscope", lambda d: jsonschema.validate(d, SCHEMA)),
        ("chrome", check_trace_event_format),
    ):
        out = tmp_path / f"real.{fmt}.json"
        run = subprocess.run(
            [*cli, "export", str(trace), "--format", fmt, "-o", str(out)],
            check=True, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert str(out) in run.stderr
        check(json.loads(out.read_text()))


def test_unknown_format_is_refused(recording, tmp_path):
    from apiprof.errors import UsageError

    with pytest.raises(UsageError, match="speedscope, chrome"):
        export(recording, "pprof", tmp_path / "x")


# -- the exports opened in a real viewer ---------------------------------------------------
# speedscope is a static web app: `.ci/run` unpacks its npm package's build into the viewer
# cache, and the tests serve it from loopback to headless Chromium. Perfetto cannot check our
# files on a clean machine: its parser (trace_processor_shell, which the `perfetto` PyPI package
# only wraps, downloading the binary on first use) and its UI builds are published only as
# prebuilt files on Google's artifact storage, not on PyPI, npm or Debian (the only sources CI
# reaches), and building them needs toolchains fetched from there too. Headless Chromium does
# not serve its own chrome://tracing viewer (the page load is aborted), so the Chrome
# trace-event file is opened in speedscope's trace-event importer: a real consumer of the format.

SPEEDSCOPE_VERSION = "1.25.0"
VIEWERS = Path(
    os.environ.get("APIPROF_VIEWER_CACHE", str(Path.home() / ".cache" / "apiprof" / "viewers"))
)
SPEEDSCOPE = VIEWERS / f"speedscope-{SPEEDSCOPE_VERSION}"
# a sandwich-view row: total, self, the frame's file (title) and its name
SANDWICH_ROW = re.compile(
    r"<tr[^>]*><td[^>]*>([^<]*)<div.*?</td><td[^>]*>([^<]*)<div.*?</td>"
    r'<td(?: title="([^"]*)")?[^>]*><span[^>]*></span>([^<]*)</td></tr>'
)


@pytest.fixture(scope="module")
def viewer(recording, tmp_path_factory) -> Iterator[str]:
    """speedscope and both exports, served from loopback: the base URL."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    if not (SPEEDSCOPE / "index.html").is_file():
        pytest.skip(f"speedscope {SPEEDSCOPE_VERSION} is not in {VIEWERS} (.ci/run fetches it)")
    site = tmp_path_factory.mktemp("viewer") / "site"
    shutil.copytree(SPEEDSCOPE, site)
    export(recording, "speedscope", site / "e.speedscope.json")
    # not *.chrome.json: speedscope takes that name for Chrome's DevTools profile format
    export(recording, "chrome", site / "e.trace-events.json")
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def open_in_speedscope(url: str, profile: Path) -> str:
    """The page speedscope rendered for the profile at ``url``, in its sandwich view."""
    return chromium(
        "--dump-dom", "--virtual-time-budget=15000", f"{url}&view=sandwich", profile=profile
    )


def sandwich(dom: str) -> dict[str, tuple[str, str, str]]:
    """Function name → (total, self, file) as the sandwich view shows them."""
    assert "Something went wrong" not in dom, dom[-3000:]
    rows = {name: (total, own, file) for total, own, file, name in SANDWICH_ROW.findall(dom)}
    assert rows, dom[-3000:]
    return rows


@pytest.mark.slow
def test_speedscope_shows_our_frames_threads_and_times(viewer, tmp_path):
    dom = open_in_speedscope(
        f"{viewer}/index.html#profileURL=/e.speedscope.json", tmp_path / "profile"
    )
    assert "<title>e.trace - speedscope</title>" in dom
    # the profile chooser lists each thread and the marked events
    for name in ("MainThread (thread 0)", "pool (thread 1)", "marked events"):
        assert f"<span>{name}</span>" in dom
    # MainThread: 10 ms in main → load → parse, 10 ms in main → load, 10 ms in main
    assert sandwich(dom) == {
        "parse": ("10.00ms (33%)", "10.00ms (33%)", "p.py"),
        "load": ("20.00ms (67%)", "10.00ms (33%)", "app.py"),
        "main": ("30.00ms (100%)", "10.00ms (33%)", "app.py"),
    }


@pytest.mark.slow
def test_chrome_trace_events_open_in_a_trace_event_viewer(viewer, tmp_path):
    dom = open_in_speedscope(
        f"{viewer}/index.html#profileURL=/e.trace-events.json", tmp_path / "profile"
    )
    for name in ("python (pid 321), MainThread (tid 4001)", "python (pid 321), pool (tid 4002)"):
        assert f"<span>{name}</span>" in dom
    # a slice's name is its function, followed by its arguments (file and line)
    assert sandwich(dom) == {
        'parse {"file":"p.py","line":3}': ("10.00ms (33%)", "10.00ms (33%)", ""),
        'load {"file":"app.py","line":10}': ("20.00ms (67%)", "10.00ms (33%)", ""),
        'main {"file":"app.py","line":1}': ("30.00ms (100%)", "10.00ms (33%)", ""),
    }
