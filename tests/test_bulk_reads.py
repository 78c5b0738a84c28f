"""The docs build's fast reads give what the per-API queries give: slices held as rows (their
percentiles from the rows), summaries pooled from slices, every API's background in a few
queries, digests of summaries. Real SQLite files written through the store."""

from __future__ import annotations

import random

import pytest

from apiprof.db import details, query
from apiprof.db.schema import open_db, open_reader
from apiprof.db.store import store_batch
from apiprof.model.histogram import Bucket, Histogram
from apiprof.model.histogram_rows import HistogramRows, rows_of
from apiprof.model.records import Measurement, Metric, ScanBatch, Scenario, ScenarioSource
from apiprof.sphinx_ext.profiles import summary_digest

QS = (0, 10, 25, 50, 90, 99, 100)


def random_histogram(rng: random.Random) -> Histogram:
    spread = rng.choice([3, 300, 30_000, 3e7])
    values = [rng.random() * spread for _ in range(rng.randint(1, 60))]
    values += [rng.choice(values)] * rng.randint(0, 5)  # repeated values: exact cells
    return Histogram.of(values, weight=rng.choice([1, 1, 16]))


@pytest.mark.parametrize("seed", range(40))
def test_rows_answer_as_the_histogram_does(seed):
    rng = random.Random(seed)
    hist = random_histogram(rng)
    if seed % 4 == 1:  # older data merged in: a bucket whose sub-buckets miss some values
        hist.merge(Histogram.from_buckets([(rng.randint(0, 20), 3, 0.0, 0.0)]))
        index = max(hist.buckets)
        hist.buckets[index] = Bucket(3, 3 * 2.0**index * 1.5, 3 * (2.0**index * 1.5) ** 2)
    if seed % 4 == 2:  # a stored row with no values, and sub-buckets of an empty bucket
        hist.buckets[-1] = Bucket()
        hist.subs[(-1, 0)] = Bucket()
    rows = rows_of(hist)
    assert rows.percentiles(QS) == hist.percentiles(QS)
    assert (rows.count, rows.total, bool(rows)) == (hist.count, hist.total, bool(hist))
    assert rows.histogram() == Histogram.from_buckets(hist.rows(), hist.sub_rows())


def test_empty_rows_answer_as_an_empty_histogram():
    empty = HistogramRows(())
    assert not empty and empty.count == 0
    assert all(v != v for v in empty.percentiles((50, 90)))  # NaN, as Histogram()
    with pytest.raises(ValueError):
        empty.percentiles((101,))


def write(path, environments=("env-a",), seed=0):
    """A database of three APIs measured at sizes by two scenarios each, plus an unsized one,
    in every environment given. Values are whole numbers, so sums do not depend on the order
    they are added in."""
    rng = random.Random(seed)
    db = open_db(path)
    for environment in environments:
        batch = ScanBatch(
            scenarios=[
                Scenario(f"{kind}:pkg.f{i}", f"pkg.f{i}", source, "", axis)
                for i in range(3)
                for kind, source, axis in (
                    ("synth", ScenarioSource.SYNTHESIZED, "n"),
                    ("doc", ScenarioSource.DOCSTRING, "n"),
                    ("file", ScenarioSource.FILE, ""),
                )
            ]
        )
        for i in range(3):
            for kind, sizes in (("synth", (10, 100, 1000)), ("doc", (30, 100)), ("file", (-1,))):
                for size in sizes:
                    for metric in (Metric.WALL, Metric.ALLOC_INCL, Metric.IO_READ):
                        values = [rng.randrange(0, 5000) for _ in range(rng.randint(1, 40))]
                        batch.measurements.append(
                            Measurement(
                                f"pkg.f{i}", f"{kind}:pkg.f{i}", metric, Histogram.of(values), size
                            )
                        )
        store_batch(db, batch, environment_id=environment, package="pkg")
    db.conn.close()
    return open_reader(path)


@pytest.mark.parametrize("environments", [("env-a",), ("env-a", "env-b")])
def test_summaries_pooled_from_slices_are_the_queried_ones(tmp_path, environments):
    db = write(tmp_path / "p.db", environments)
    breakdowns = query.scenario_breakdowns(db)
    assert set(breakdowns) == {"pkg.f0", "pkg.f1", "pkg.f2"}
    assert query.all_summaries(db, breakdowns=breakdowns) == query.all_summaries(db)
    for qualname, slices in breakdowns.items():
        assert [(s.scenario_id, s.size, str(s.metric)) for s in slices] == sorted(
            (s.scenario_id, s.size, str(s.metric)) for s in slices
        )
        assert query.scenario_breakdown(db, qualname) == slices  # one API, the same
        for piece in slices:
            queried = query.histograms(
                db, qualname, metric=piece.metric, scenario_id=piece.scenario_id, size=piece.size
            )[piece.metric]
            assert piece.histogram == queried
            assert piece.rows.percentiles((50, 90)) == queried.percentiles((50, 90))
            assert piece.source and piece.description == ""


def test_every_apis_background_is_each_apis(tmp_path):
    write(tmp_path / "b.db", ("env-a", "env-b")).close()
    writer = open_db(tmp_path / "b.db")
    writer["call_edges"].insert_all(
        [
            {"caller": "pkg.f0", "callee": "pkg.f1", "count": 3},
            {"caller": "pkg.f2", "callee": "pkg.f1", "count": 3},
            {"caller": "pkg.f1", "callee": "pkg.f0", "count": 7},
        ]
    )
    writer.conn.close()
    db = open_reader(tmp_path / "b.db")
    names = ["pkg.f0", "pkg.f1", "pkg.f2", "pkg.absent"]
    provenance, growth, edges = (
        details.provenances(db),
        query.growths(db),
        details.all_call_edges(db),
    )
    for name in names:
        assert provenance.get(name, []) == details.provenance(db, name)
        assert growth.get(name, []) == query.growth(db, name)
        assert edges.get(name, {"callers": [], "callees": []}) == details.call_edges(db, name)
    assert len(provenance["pkg.f0"]) == 2  # one row per environment
    assert details.provenances(db, ["pkg.f1"]) == {"pkg.f1": provenance["pkg.f1"]}


def test_summary_digest_follows_every_number(tmp_path):
    db = write(tmp_path / "d.db")
    first = query.all_summaries(db, breakdowns=query.scenario_breakdowns(db))
    again = query.all_summaries(db)
    assert {q: summary_digest(s) for q, s in first.items()} == {
        q: summary_digest(s) for q, s in again.items()
    }
    assert len({summary_digest(s) for s in first.values()}) == len(first)
    changed = first["pkg.f0"]
    hist = changed.histograms[Metric.WALL]
    index, bucket = next(iter(hist.subs.items()))
    before = summary_digest(changed)
    hist.subs[index] = Bucket(bucket.count, bucket.total + 1.0, bucket.total_sq)
    assert summary_digest(changed) != before
    assert summary_digest(None) == summary_digest(None)


def test_same_content_in_other_bytes_rereads_no_document(tmp_path):
    """A fresh build fingerprints the file's bytes; once they move (here: a note in a table no
    reader shows) the rows are compared, and nothing a document shows changed."""
    import sqlite3

    from sphinxhelp import add_cpu_samples, build, build_logged, make_project

    srcdir = make_project(tmp_path)
    build(srcdir)
    database = srcdir / "apiprof.db"

    wal = database.with_name(database.name + "-wal")

    def on_disk() -> bytes:
        return database.read_bytes() + (wal.read_bytes() if wal.exists() else b"")

    def same_content_other_bytes(note: int) -> None:
        before = on_disk()
        conn = sqlite3.connect(database)
        with conn:
            conn.execute("INSERT INTO meta (key, value) VALUES (?, 'x')", [f"note {note}"])
        conn.close()
        assert on_disk() != before

    for note in range(2):  # bytes compared with the fresh build's, then rows with the last's
        same_content_other_bytes(note)
        _, _, status = build_logged(srcdir, "html")
        assert "0 added, 0 changed, 0 removed" in status
    add_cpu_samples(database, "demo_mod.Widget.draw", {12: 5})
    _, _, status = build_logged(srcdir, "html")
    assert "0 added, 1 changed, 0 removed" in status
