"""Database integrity under concurrency, corruption and hostile inputs; a killed scanner's cleanup.

Real SQLite files and real processes: two creators of one new file, two resumers of one killed
scan, writers sharing a fresh file, a hard link to the output, garbage in the middle of a file,
read-only files and folders, forged rows in a merge input, scenario files built to blow the stack,
and a scanner killed with SIGKILL mid-scan.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from apiprof.db.merge import AlreadyMerged, merge_files
from apiprof.db.query import summary
from apiprof.db.schema import SCHEMA_VERSION, open_db, schema_version
from apiprof.db.store import add_histograms, begin_scan, store_entry_points
from apiprof.errors import DatabaseError, UsageError
from apiprof.model.histogram import Histogram
from apiprof.model.records import Calibration, EntryKind, EntryPoint, Environment, Metric

FIXTURES = Path(__file__).parent / "fixtures"
ENV = Environment("3.12.1", "cpython", "Linux", "x86_64", "test cpu")


def python(code: str, *args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def cli(
    *args: object, extra_env: dict[str, str] | None = None, **kwargs
) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(FIXTURES), **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-m", "apiprof.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
        **kwargs,
    )


def json_db(path: Path, median_ns: float = 61_000.0) -> Path:
    """A database holding json.dumps's wall time (100 calls around ``median_ns``)."""
    db = open_db(path)
    add_histograms(
        db, "json.dumps", {Metric.WALL: Histogram.of([median_ns] * 100)}, environment=ENV
    )
    db.conn.close()
    return path


# -- concurrent writers ---------------------------------------------------------------------------

CREATE_AND_WRITE = """
    import sys, time
    from pathlib import Path
    from apiprof.db.schema import open_db
    from apiprof.db.store import add_histograms
    from apiprof.model.histogram import Histogram
    from apiprof.model.records import Metric
    path, go, name = sys.argv[1:]
    while not Path(go).exists():
        time.sleep(0.001)
    db = open_db(path, timeout=30)
    for i in range(20):
        add_histograms(db, f"pkg.{name}{i}", {Metric.WALL: Histogram.of([1000.0])})
    print("ok")
"""


def test_two_scans_creating_one_new_database_both_succeed(tmp_path):
    """Both take turns on the schema and then on the writes (no "duplicate column", no
    "not written by apiprof", no "locked" long before the timeout)."""
    for round_ in range(3):
        path, go = tmp_path / f"new{round_}.db", tmp_path / f"go{round_}"
        writers = [python(CREATE_AND_WRITE, str(path), str(go), name) for name in "ab"]
        time.sleep(0.5)  # both wait at the starting line
        go.touch()
        for writer in writers:
            out, err = writer.communicate(timeout=120)
            assert writer.returncode == 0 and out.strip() == "ok", err[-2000:]
        db = open_db(path, readonly=True)
        assert schema_version(db) == SCHEMA_VERSION
        assert db.execute("SELECT COUNT(DISTINCT qualname) FROM buckets").fetchone() == (40,)
        db.conn.close()


def test_one_resume_owner_at_a_time(tmp_path):
    """Two resumers of a killed scan: one takes it over, the other is refused naming it."""
    path = tmp_path / "killed.db"
    db = open_db(path)
    scan_id = begin_scan(db, "pkg", "1", ENV, Calibration(), {})
    db.execute("UPDATE scans SET pid = 999999999, process_started = '1' WHERE id = ?", [scan_id])
    db.conn.commit()
    db.conn.close()
    take_over = """
        import sys, time
        from pathlib import Path
        from apiprof.db.schema import open_db
        from apiprof.db.store import take_over_scan
        path, go = sys.argv[1:]
        while not Path(go).exists():
            time.sleep(0.001)
        owner = take_over_scan(open_db(path), 1)
        print(f"refused, owned by {owner.pid}" if owner else "took it", flush=True)
        sys.stdin.read()  # stay alive (the owner) until the test is done
    """
    go = tmp_path / "go"
    resumers = [python(take_over, str(path), str(go), stdin=subprocess.PIPE) for _ in range(2)]
    try:
        time.sleep(0.5)
        go.touch()
        said = {resumer.pid: resumer.stdout.readline().strip() for resumer in resumers}
    finally:
        for resumer in resumers:
            resumer.stdin.close()
            resumer.wait(timeout=60)
    winners = [pid for pid, line in said.items() if line == "took it"]
    assert len(winners) == 1, said
    losers = [line for line in said.values() if line != "took it"]
    assert losers == [f"refused, owned by {winners[0]}"], said


# -- merge: identity, repeats, forged numbers ------------------------------------------------------


def test_self_merge_through_a_hard_link_is_refused(tmp_path):
    out = json_db(tmp_path / "out.db")
    os.link(out, tmp_path / "alias.db")
    with pytest.raises(UsageError, match="is the output file itself"):
        merge_files(out, [tmp_path / "alias.db"])
    with pytest.raises(UsageError, match="is the output file itself"):
        merge_files(out, [tmp_path / "." / "out.db"])


def test_an_input_merged_before_is_refused_unless_asked(tmp_path):
    source = tmp_path / "source.db"
    db = open_db(source)
    begin_scan(db, "json", "1", ENV, Calibration(), {})
    add_histograms(db, "json.dumps", {Metric.WALL: Histogram.of([61_000.0] * 10)}, environment=ENV)
    db.conn.close()
    out = tmp_path / "out.db"
    merge_files(out, [source])
    with pytest.raises(AlreadyMerged, match="merged before"):
        merge_files(out, [source])
    copy = tmp_path / "copy.db"
    shutil.copy(source, copy)  # the same scans under another name
    with pytest.raises(AlreadyMerged):
        merge_files(out, [copy])
    merge_files(out, [copy], allow_repeats=True)
    reader = open_db(out, readonly=True)
    assert summary(reader, "json.dumps").histograms[Metric.WALL].count == 20
    reader.conn.close()


def forge(path: Path, sql: str, *params: object) -> Path:
    json_db(path, median_ns=1000.0)
    conn = sqlite3.connect(path)
    conn.execute(sql, params)
    conn.commit()
    conn.close()
    return path


INSERT = "INSERT INTO buckets VALUES (?, 'wall_ns', 'forged', -1, ?, ?, ?, ?, ?)"
SUB = "INSERT INTO sub_buckets VALUES (?, 'wall_ns', 'forged', -1, ?, ?, ?, ?, ?, ?)"


@pytest.mark.parametrize(
    ("forged", "reason"),
    [
        ((INSERT, "json.dumps", ENV.id, 16, -5, -5e5, 5e10), "negative count"),
        ((INSERT, "json.dumps", ENV.id, 16, 10, 1.0, 1.0), "sums to 1 for 10 values"),
        ((INSERT, "json.dumps", ENV.id, 40, 10**9, 1649e9 * 1e9, 1.0), "sum of squares"),
        (
            (INSERT, "json.dumps", ENV.id, 90, 1, 2.0**90, 2.0**180),
            "beyond the 6.048e+14 ns any real wall time can reach",
        ),
        (
            (INSERT, "../../etc/passwd", ENV.id, 16, 1, 70000.0, 70000.0**2),
            "not a dotted Python name",
        ),
        (
            (
                "INSERT INTO entry_points (qualname, package, module, kind) "
                "VALUES ('json/../x', 'json', 'json', 'function')",
            ),
            "not a dotted Python name",
        ),
        (
            (
                "INSERT INTO failures (qualname, position, scan_id, kind) "
                "VALUES ('json/../x', 0, 1, 'crashed')",
            ),
            "a failure row's name",
        ),
        (
            (SUB, "json.dumps", ENV.id, 16, 9, 1, 7e4, 7e4**2),
            "sub-bucket 9 of bucket 16 is outside",
        ),
        ((SUB, "json.dumps", ENV.id, 16, 0, 1, 8e4, 8e4**2), "sub-bucket 16.0 sums to 80000"),
        ((SUB, "json.dumps", ENV.id, 16, 0, 1, 7e4, 7e4**2), "hold more values than the bucket"),
        ((SUB, "json/../x", ENV.id, 16, 0, 1, 7e4, 7e4**2), "a sub-bucket row's name"),
    ],
)
def test_merge_refuses_numbers_outside_physical_sense_and_bad_names(tmp_path, forged, reason):
    """json.dumps keeps its 61 µs median: nothing of a forged input is added."""
    out = json_db(tmp_path / "out.db")
    bad = forge(tmp_path / "bad.db", *forged)
    with pytest.raises(DatabaseError, match="refused, nothing was merged") as error:
        merge_files(out, [bad])
    assert reason in str(error.value)
    reader = open_db(out, readonly=True)
    median = summary(reader, "json.dumps").histograms[Metric.WALL].median
    reader.conn.close()
    assert 50_000 < median < 70_000


# -- broken and read-only files --------------------------------------------------------------------


def corrupt_buckets(path: Path) -> None:
    """Overwrite the root page of the buckets table with garbage (the scans table stays)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'buckets'").fetchone()[0]
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    with open(path, "r+b") as stream:
        stream.seek((root - 1) * page_size)
        stream.write(os.urandom(page_size))


def test_garbage_in_the_middle_of_a_database_is_a_clear_exit_3(tmp_path):
    path = tmp_path / "broken.db"
    db = open_db(path)
    store_entry_points(db, [EntryPoint("tiny_pkg.f", "tiny_pkg", "tiny_pkg", EntryKind.FUNCTION)])
    add_histograms(db, "tiny_pkg.f", {Metric.WALL: Histogram.of([1000.0] * 10)}, environment=ENV)
    db.conn.close()
    corrupt_buckets(path)
    scenarios = FIXTURES / "tiny_pkg" / "scenarios.toml"
    out = cli("scan", "tiny_pkg", "--db", path, "--scenarios", scenarios, "--repeat", "1", "-q")
    assert out.returncode == 3, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert "the database failed during the scan" in out.stderr
    assert "malformed" in out.stderr
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT status FROM scans").fetchall() == [("interrupted",)]
    conn.close()


def read_only_view(folder: Path) -> list[str]:
    """A command prefix that sees ``folder`` read-only, even to root (a read-only mount)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        for file in folder.iterdir():
            file.chmod(0o444)
        return []
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is needed to make a read-only folder for root")
    return ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(folder), str(folder), "--"]


def test_a_read_only_database_can_be_read_by_show_and_merge(tmp_path):
    folder = tmp_path / "readonly"
    folder.mkdir()
    path = json_db(folder / "ro.db")  # a WAL database: readers normally need its -shm file
    out = tmp_path / "out.db"
    prefix = read_only_view(folder)
    env = {**os.environ, "PYTHONPATH": str(FIXTURES)}
    run = [*prefix, sys.executable, "-m", "apiprof.cli"]
    try:
        shown = subprocess.run(
            [*run, "show", "json.dumps", "--db", str(path), "--json"],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        merged = subprocess.run(
            [*run, "merge", str(out), str(path)],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
    finally:
        folder.chmod(0o755)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["metrics"]["wall_ns"]["count"] == 100
    assert merged.returncode == 0, merged.stderr
    assert not (folder / "ro.db-shm").exists() or prefix == []


# -- scenario files built to break the parser ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("format = 1\nx = " + "[" * 50_000 + "]" * 50_000 + "\n", "nest deeper than apiprof reads"),
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = "json.dumps"\ncall = "'
            + "+".join(["1"] * 200_000)
            + '"\n',
            "is longer than 65536 characters",
        ),
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = "json.dumps"\ncall = "'
            + "+".join(["1"] * 30_000)
            + '"\n',
            "nests too deeply to compile",
        ),
    ],
)
def test_scenario_files_built_to_blow_the_stack_fail_clearly(tmp_path, text, reason):
    scenarios = tmp_path / "deep.toml"
    scenarios.write_text(text)
    out = cli("scan", "tiny_pkg", "--db", tmp_path / "x.db", "--scenarios", scenarios, "-q")
    assert out.returncode == 2, out.stderr[-2000:]
    assert reason in out.stderr and "Traceback" not in out.stderr


# -- a killed scanner's leftovers ------------------------------------------------------------------


def sandbox_folder(pid: int, temp: Path) -> Path | None:
    base = temp / f"apiprof-sandboxes-{os.getuid()}"
    found = list(base.glob(f"*-{pid}-*")) if base.is_dir() else []
    return found[0] if found else None


def processes_in(folder: Path) -> list[int]:
    inside = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(folder)):
                inside.append(int(pid))
        except OSError:
            continue
    return inside


@pytest.mark.parametrize("isolation", ["auto", "process"])
def test_a_killed_scanners_workers_die_and_the_next_scan_removes_its_sandboxes(tmp_path, isolation):
    db = tmp_path / "killed.db"
    slow = FIXTURES / "tiny_pkg" / "slow_scenarios.toml"  # pauses in a worker
    args = ["--db", db, "--scenarios", slow, "--repeat", "1", "--isolation", isolation, "-q"]
    # a temp folder of its own: any other scan on this machine (another test run, a helper's
    # scan) would otherwise clean the killed scanner's sandbox up before the next scan here
    temp = tmp_path / "tmp"
    temp.mkdir()
    private = {"TMPDIR": str(temp)}
    scanner = subprocess.Popen(
        [sys.executable, "-m", "apiprof.cli", "scan", "tiny_pkg", *map(str, args)],
        env={**os.environ, "PYTHONPATH": str(FIXTURES), **private},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        folder, deadline = None, time.monotonic() + 120
        while time.monotonic() < deadline and not (folder and processes_in(folder)):
            time.sleep(0.1)
            folder = sandbox_folder(scanner.pid, temp)
        assert folder and processes_in(folder), "no worker appeared"
    finally:
        scanner.send_signal(signal.SIGKILL)
        scanner.wait()
    deadline = time.monotonic() + 30  # a hang guard: the kernel ends them at once
    while processes_in(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_in(folder) == [], "a worker outlived its scanner"
    assert folder.exists(), "the killed scanner had no chance to clean up"
    quick = ["--scenarios", FIXTURES / "tiny_pkg" / "scenarios.toml", "--no-docstrings"]
    summary = tmp_path / "s.json"
    out = cli(
        "scan", "tiny_pkg", *args[:2], *quick, "--summary-json", summary, "-q", extra_env=private
    )
    assert out.returncode == 0, out.stderr[-2000:]
    warnings = json.loads(summary.read_text())["packages"][0]["warnings"]
    assert any("removed 1 sandbox folder(s)" in w for w in warnings), warnings
    assert not folder.exists()


def test_a_fresh_database_shared_by_two_scans_does_not_fail_locked(tmp_path):
    path = tmp_path / "shared.db"
    scenarios = FIXTURES / "tiny_pkg" / "scenarios.toml"
    args = ["--db", path, "--scenarios", scenarios, "--repeat", "1", "--no-synth", "-q"]
    scans = [
        subprocess.Popen(
            [sys.executable, "-m", "apiprof.cli", "scan", "tiny_pkg", *map(str, args)],
            env={**os.environ, "PYTHONPATH": str(FIXTURES)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for scan in scans:
        _, err = scan.communicate(timeout=600)
        assert scan.returncode == 0, err[-2000:]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*), MIN(status) FROM scans").fetchone() == (2, "finished")
    conn.close()
