"""Stored figures are the ones readers compute from the buckets: after scans in one or several
environments, after ``apiprof merge``, after collection ingest; files without them (an older
apiprof's) are migrated when opened read-write and read from their buckets when opened
read-only; docs built either way are the same bytes. Real SQLite files and real Sphinx builds."""

from __future__ import annotations

import math
import shutil
import sqlite3
from pathlib import Path

import pytest
from sphinxhelp import build_logged, make_project
from test_bulk_reads import write

from apiprof.db import figures, query
from apiprof.db.breakdowns import ScenarioSlice, pooled_histograms
from apiprof.db.merge import merge_files
from apiprof.db.schema import MIGRATIONS, open_db, open_reader
from apiprof.engine.collect.wire import ApiSample, Batch
from apiprof.model.figures import STORED_PERCENTILES, Figures, figures_of
from apiprof.model.histogram import Histogram
from apiprof.model.histogram_rows import rows_of
from apiprof.model.records import Metric
from apiprof.service.contribution import from_batch
from apiprof.service.sqlite_store import SqliteStore
from apiprof.sphinx_ext.profiles import Profiles


def computed(db) -> tuple[dict, dict]:
    """Every slice's and API's figures as a reader works them out from the buckets."""
    breakdowns = query.scenario_breakdowns(db)
    slices = {
        (qualname, s.scenario_id, s.size, str(s.metric)): figures_of(s.histogram).columns()
        for qualname, found in breakdowns.items()
        for s in found
    }
    pooled = {}
    for qualname, summary in query.summaries(db, list(breakdowns), breakdowns).items():
        pooled[qualname] = (
            summary.reference_size,
            [(str(m), figures_of(h).columns()) for m, h in summary.typical.items()],
            [(str(m), figures_of(h).columns()) for m, h in summary.histograms.items()],
        )
    return slices, pooled


def stored(db) -> tuple[dict, dict]:
    held = figures.StoredSlices(db)
    slices = {
        (qualname, s.scenario_id, s.size, str(s.metric)): s.rows.columns()
        for qualname in held.rows
        for s in held.slices(qualname)
        if isinstance(s.rows, Figures)
    }
    pooled = {
        qualname: (
            size,
            [(str(m), f.columns()) for m, f in typical.items()],
            [(str(m), f.columns()) for m, f in everything.items()],
        )
        for qualname, (size, typical, everything) in figures.stored_pooled(db).items()
    }
    return slices, pooled


def assert_current(path: Path) -> None:
    db = open_reader(path)
    try:
        assert figures.has_current_figures(db)
        slices, pooled = stored(db)
        assert slices and pooled
        assert (slices, pooled) == computed(db)
    finally:
        db.close()


@pytest.mark.parametrize("environments", [("env-a",), ("env-a", "env-b")])
def test_stored_figures_are_the_computed_ones(tmp_path, environments):
    write(tmp_path / "s.db", environments).close()
    assert_current(tmp_path / "s.db")


def test_a_later_scan_refreshes_the_figures_of_what_it_touched(tmp_path):
    write(tmp_path / "t.db", ("env-a",), seed=1).close()
    before = stored(open_reader(tmp_path / "t.db"))
    write(tmp_path / "t.db", ("env-b",), seed=2).close()  # every API measured again elsewhere
    assert_current(tmp_path / "t.db")
    assert stored(open_reader(tmp_path / "t.db")) != before


def test_merged_files_hold_the_figures_of_their_sum(tmp_path):
    write(tmp_path / "a.db", ("env-a",), seed=3).close()
    write(tmp_path / "b.db", ("env-b",), seed=4).close()
    merge_files(tmp_path / "merged.db", [tmp_path / "a.db", tmp_path / "b.db"])
    assert_current(tmp_path / "merged.db")


def test_collected_measurements_get_figures_when_ingested(tmp_path):
    write(tmp_path / "c.db", ("env-a",), seed=5).close()
    store = SqliteStore(tmp_path / "c.db", tmp_path / "traces")
    sample = ApiSample(
        "pkg.f1", "pkg", "function", "1.0", {Metric.WALL: Histogram.of([120.0, 130.0, 9000.0])}
    )
    new = ApiSample("pkg.g", "pkg", "function", "1.0", {Metric.WALL: Histogram.of([5.0])})
    batch = Batch("batch-1", "3.12.1", "cpython", "Linux", "x86_64", None, (sample, new))
    assert store.add(from_batch(batch))
    store.db.conn.close()
    assert_current(tmp_path / "c.db")
    slices, _pooled = stored(open_reader(tmp_path / "c.db"))
    assert ("pkg.g", "collected", -1, "wall_ns") in slices


def older(path: Path) -> None:
    """Make ``path`` what an apiprof from before stored figures wrote."""
    conn = sqlite3.connect(path)
    version = next(i for i, m in enumerate(MIGRATIONS) if m.__name__.endswith("stored_figures"))
    conn.executescript(  # and without what later migrations added (stored charts)
        "DROP TABLE slice_figures; DROP TABLE api_figures; DROP TABLE growth_charts; "
        "DELETE FROM meta WHERE key IN ('figures_version', 'charts_version');"
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    conn.commit()
    conn.close()


def test_an_older_file_is_given_figures_when_opened_read_write(tmp_path):
    write(tmp_path / "o.db", ("env-a", "env-b")).close()
    older(tmp_path / "o.db")
    reader = open_reader(tmp_path / "o.db")  # read-only: no migration, the buckets answer
    assert not figures.has_current_figures(reader)
    reader.close()
    open_db(tmp_path / "o.db").conn.close()
    assert_current(tmp_path / "o.db")


def test_figures_an_older_computation_made_are_made_again(tmp_path):
    write(tmp_path / "v.db").close()
    conn = sqlite3.connect(tmp_path / "v.db")
    conn.execute("UPDATE meta SET value = 'older' WHERE key = 'figures_version'")
    conn.execute("UPDATE slice_figures SET p50 = -1")  # what another computation stored
    conn.commit()
    conn.close()
    reader = open_reader(tmp_path / "v.db")
    assert not figures.has_current_figures(reader)  # readers do not trust them
    reader.close()
    open_db(tmp_path / "v.db").conn.close()
    assert_current(tmp_path / "v.db")


def test_readers_get_the_same_summaries_and_slices_either_way(tmp_path):
    write(tmp_path / "r.db", ("env-a", "env-b")).close()
    fast = Profiles(tmp_path / "r.db")
    fast.lookup("")
    assert fast._figures_stored
    # slice figures are read at the first drill-down page: read them before the file changes
    fast_slices = {name: fast.slices(name) for name in fast.known_names()}
    assert fast._stored is not None
    older(tmp_path / "r.db")
    slow = Profiles(tmp_path / "r.db")
    slow.lookup("")
    assert not slow._figures_stored and slow._stored is None
    names = fast.known_names()
    assert names == slow.known_names()
    for name in names:
        a, b = fast.lookup(name), slow.lookup(name)
        assert a is not None and b is not None
        assert (a.reference_size, a.scenarios, a.growth) == (
            b.reference_size,
            b.scenarios,
            b.growth,
        )
        for mine, theirs in ((a.histograms, b.histograms), (a.typical, b.typical)):
            assert list(mine) == list(theirs)  # the same metrics in the same order
            for metric, hist in theirs.items():
                assert mine[metric].columns() == figures_of(hist).columns()
        assert [(s.scenario_id, s.size, s.metric, s.rows.columns()) for s in fast_slices[name]] == [
            (s.scenario_id, s.size, s.metric, figures_of(s.histogram).columns())
            for s in slow.slices(name)
        ]


def test_docs_from_an_older_file_are_the_same_bytes(tmp_path):
    """Pages and summaries built from the stored figures and, after the file is made older,
    from its buckets (read-only: the build does not migrate it, and says how to)."""
    srcdir = make_project(tmp_path / "new")
    _app, warnings, _ = build_logged(srcdir)
    assert "apiprof" not in warnings
    old = tmp_path / "old" / "src"
    shutil.copytree(srcdir, old)
    older(old / "apiprof.db")
    _app, warnings, status = build_logged(old)
    assert "no stored figures yet" in status and "apiprof" not in warnings
    pages = {}
    for top in (srcdir, old):
        out = top.parent / "_build-html" / "html"
        pages[top] = {p.relative_to(out): p.read_bytes() for p in out.rglob("*.html")}
    assert pages[old] == pages[srcdir]
    assert any(name.parts[0] == "apiprof" for name in pages[old])  # drill-down pages too
    reader = open_reader(old / "apiprof.db")
    assert not figures.has_current_figures(reader)  # the read-only build left the file alone
    reader.close()


def test_the_figures_of_fixed_histograms_are_known():
    """If this fails, the computation behind stored figures changed (a figure, the percentile
    estimate, or how summaries pool slices): change FIGURES_VERSION, so files holding figures
    made the old way are made again, then the numbers here."""
    assert (figures.FIGURES_VERSION, STORED_PERCENTILES) == ("2", (10, 50, 90, 99))
    found = figures_of(Histogram.of([3, 5, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987]))
    assert (found.count, found.total, found.bucket_counts) == (
        14,
        2584.0,
        "1:1,2:2,3:2,4:1,5:2,6:1,7:2,8:1,9:2",
    )
    assert rounded(found) == [184.571429, 280.219994, 5.0, 44.5, 540.1, 937.99]
    # typical figures at the reference size pool that size's scenarios, each weighing the same:
    # 40 cheap calls of one, 3 dear ones of another (and another size, left out of the typical
    # figures); the median falls between the two, the count stays the calls measured
    slices = [
        ScenarioSlice("a", "", "", 100, Metric.WALL, rows_of(Histogram.of([100.0] * 40))),
        ScenarioSlice("b", "", "", 100, Metric.WALL, rows_of(Histogram.of([900.0, 1e3, 1.1e3]))),
        ScenarioSlice("b", "", "", 1000, Metric.WALL, rows_of(Histogram.of([50.0] * 5))),
    ]
    size, typical, everything = pooled_histograms(slices)
    assert size == 100
    assert rounded(figures_of(typical[Metric.WALL])) == [550, 453.688586, 100, 500, 1100, 1100]
    assert figures_of(typical[Metric.WALL]).count == 43
    assert rounded(figures_of(everything[Metric.WALL])) == [
        151.041667,
        220.673586,
        85,
        100,
        100,
        1053,
    ]
    empty = figures_of(Histogram())
    assert math.isnan(empty.mean) and Figures.from_columns(empty.columns()).count == 0


def rounded(found: Figures) -> list[float]:
    return [round(x, 6) for x in (found.mean, found.stdev, *found.quantiles)]
