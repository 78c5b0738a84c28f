"""The SQLite store: additive writes, merge, migrations, WAL, killed writers, refusals."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from apiprof.db import details, query
from apiprof.db.merge import merge_files
from apiprof.db.schema import SCHEMA_VERSION, migrate, open_db, schema_version
from apiprof.db.store import (
    begin_scan,
    finish_scan,
    record_scan_conditions,
    store_batch,
    store_entry_points,
)
from apiprof.errors import DatabaseError
from apiprof.model.histogram import Histogram
from apiprof.model.records import (
    Calibration,
    CallEdge,
    Coverage,
    CoverageRecord,
    Disturbance,
    EntryKind,
    EntryPoint,
    Environment,
    Failure,
    Measurement,
    Metric,
    ScanBatch,
    Scenario,
    ScenarioSource,
)

ENV = Environment("3.12.1", "cpython", "Linux", "x86_64", "test cpu")
EP = EntryPoint("pkg.f", "pkg", "pkg", EntryKind.FUNCTION, "(n)", "Do f.")


def sample_batch(scale: float = 1.0) -> ScanBatch:
    """CPU time growing linearly with size, plus an unsized allocation histogram."""
    measurements = [
        Measurement(
            "pkg.f", "synth:pkg.f", Metric.CPU, Histogram.of([100.0 * n * scale] * 5), size=n
        )
        for n in (10, 100, 1000)
    ]
    measurements.append(
        Measurement("pkg.f", "doc:pkg.f#0", Metric.ALLOC_INCL, Histogram.of([3, 7, 22]))
    )
    return ScanBatch(
        measurements=measurements,
        edges=[CallEdge("pkg.f", "pkg.g", 4)],
        coverage=[CoverageRecord("pkg.f", Coverage.PROFILED)],
        scenarios=[Scenario("synth:pkg.f", "pkg.f", ScenarioSource.SYNTHESIZED, "", "n")],
    )


def write_scan(path, batch: ScanBatch) -> int:
    db = open_db(path)
    scan_id = begin_scan(db, "pkg", "1.0", ENV, Calibration(), {})
    store_entry_points(db, [EP])
    store_batch(db, batch, environment_id=ENV.id, package="pkg", scan_id=scan_id)
    record_scan_conditions(db, scan_id, 30_000.0, Disturbance(runs=7, disturbed_runs=1))
    finish_scan(db, scan_id)
    db.conn.close()
    return scan_id


def counts(path) -> dict[str, int]:
    db = open_db(path, readonly=True)
    try:
        return {str(m): h.count for m, h in query.histograms(db, "pkg.f").items()}
    finally:
        db.conn.close()


def test_storing_twice_doubles_counts_and_sums(tmp_path):
    path = tmp_path / "a.db"
    write_scan(path, sample_batch())
    once = counts(path)
    write_scan(path, sample_batch())
    assert counts(path) == {k: 2 * v for k, v in once.items()}
    db = open_db(path, readonly=True)
    assert db.execute("SELECT count FROM call_edges").fetchone()[0] == 8
    assert db.execute("SELECT COUNT(*), MAX(status) FROM scans").fetchone() == (2, "finished")
    hist = query.histograms(db, "pkg.f", metric=Metric.ALLOC_INCL)[Metric.ALLOC_INCL]
    assert hist.total == 2 * (3 + 7 + 22)
    db.conn.close()


def test_sized_measurements_get_a_growth_fit(tmp_path):
    path = tmp_path / "a.db"
    write_scan(path, sample_batch())
    db = open_db(path, readonly=True)
    fits = query.growth(db, "pkg.f")
    assert [(f.metric, f.growth_class, f.size_axis) for f in fits] == [(Metric.CPU, "O(n)", "n")]
    assert query.summary(db, "pkg.f").scenarios == 2
    db.conn.close()


def test_merge_adds_databases_and_keeps_inputs_untouched(tmp_path):
    a, b, out = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "out.db"
    write_scan(a, sample_batch())
    write_scan(b, sample_batch(scale=2.0))
    before_a = counts(a)
    merge_files(out, [a, b])
    assert counts(out) == {k: 2 * v for k, v in before_a.items()}
    assert counts(a) == before_a
    db = open_db(out, readonly=True)
    cpu = query.histograms(db, "pkg.f", metric=Metric.CPU)[Metric.CPU]
    assert cpu.total == pytest.approx(3 * 100.0 * (10 + 100 + 1000) * 5)
    assert db.execute("SELECT COUNT(*) FROM scans").fetchone()[0] == 2
    # what each scan saw of the machine travels with it (a cluster's databases are merged)
    assert [json.loads(d) for (d,) in db.execute("SELECT disturbance FROM scans")] == [
        Disturbance(runs=7, disturbed_runs=1).to_json()
    ] * 2
    assert db.execute("SELECT count FROM call_edges").fetchone()[0] == 8
    db.conn.close()


def test_merge_keeps_profiled_over_a_failure(tmp_path):
    good, bad, out = tmp_path / "good.db", tmp_path / "bad.db", tmp_path / "out.db"
    write_scan(good, sample_batch())
    write_scan(bad, ScanBatch(coverage=[CoverageRecord("pkg.f", Coverage.CRASHED, "boom")]))
    merge_files(out, [good, bad])
    db = open_db(out, readonly=True)
    assert (
        db.execute("SELECT status FROM coverage WHERE qualname = 'pkg.f'").fetchone()[0]
        == "profiled"
    )
    db.conn.close()


def test_merge_carries_the_failures_behind_each_verdict_it_takes(tmp_path):
    failed, later, out = tmp_path / "failed.db", tmp_path / "later.db", tmp_path / "out.db"
    why = Failure(Coverage.NO_ARGUMENTS, "raised KeyError", "Traceback ...", "synth:pkg.f", "call")
    write_scan(
        failed, ScanBatch(coverage=[CoverageRecord("pkg.f", Coverage.NO_ARGUMENTS, "x", (why,))])
    )
    merge_files(out, [failed])
    db = open_db(out, readonly=True)
    assert [(f.scenario_id, f.phase, f.reason) for f in details.failures(db, "pkg.f")] == [
        ("synth:pkg.f", "call", "raised KeyError")
    ]
    db.conn.close()
    write_scan(later, sample_batch())  # profiled now: its verdict wins and has no failures
    merge_files(out, [later])
    fresh = tmp_path / "fresh.db"
    merge_files(fresh, [later, failed])  # the other order: the failure arrives second
    for merged in (out, fresh):
        db = open_db(merged, readonly=True)
        assert details.failures(db, "pkg.f") == [], "a failure never outlives a profiled verdict"
        db.conn.close()


def test_a_version_1_file_is_migrated_on_open_and_keeps_its_data(tmp_path):
    path = tmp_path / "old.db"
    import sqlite_utils

    old = sqlite_utils.Database(path)
    assert migrate(old, target=1) == 1
    old.execute("INSERT INTO buckets VALUES ('pkg.f', 'cpu_ns', 's', 10, 'env', 3, 5, 50.0, 500.0)")
    old.conn.commit()
    assert "growth" not in old.table_names()
    old.conn.close()
    db = open_db(path)
    assert schema_version(db) == SCHEMA_VERSION
    assert "growth" in db.table_names()
    assert db.execute("SELECT count FROM buckets").fetchone()[0] == 5
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.conn.close()


def test_a_version_2_file_is_readable_as_is_and_gains_scan_owners_on_migration(tmp_path):
    import sqlite_utils

    path = tmp_path / "v2.db"
    old = sqlite_utils.Database(path)
    migrate(old, target=2)
    old["scans"].insert({"package": "pkg", "status": "running", "started_at": "then"})
    old.conn.close()
    reader = open_db(path, readonly=True)  # docs builds and editors need not migrate
    assert schema_version(reader) == 2
    reader.conn.close()
    one = sqlite_utils.Database(tmp_path / "v1.db")
    migrate(one, target=1)
    one.conn.close()
    with pytest.raises(DatabaseError, match="schema 1 is older than 2; open it once read-write"):
        open_db(tmp_path / "v1.db", readonly=True)
    db = open_db(path)
    assert schema_version(db) == SCHEMA_VERSION
    assert db.execute("SELECT package, host, pid FROM scans").fetchall() == [("pkg", None, None)]
    db.conn.close()


def test_still_running_tells_a_live_scanner_from_a_dead_or_recycled_pid():
    from apiprof.model.owner import ScanOwner, process_start_time, still_running, this_process

    me = this_process()
    assert me.pid == os.getpid() and me.process_started.isdigit()
    assert not still_running(me)  # this process resuming its own scan is not "another scanner"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = ScanOwner(me.host, child.pid, process_start_time(child.pid))
        assert still_running(owner)
        assert not still_running(ScanOwner(me.host, child.pid, "1"))  # same pid, another process
        assert not still_running(ScanOwner("elsewhere.example", child.pid, owner.process_started))
    finally:
        child.kill()
        child.wait()
    assert not still_running(owner)


def test_foreign_corrupt_and_newer_files_are_refused(tmp_path):
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    with pytest.raises(DatabaseError, match="not written by apiprof"):
        open_db(foreign)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(DatabaseError, match="not a usable SQLite database"):
        open_db(garbage)
    newer = tmp_path / "newer.db"
    db = open_db(newer)
    db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    db.conn.commit()
    db.conn.close()
    with pytest.raises(DatabaseError, match="newer apiprof"):
        open_db(newer)
    with pytest.raises(DatabaseError, match="no such database"):
        open_db(tmp_path / "missing.db", readonly=True)


def test_a_locked_database_is_reported_not_waited_on_forever(tmp_path):
    from apiprof.engine.scan.store import claim_write_access

    path = tmp_path / "a.db"
    open_db(path).conn.close()
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        db = open_db(path, timeout=0.1)
        with pytest.raises(DatabaseError, match="locked by another process"):
            claim_write_access(db, path)
        db.conn.close()
    finally:
        holder.rollback()
        holder.close()


def test_a_writer_killed_mid_transaction_leaves_a_sound_database(tmp_path):
    path = tmp_path / "a.db"
    write_scan(path, sample_batch())
    committed = counts(path)
    script = textwrap.dedent(
        f"""
        import os, signal
        from apiprof.db.schema import open_db
        db = open_db({str(path)!r})
        db.conn.execute("BEGIN")
        db.conn.executemany(
            "INSERT INTO buckets VALUES ('pkg.f', 'cpu_ns', 'killed', 1, 'env', ?, 1, 1.0, 1.0)",
            [(i,) for i in range(5000)],
        )
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], timeout=60, check=False)
    assert proc.returncode == -9
    db = open_db(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert (
        db.execute("SELECT COUNT(*) FROM buckets WHERE scenario_id = 'killed'").fetchone()[0] == 0
    )
    db.conn.close()
    assert counts(path) == committed


# -- sub-buckets in the database, and what "typical" stands for ------------------------------


def test_sub_buckets_are_stored_additively_and_percentiles_come_from_them(tmp_path):
    import random

    from apiprof.db import query
    from apiprof.db.schema import open_db
    from apiprof.db.store import add_histograms
    from apiprof.model.histogram import Histogram
    from apiprof.model.records import Metric

    rng = random.Random(3)
    values = [rng.lognormvariate(7, 0.6) for _ in range(4_000)]
    db = open_db(tmp_path / "p.db")
    add_histograms(db, "pkg.f", {Metric.WALL: Histogram.of(values[:2_000])})
    add_histograms(db, "pkg.f", {Metric.WALL: Histogram.of(values[2_000:])})
    stored = query.histograms(db, "pkg.f")[Metric.WALL]
    expected = Histogram.of(values)  # merge by addition: counts exact, float sums to rounding
    assert {k: b.count for k, b in stored.subs.items()} == {
        k: b.count for k, b in expected.subs.items()
    }
    assert stored.counts() == expected.counts()
    assert stored.total == pytest.approx(expected.total)
    exact = sorted(values)[len(values) // 2 - 1 : len(values) // 2 + 1]
    assert abs(query.summary(db, "pkg.f").time_median_ns / (sum(exact) / 2) - 1) < 0.02


def test_a_database_from_before_sub_buckets_migrates_and_reads(tmp_path):
    import sqlite_utils

    from apiprof.db import query
    from apiprof.db.schema import SCHEMA_VERSION, migrate, open_db, schema_version
    from apiprof.db.store import add_histograms
    from apiprof.model.histogram import Histogram
    from apiprof.model.records import Metric

    path = tmp_path / "old.db"
    old = sqlite_utils.Database(path)
    migrate(old, SCHEMA_VERSION - 1)
    old.execute(
        "INSERT INTO buckets VALUES ('pkg.g', 'wall_ns', 's', -1, 'env', 6, 2, 200.0, 20000.0)"
    )
    old.conn.commit()
    old.conn.close()
    db = open_db(path)
    assert schema_version(db) == SCHEMA_VERSION
    add_histograms(db, "pkg.g", {Metric.WALL: Histogram.of([100.0])})
    hist = query.histograms(db, "pkg.g")[Metric.WALL]
    assert hist.count == 3 and not hist.has_subs  # old rows: the bucket answers, not partial subs
    assert hist.median == 100.0


def test_typical_figures_stand_for_a_stated_reference_size(tmp_path):
    from apiprof.db import query
    from apiprof.db.schema import open_db
    from apiprof.db.store import store_batch
    from apiprof.model.histogram import Histogram
    from apiprof.model.records import Measurement, Metric, ScanBatch, Scenario, ScenarioSource

    db = open_db(tmp_path / "s.db")
    batch = ScanBatch(
        scenarios=[Scenario("synth:pkg.h", "pkg.h", ScenarioSource.SYNTHESIZED, "", "items")]
    )
    for size, ns, n in ((10, 100.0, 5_000), (100, 1_000.0, 500), (1000, 10_000.0, 50)):
        batch.measurements.append(
            Measurement("pkg.h", "synth:pkg.h", Metric.WALL, Histogram.of([ns] * n), size)
        )
    store_batch(db, batch, environment_id="env", package="pkg")
    found = query.summary(db, "pkg.h")
    assert found.reference_size == 100 and found.reference_label == "at items=100"
    # not the 100 ns that 5,000 small-size calls pool to
    assert found.at_reference().time_median_ns == 1_000.0
    assert found.typical[Metric.WALL].count == 500
    assert found.histograms[Metric.WALL].count == 5_550  # the merge over all sizes
    figures = query.size_figures(db, "pkg.h", [Metric.WALL])
    assert [(f.size, f.median, f.count) for f in figures] == [
        (10, 100.0, 5_000),
        (100, 1_000.0, 500),
        (1000, 10_000.0, 50),
    ]
