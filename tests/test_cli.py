"""The command line, run for real in subprocesses: scan, show, merge, scenarios init, errors."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
BIN = Path(sys.executable).parent
FAST = ["--repeat", "3", "--sizes", "10,100,1000", "--quiet"]


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(FIXTURES), *filter(None, [env.get("PYTHONPATH")])])
    env["COLUMNS"] = "200"
    return env


def command(name: str) -> list[str]:
    script = BIN / name
    if script.exists():
        return [str(script)]
    return [
        sys.executable,
        "-c",
        f"import sys; from apiprof.cli import {'scan_main' if name == 'apiprof-scan' else 'main'} as m; sys.exit(m())",
    ]


def run(
    name: str, *args: str, cwd: Path | None = None, timeout: float = 240
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*command(name), *map(str, args)],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """tiny_pkg scanned once by the real `apiprof-scan`, with --summary-json."""
    home = tmp_path_factory.mktemp("cli")
    db, summary = home / "tiny.db", home / "summary.json"
    scenarios = FIXTURES / "tiny_pkg" / "scenarios.toml"
    out = run(
        "apiprof-scan",
        "tiny_pkg",
        "--db",
        db,
        "--scenarios",
        scenarios,
        "--summary-json",
        summary,
        *FAST,
    )
    assert out.returncode == 0, out.stderr
    return home, db, json.loads(summary.read_text())


def test_scan_writes_the_documented_summary_json(scanned):
    _, _, summary = scanned
    [package] = summary["packages"]
    assert package["package"] == "tiny_pkg" and package["status"] == "finished"
    assert package["discovered"] == package["profiled"] >= 7
    assert package["not_profiled"] == [] and package["coverage"] == {
        "profiled": package["profiled"]
    }
    assert package["most_expensive"] and {"qualname", "time_median_ns", "growth"} <= set(
        package["most_expensive"][0]
    )


def test_show_prints_summary_histograms_scenarios_and_growth(scanned):
    _, db, _ = scanned
    out = run("apiprof", "show", "tiny_pkg.sort_numbers", "--db", db)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("tiny_pkg.sort_numbers(")
    assert (
        "CPU time (sampled calls): median" in text
        and "allocated (inclusive)" in text
        and "█" in text
    )
    assert "file:scenarios.toml#sort-reversed [file] sizes 10, 100, 1000" in text
    assert "growth:" in text


def test_show_suggests_close_names_for_a_typo(scanned):
    _, db, _ = scanned
    out = run("apiprof", "show", "tiny_pkg.sort_numbrs", "--db", db)
    assert out.returncode == 2
    assert "did you mean tiny_pkg.sort_numbers" in out.stderr


def test_show_json_has_the_stable_fields(scanned):
    _, db, _ = scanned
    out = run("apiprof", "show", "tiny_pkg.sort_numbers", "--db", db, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["qualname"] == "tiny_pkg.sort_numbers"
    cpu = data["metrics"]["cpu_ns"]
    assert {"count", "mean", "median", "p90", "unit", "buckets"} <= set(cpu)
    assert cpu["unit"] == "ns" and cpu["count"] == sum(b["count"] for b in cpu["buckets"])
    assert all(b["high"] == 2 * b["low"] for b in cpu["buckets"] if b["bucket"] >= 0)
    assert data["metrics"]["alloc_incl_bytes"]["unit"] == "B"
    assert data["growth_class"] in {"O(1)", "O(log n)", "O(n)", "O(n log n)", "O(n^2)", "O(2^n)"}
    assert data["scenario_count"] == len(data["scenarios"]) >= 2
    assert data["coverage"] == {"status": "profiled", "reason": ""}


def test_merge_adds_databases_once_each_and_refuses_itself(scanned, tmp_path):
    _, db, _ = scanned
    out_db = tmp_path / "merged.db"
    twice = run("apiprof", "merge", out_db, db, db)
    assert twice.returncode == 2 and "merged before" in twice.stderr, twice.stderr
    assert not out_db.exists() or sqlite3.connect(out_db).execute(
        "SELECT COUNT(*) FROM buckets"
    ).fetchone() == (0,), "a refused merge adds nothing"
    out = run("apiprof", "merge", "--allow-repeats", out_db, db, db)
    assert out.returncode == 0, out.stderr
    query = "SELECT SUM(count) FROM buckets WHERE metric = 'calls_per_run'"
    single = sqlite3.connect(db).execute(query).fetchone()[0]
    assert sqlite3.connect(out_db).execute(query).fetchone()[0] == 2 * single
    same = run("apiprof", "merge", db, db)
    assert same.returncode == 2 and "is the output file itself" in same.stderr


def test_help_documents_every_option():
    out = run("apiprof-scan", "--help")
    assert out.returncode == 0
    for option in (
        "--db",
        "--scenarios",
        "--no-docstrings",
        "--no-synth",
        "--sizes",
        "--jobs",
        "--timeout",
        "--scenario-timeout",
        "--memory-mb",
        "--no-sandbox-guard",
        "--resume",
        "--summary-json",
        "--quiet",
        "wall time",
    ):
        assert option in out.stdout, option
    assert "--tests PATH" in out.stdout and "--tests-timeout" in out.stdout
    show = run("apiprof", "show", "--help")
    assert "p90" in show.stdout and "growth_class" in show.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["apiprof-scan", "no_such_package_xyz"], 2, "no package named 'no_such_package_xyz'"),
        (
            ["apiprof-scan", "tiny_pkg", "--scenarios", FIXTURES / "bad_scenarios.toml"],
            2,
            "bad_scenarios.toml:7: unknown key `size`",
        ),
        (["apiprof", "show", "tiny_pkg.nothing", "--db", "missing.db"], 3, "no such database"),
        (["apiprof-scan", "tiny_pkg", "--jobs", "0"], 2, "must be at least 1"),
    ],
)
def test_errors_are_one_line_with_an_exit_code(tmp_path, args, code, message):
    out = run(
        *args, *(["--db", tmp_path / "x.db"] if args[0] == "apiprof-scan" else []), cwd=tmp_path
    )
    assert out.returncode == code, out.stderr
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_foreign_database_is_refused(tmp_path):
    foreign = tmp_path / "notes.db"
    sqlite3.connect(foreign).execute("CREATE TABLE notes (x)").connection.commit()
    for args in (
        ["apiprof-scan", "tiny_pkg", "--db", foreign],
        ["apiprof", "show", "x", "--db", foreign],
    ):
        out = run(*args)
        assert (
            out.returncode == 3
            and "not written by apiprof" in out.stderr
            and "Traceback" not in out.stderr
        )


def test_a_killed_scan_resumes_where_it_stopped(tmp_path):
    db = tmp_path / "killed.db"
    slow = [
        "--scenarios",
        FIXTURES / "tiny_pkg" / "slow_scenarios.toml",
        *FAST,
    ]  # its last entry point pauses
    proc = subprocess.Popen(
        [*command("apiprof-scan"), "tiny_pkg", "--db", str(db), *map(str, slow)],
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    done = 0
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and done < 1:
            time.sleep(0.2)
            try:
                done = (
                    sqlite3.connect(db, timeout=5)
                    .execute("SELECT COUNT(*) FROM coverage")
                    .fetchone()[0]
                )
            except sqlite3.OperationalError:
                done = 0  # not created yet
        assert proc.poll() is None, (
            "the scan finished before it could be killed; the test needs a slower scan"
        )
        # while the scan still runs
        alive = run("apiprof-scan", "tiny_pkg", "--db", db, "--resume", *FAST)
        assert (
            alive.returncode == 2
            and f"is still running (process {proc.pid} on this host)" in alive.stderr
        )
        assert f"kill {proc.pid}" in alive.stderr and "Traceback" not in alive.stderr
        assert proc.poll() is None, "the refused --resume must leave the running scan alone"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT status FROM scans").fetchall() == [("running",)]
    conn.close()
    out = run(
        "apiprof-scan",
        "tiny_pkg",
        "--db",
        db,
        "--resume",
        "--summary-json",
        tmp_path / "s.json",
        *FAST,
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "s.json").read_text())["packages"][0]
    assert summary["profiled"] == summary["discovered"]
    assert summary["resumed_skipped"] >= 1, (
        "entry points stored before the kill are not scanned again"
    )
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT status FROM scans").fetchall() == [("finished",)]
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_scenarios_init_writes_a_scaffold(tmp_path):
    target = tmp_path / "tiny.toml"
    out = run(
        "apiprof",
        "scenarios",
        "init",
        "tiny_pkg",
        "-o",
        target,
        "--scenarios",
        FIXTURES / "tiny_pkg" / "scenarios.toml",
    )
    assert out.returncode == 0, out.stderr
    assert target.exists() and "format = 1" in target.read_text()
    again = run("apiprof", "scenarios", "init", "tiny_pkg", "-o", target)
    assert again.returncode == 2 and "already exists" in again.stderr
