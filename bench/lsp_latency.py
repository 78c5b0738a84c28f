"""Latency of apiprof-lsp against a database with ≥ 100,000 entry points, beside plain jedi.

    python bench/lsp_latency.py [--entry-points 100000] [--rounds 200] [--keep DIR] [--workspace-venv]

Builds a synthetic workspace (package ``synthpkg``: 100 modules, ``synthpkg.big`` with 1000
members) and its database in one transaction, then starts two real servers over stdio — the
full server and ``apiprof-lsp --jedi-only`` (jedi's answers, no cost lookups) — and sends the
same requests to both, alternating, so machine load hits both equally. Reported: client-side
round trip p50/p95 and the servers' own handler times (``apiprof/latencyReport``), and our
*added* latency = full − jedi-only. Targets: added p95 ≤ 5 ms for hover, ≤ 20 ms for a
completion list of 1000 items, ≤ 20 ms for the inlay hints of a 2,000-line file (a 60-line
viewport as VS Code asks, the whole file as Neovim asks, and the whole file right after an edit).
The jedi-only server finds the same call sites and targets (imports, then jedi in the
background) and only skips the cost lookups, so its time is what call-site resolution costs.
In-process jedi (no LSP at all) is shown for scale.
``--workspace-venv`` puts a virtualenv in the workspace, so both servers resolve imports in it
(jedi then answers from a subprocess running that environment's interpreter).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jedi

from apiprof.db.schema import open_db
from apiprof.db.store import ADD_BUCKETS_SQL
from apiprof.model.histogram import Histogram
from apiprof.model.records import Environment, Metric

BIG = 1000  # members of synthpkg.big (the completion list)
HOVER_MODULE = "m001"
HINT_FUNCTIONS = 400  # 5 lines and 5 calls each: a 2,000-line file for the inlay hints
VIEWPORT = 60


def hint_source() -> str:
    """2,000 lines of ordinary code: calls named by imports (profiled), builtins (not profiled)
    and a helper defined in the file (only jedi can name it)."""
    head = f"import synthpkg.{HOVER_MODULE} as m\nimport synthpkg.big as big\n\n\ndef helper(x):\n    return x\n"
    body = "".join(
        f"\n\ndef f{i:04d}(x):\n    y = m.func_{i % BIG:04d}(x)\n    z = big.func_{(i * 7) % BIG:04d}(y, n=len(str(y)))\n"
        f"    return helper(z)\n"
        for i in range(HINT_FUNCTIONS)
    )
    return head + body


def write_sources(root: Path) -> None:
    pkg = root / "synthpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for module in ("big", HOVER_MODULE):
        (pkg / f"{module}.py").write_text(
            "".join(
                f"def func_{i:04d}(x, n=1):\n    '''Synthetic entry point {i}.'''\n    return x\n\n"
                for i in range(BIG)
            )
        )


def generate_db(path: Path, entry_points: int) -> float:
    """Entry points in ``synthpkg.big`` and ``synthpkg.mNNN`` with two metrics each; returns seconds."""
    started = time.perf_counter()
    db = open_db(path)
    env = Environment("3.12.0", "cpython", "Linux", "x86_64", "bench")
    modules = ["big"] + [f"m{i:03d}" for i in range(1, (entry_points - BIG) // BIG + 2)]
    names = [(m, f"synthpkg.{m}.func_{i:04d}") for m in modules for i in range(BIG)][:entry_points]
    # a few hundred distinct shapes, reused: building 200,000 histograms would time Python, not SQLite
    shapes = [
        [
            (str(Metric.CPU), *row)
            for row in Histogram.of([800 + 37 * k, 900 + 91 * k, 1200 + 13 * k, 20 * k]).rows()
        ]
        + [(str(Metric.ALLOC_INCL), *row) for row in Histogram.of([64 + 11 * k, 96 + 5 * k]).rows()]
        for k in range(331)
    ]
    env_id = env.id
    rows, eps = [], []
    for n, (module, qualname) in enumerate(names):
        eps.append(
            (
                qualname,
                "synthpkg",
                f"synthpkg.{module}",
                "function",
                "(x, n=1)",
                f"Synthetic entry point {n}.",
                "",
                0,
            )
        )
        rows += [
            (qualname, metric, "synth", -1, env_id, *row)
            for metric, *row in shapes[n % len(shapes)]
        ]
    with db.conn:
        db.conn.executemany("INSERT INTO entry_points VALUES (?, ?, ?, ?, ?, ?, ?, ?)", eps)
        db.conn.executemany(ADD_BUCKETS_SQL, rows)
        db.conn.executemany(
            "INSERT INTO aliases (alias, qualname) VALUES (?, ?)",
            [(f"synthpkg.{q.rsplit('.', 1)[1]}", q) for m, q in names if m == "big"],
        )
    db.conn.close()
    return time.perf_counter() - started


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, round(0.95 * len(ordered)) - 1)]


class RawClient:
    """A bare JSON-RPC client over stdio: it parses responses with ``json.loads`` as an editor
    would, so the round trip holds no client-side object mapping (pygls' client structures
    every completion item into lsprotocol objects, which would dwarf what we measure)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0

    @classmethod
    async def start(cls, command: list[str], root: Path) -> RawClient:
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        client = cls(process)
        item = {
            "labelDetailsSupport": True,
            "documentationFormat": ["markdown"],
        }  # as VS Code declares
        capabilities = {
            "textDocument": {
                "completion": {"completionItem": item},
                "hover": {"contentFormat": ["markdown"]},
                "inlayHint": {"resolveSupport": {"properties": ["tooltip"]}},
            },
            "workspace": {"inlayHint": {"refreshSupport": True}},
        }
        await client.request(
            "initialize",
            {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities},
        )
        client.notify("initialized", {})
        return client

    def _write(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: dict) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params) -> object:
        self.next_id += 1
        self._write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        await self.process.stdin.drain()
        while True:
            message = await self._read()
            if "method" in message and "id" in message:  # a refresh request: acknowledge it
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message.get("result")

    async def _read(self) -> dict:
        length = 0
        while (line := await self.process.stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(await self.process.stdout.readexactly(length))

    async def close(self) -> None:
        await self.request("shutdown", None)
        self.notify("exit", None)
        await self.process.wait()


async def timed(request) -> float:
    started = time.perf_counter()
    await request
    return (time.perf_counter() - started) * 1e3


async def run(args: argparse.Namespace, root: Path) -> None:
    exe = shutil.which("apiprof-lsp", path=str(Path(sys.executable).parent)) or "apiprof-lsp"
    ours, jedi_only = (
        await RawClient.start([exe], root),
        await RawClient.start([exe, "--jedi-only"], root),
    )
    completion_src = "import synthpkg.big as big\nbig."
    hover_lines = [f"m.func_{i:04d}(1)" for i in range(BIG)]
    hover_src = f"import synthpkg.{HOVER_MODULE} as m\n" + "\n".join(hover_lines) + "\n"
    uris = {}
    hints_src = hint_source()
    hint_lines = hints_src.count("\n") + 1
    for client in (ours, jedi_only):
        for name, text in (
            ("complete.py", completion_src),
            ("hover.py", hover_src),
            ("hints.py", hints_src),
        ):
            uri = (root / name).as_uri()
            document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
            client.notify("textDocument/didOpen", {"textDocument": document})
            uris[name] = uri

    def completion(client):
        position = {"line": 1, "character": 4}
        return client.request(
            "textDocument/completion",
            {"textDocument": {"uri": uris["complete.py"]}, "position": position},
        )

    def hover(client, i):
        position = {"line": 1 + i % BIG, "character": 4}
        return client.request(
            "textDocument/hover", {"textDocument": {"uri": uris["hover.py"]}, "position": position}
        )

    def hints(client, first, last):
        return client.request(
            "textDocument/inlayHint",
            {
                "textDocument": {"uri": uris["hints.py"]},
                "range": {
                    "start": {"line": first, "character": 0},
                    "end": {"line": last, "character": 0},
                },
            },
        )

    versions = {id(ours): 1, id(jedi_only): 1}

    def edit(client, i):
        """Type one character into a comment, as someone typing would (a new version)."""
        versions[id(client)] += 1
        line = 8 + (i * 37) % (hint_lines - 10)
        position = {"line": line, "character": 0}
        client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uris["hints.py"], "version": versions[id(client)]},
                "contentChanges": [{"range": {"start": position, "end": position}, "text": "#\n"}],
            },
        )

    async def settle(client):
        """Until the background has resolved every call jedi must name (first open only)."""
        await hints(client, 0, hint_lines)
        for _ in range(1200):
            if not (await client.request("apiprof/latencyReport", None))["background"]:
                return
            await asyncio.sleep(0.1)

    items = (await completion(ours))["items"]
    hinted = sum(
        1 for i in items if i.get("labelDetails", {}).get("description", "").startswith("≈")
    )
    sample = await hover(ours, 0)
    assert sample and "synthpkg.m001.func_0000" in sample["contents"]["value"], (
        "hover found no profile"
    )
    for _ in range(5):  # warm jedi's caches in both servers
        await completion(jedi_only)
        await completion(ours)
        await hover(jedi_only, 0)
    started = time.perf_counter()
    await asyncio.gather(settle(ours), settle(jedi_only))
    settle_s = time.perf_counter() - started
    shown = await hints(ours, 0, hint_lines)

    times: dict[str, list[float]] = {
        k: []
        for k in (
            *("c_ours", "c_jedi", "h_ours", "h_jedi", "hw_ours", "hw_jedi"),
            *("iv_ours", "iv_jedi", "if_ours", "if_jedi", "ie_ours", "ie_jedi"),
        )
    }
    for i in range(args.rounds):
        # distinct names: every hover is the first lookup of its name (cold per-name cache)
        times["h_ours"].append(await timed(hover(ours, i + 1)))
        times["h_jedi"].append(await timed(hover(jedi_only, i + 1)))
        times["hw_ours"].append(await timed(hover(ours, 0)))
        times["hw_jedi"].append(await timed(hover(jedi_only, 0)))
        times["c_ours"].append(await timed(completion(ours)))
        times["c_jedi"].append(await timed(completion(jedi_only)))
        first = (i * 53) % (hint_lines - VIEWPORT)  # scrolling: a different viewport each time
        times["iv_ours"].append(await timed(hints(ours, first, first + VIEWPORT)))
        times["iv_jedi"].append(await timed(hints(jedi_only, first, first + VIEWPORT)))
        times["if_ours"].append(await timed(hints(ours, 0, hint_lines)))
        times["if_jedi"].append(await timed(hints(jedi_only, 0, hint_lines)))
        for client, key in ((ours, "ie_ours"), (jedi_only, "ie_jedi")):
            edit(client, i)
            times[key].append(await timed(hints(client, 0, hint_lines + i)))

    script_times = []
    project = jedi.Project(root)
    for _ in range(args.rounds // 4 or 1):
        started = time.perf_counter()
        jedi.Script(completion_src, path=root / "complete.py", project=project).complete(2, 4)
        script_times.append((time.perf_counter() - started) * 1e3)

    reports = {}
    for label, client in (("ours", ours), ("jedi", jedi_only)):
        report = await client.request("apiprof/latencyReport", None)
        reports[label] = {m["method"]: m for m in report["methods"]}
        await client.close()

    print(
        f"completion list: {len(items)} items, {hinted} with a cost hint; {args.rounds} rounds per row"
    )
    print(
        f"inlay hints: {hint_lines}-line file, {len(shown)} hints shown; calls jedi must name were "
        f"resolved in the background in {settle_s:.1f} s after the file opened\n"
    )
    print(f"{'request (client round trip, ms)':<48}{'p50':>8}{'p95':>8}")
    rows = [
        ("completion `big.` — apiprof-lsp", "c_ours"),
        ("completion `big.` — jedi-only server", "c_jedi"),
        ("hover, new name each time — apiprof-lsp", "h_ours"),
        ("hover, new name each time — jedi-only", "h_jedi"),
        ("hover, same name — apiprof-lsp", "hw_ours"),
        ("hover, same name — jedi-only", "hw_jedi"),
        (f"inlay hints, {VIEWPORT}-line viewport — apiprof-lsp", "iv_ours"),
        (f"inlay hints, {VIEWPORT}-line viewport — jedi-only", "iv_jedi"),
        ("inlay hints, whole file — apiprof-lsp", "if_ours"),
        ("inlay hints, whole file — jedi-only", "if_jedi"),
        ("inlay hints after an edit — apiprof-lsp", "ie_ours"),
        ("inlay hints after an edit — jedi-only", "ie_jedi"),
    ]
    for title, key in rows:
        p50, p95 = percentiles(times[key])
        print(f"{title:<48}{p50:>8.2f}{p95:>8.2f}")
    p50, p95 = percentiles(script_times)
    print(f"{'in-process jedi.Script().complete()':<48}{p50:>8.2f}{p95:>8.2f}")

    print("\nserver-side handler time (apiprof/latencyReport, ms)")
    for method in ("textDocument/completion", "textDocument/hover", "textDocument/inlayHint"):
        o, j = reports["ours"][method], reports["jedi"][method]
        print(
            f"  {method:<28} ours p50 {o['p50_ms']:7.2f} p95 {o['p95_ms']:7.2f} | "
            f"jedi-only p50 {j['p50_ms']:7.2f} p95 {j['p95_ms']:7.2f}"
        )

    print("\nadded latency, apiprof-lsp − jedi-only (paired per round):")
    for title, ours_key, base_key, target in (
        ("completion (1000 items)", "c_ours", "c_jedi", 20.0),
        ("hover (cold name)", "h_ours", "h_jedi", 5.0),
        ("hover (warm name)", "hw_ours", "hw_jedi", 5.0),
        ("inlay hints (viewport)", "iv_ours", "iv_jedi", 20.0),
        ("inlay hints (whole file)", "if_ours", "if_jedi", 20.0),
        ("inlay hints (after edit)", "ie_ours", "ie_jedi", 20.0),
    ):
        a50, a95 = percentiles(times[ours_key])
        b50, b95 = percentiles(times[base_key])
        d50, d95 = percentiles(
            [a - b for a, b in zip(times[ours_key], times[base_key], strict=True)]
        )
        verdict = "OK" if a95 - b95 <= target else "OVER"
        print(
            f"  {title:<24} p50 {a50 - b50:+6.2f}  p95 {a95 - b95:+6.2f} ms  "
            f"(paired differences: p50 {d50:+6.2f}, p95 {d95:+6.2f})  target p95 ≤ {target:g} ms: {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entry-points", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="build the workspace in DIR and keep it")
    parser.add_argument(
        "--workspace-venv",
        action="store_true",
        help="resolve imports in a virtualenv in the workspace",
    )
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="apiprof-lsp-bench-"))
    try:
        write_sources(root)
        if args.workspace_venv:
            subprocess.run(
                [sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True
            )
            print(f"workspace virtualenv: {root / '.venv'}")
        seconds = generate_db(root / "apiprof.db", args.entry_points)
        size = (root / "apiprof.db").stat().st_size / 2**20
        print(
            f"database: {args.entry_points:,} entry points in {seconds:.2f} s ({size:.0f} MiB) at {root / 'apiprof.db'}"
        )
        asyncio.run(run(args, root))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
