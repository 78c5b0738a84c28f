"""Collected programs for tests and benchmarks: a reference database and a subprocess run with
collection switched on through the installed start-up hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

from apiprof.db.schema import open_db
from apiprof.db.store import ADD_EDGES_SQL, store_entry_points
from apiprof.model.records import EntryKind, EntryPoint

FUNCTIONS = [
    ("json.dumps", "json"),
    ("json.loads", "json"),
    ("textwrap.wrap", "textwrap"),
    ("textwrap.dedent", "textwrap"),
    ("statistics.mean", "statistics"),
]


def make_reference(path: Path, extra: list[tuple[str, str, EntryKind]] = (), edges=()) -> Path:
    """A reference database naming a few stdlib APIs (what `apiprof sync` would bring)."""
    db = open_db(path)
    entries = [EntryPoint(q, m.split(".")[0], m, EntryKind.FUNCTION) for q, m in FUNCTIONS] + [
        EntryPoint(q, m.split(".")[0], m, kind) for q, m, kind in extra
    ]
    store_entry_points(db, entries)
    with db.conn:
        db.conn.executemany(ADD_EDGES_SQL, list(edges))
    db.conn.close()
    return path


def collect_env(home: Path, reference: Path | None = None, **settings: object) -> dict[str, str]:
    """Environment of a program collected at rate 1 with the whole program time as budget (so
    the collector starts almost at once), whatever the machine's load, and no API retired for
    another during the short run."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("APIPROF_") and k != "XDG_DATA_HOME"
    }
    env.update(
        APIPROF_HOME=str(home),
        APIPROF_COLLECT="1",
        APIPROF_COLLECT_RATE="1",
        APIPROF_COLLECT_BUDGET="1",
        APIPROF_COLLECT_MAX_LOAD="1000",
        APIPROF_COLLECT_SAMPLES="10000000",
    )
    if reference is not None:
        env["APIPROF_REFERENCE"] = str(reference)
    env.update({f"APIPROF_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def run_program(
    source: str, env: Mapping[str, str], cwd: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess:
    script = cwd / "program.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def spooled_docs(home: Path) -> list[dict]:
    return [json.loads(p.read_bytes()) for p in sorted((home / "spool").glob("*.json"))]


def counts(docs: list[dict], metric: str = "wall_ns") -> dict[str, int]:
    """Calls measured per API over ``docs``."""
    out: dict[str, int] = {}
    for doc in docs:
        for api in doc["apis"]:
            rows = api["metrics"].get(metric, [])
            out[api["qualname"]] = out.get(api["qualname"], 0) + sum(r[1] for r in rows)
    return out


WAIT_FOR_COLLECTOR = """
import json, sys, textwrap, time
def leave_a_cycle():
    # the collector takes its turns after garbage collections, which come as garbage piles
    # up: like most real programs, this one leaves reference cycles behind
    cycle = []
    cycle.append(cycle)
def wait_for_collector():
    # Tests only: a busy machine can delay the collector's start past a short program's end.
    from apiprof.engine.collect import bootstrap
    deadline, calls = time.perf_counter() + 120, 0
    while time.perf_counter() < deadline:
        collector = bootstrap._state["collector"]
        if collector is not None and collector.active:
            return calls
        json.dumps([0]); textwrap.dedent(" x")
        leave_a_cycle()
        calls += 1
        time.sleep(0.005)
    raise SystemExit("the collector never started")
"""

BUSY_PROGRAM = (
    WAIT_FOR_COLLECTOR
    + """
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6
calls = wait_for_collector() if "wait" in sys.argv[2:] else 0
end = time.perf_counter() + seconds
while time.perf_counter() < end:
    json.dumps({"a": [1, 2, 3], "b": "x" * 30})
    textwrap.dedent("    hello\\n    world")
    leave_a_cycle()
    calls += 1
    if calls % 100 == 0:
        time.sleep(0.001)  # like real programs, it waits now and then (the collector gets a turn)
print(json.dumps({"calls": calls, "collector": "apiprof.engine.collect.bootstrap" in sys.modules}))
"""
)
