"""Stored growth charts are the ones a docs build draws from the slices: after scans, after a
later scan of some APIs; files without them (an older apiprof's) are drawn when opened
read-write and drawn at build time when opened read-only; docs built either way are the same
bytes. Real SQLite files and real Sphinx builds."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

from sphinxhelp import build_logged, make_project
from test_bulk_reads import write

from apiprof.db import charts, query
from apiprof.db.merge import merge_files
from apiprof.db.schema import MIGRATIONS, SCHEMA_VERSION, open_db, open_reader, schema_version
from apiprof.growth_plot import GrowthPlot, plot_growth
from apiprof.model.records import Metric
from apiprof.sphinx_ext.growth_view import view_growth
from apiprof.sphinx_ext.profiles import Profiles
from apiprof.sphinx_ext.scenario_view import scenario_table, stored_scenario_table


def drawn_both_ways(path: Path) -> list[tuple[list, list]]:
    """Per API, the growth views drawn from its slices and those made from the stored charts."""
    profiles = Profiles(path)
    db = open_reader(path)
    try:
        assert charts.has_current_charts(db)
        stored = charts.stored_plots(db)
        fits = query.growths(db)
    finally:
        db.close()
    assert stored, "the fixture charts some fits"
    out = []
    for qualname, rows in fits.items():
        drawn = view_growth(qualname, rows, profiles.slices(qualname))
        read = view_growth(qualname, rows, [], None, stored.get(qualname, {}))
        out.append((drawn, read))
    return out


def assert_current(path: Path) -> None:
    for drawn, read in drawn_both_ways(path):
        assert read == drawn


def test_stored_charts_are_the_drawn_ones(tmp_path):
    write(tmp_path / "s.db", ("env-a", "env-b")).close()
    assert_current(tmp_path / "s.db")
    views = [v for drawn, _read in drawn_both_ways(tmp_path / "s.db") for v in drawn]
    assert any(v.chart_svg and v.point_rows for v in views)  # charts with measured points
    assert any(not v.chart_svg for v in views)  # and fits listed in words (I/O)


def test_a_later_scan_redraws_the_charts_of_what_it_touched(tmp_path):
    write(tmp_path / "t.db", ("env-a",), seed=1).close()
    before = charts.stored_plots(open_reader(tmp_path / "t.db"))
    write(tmp_path / "t.db", ("env-b",), seed=2).close()  # every API measured again elsewhere
    assert_current(tmp_path / "t.db")
    assert charts.stored_plots(open_reader(tmp_path / "t.db")) != before


def test_merged_files_hold_the_charts_of_their_sum(tmp_path):
    write(tmp_path / "a.db", ("env-a",), seed=3).close()
    write(tmp_path / "b.db", ("env-b",), seed=4).close()
    merge_files(tmp_path / "merged.db", [tmp_path / "a.db", tmp_path / "b.db"])
    assert_current(tmp_path / "merged.db")


def test_the_scenario_table_of_stored_cells_is_the_one_of_the_slices(tmp_path):
    """With charts stored, a page reads only its scenario table's cells of the slices."""
    write(tmp_path / "c.db", ("env-a", "env-b")).close()
    profiles = Profiles(tmp_path / "c.db")
    profiles.lookup("")
    tables = 0
    for name in profiles.known_names():
        cells = profiles.stored_cells(name)
        assert cells is not None
        table = stored_scenario_table(*cells)
        assert table == scenario_table(profiles.slices(name))
        tables += bool(table.body)
    assert tables == 3  # every API of the fixture has a table


def older(path: Path) -> None:
    """Make ``path`` what an apiprof from before stored charts wrote (figures, no charts)."""
    conn = sqlite3.connect(path)
    version = next(i for i, m in enumerate(MIGRATIONS) if m.__name__.endswith("growth_charts"))
    conn.executescript("DROP TABLE growth_charts; DELETE FROM meta WHERE key = 'charts_version';")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    conn.commit()
    conn.close()


def test_an_older_file_is_given_charts_when_opened_read_write(tmp_path):
    write(tmp_path / "o.db", ("env-a",)).close()
    older(tmp_path / "o.db")
    reader = open_reader(tmp_path / "o.db")  # read-only: no migration, charts drawn at build
    assert schema_version(reader) == SCHEMA_VERSION - 1
    assert not charts.has_current_charts(reader)
    reader.close()
    db = open_db(tmp_path / "o.db")
    assert schema_version(db) == SCHEMA_VERSION
    db.conn.close()
    assert_current(tmp_path / "o.db")


def test_charts_an_older_drawing_made_are_drawn_again(tmp_path):
    write(tmp_path / "v.db").close()
    conn = sqlite3.connect(tmp_path / "v.db")
    conn.execute("UPDATE meta SET value = 'older' WHERE key = 'charts_version'")
    conn.execute("UPDATE growth_charts SET marks = ''")  # what another drawing stored
    conn.commit()
    conn.close()
    reader = open_reader(tmp_path / "v.db")
    assert not charts.has_current_charts(reader)  # readers do not trust them
    reader.close()
    open_db(tmp_path / "v.db").conn.close()
    assert_current(tmp_path / "v.db")


def test_charts_of_figures_made_another_way_are_not_used(tmp_path):
    """The charts plot the stored medians: figures an older computation made (to be made
    again) leave the charts untrusted too."""
    write(tmp_path / "f.db").close()
    conn = sqlite3.connect(tmp_path / "f.db")
    conn.execute("UPDATE meta SET value = 'older' WHERE key = 'figures_version'")
    conn.commit()
    conn.close()
    reader = open_reader(tmp_path / "f.db")
    assert not charts.has_current_charts(reader)
    reader.close()


def test_docs_from_a_file_without_charts_are_the_same_bytes(tmp_path):
    """Pages built from the stored charts and, after the file is made older, from the slices
    (read-only: the build does not migrate it)."""
    srcdir = make_project(tmp_path / "new")
    reader = open_reader(srcdir / "apiprof.db")
    assert charts.stored_plots(reader), "the fixture has a charted fit"
    reader.close()
    _app, warnings, _ = build_logged(srcdir)
    assert "apiprof" not in warnings
    old = tmp_path / "old" / "src"
    shutil.copytree(srcdir, old)
    older(old / "apiprof.db")
    _app, warnings, _ = build_logged(old)
    assert "apiprof" not in warnings
    pages = {}
    for top in (srcdir, old):
        out = top.parent / "_build-html" / "html"
        pages[top] = {p.relative_to(out): p.read_bytes() for p in out.rglob("*.html")}
    assert pages[old] == pages[srcdir]
    assert any(b"apiprof-chart-growth" in page for page in pages[old].values())
    reader = open_reader(old / "apiprof.db")
    assert not charts.has_current_charts(reader)  # the read-only build left the file alone
    reader.close()


def test_the_chart_of_a_fixed_fit_is_known():
    """If this fails, the drawing behind stored charts changed: change CHARTS_VERSION, so files
    holding charts drawn the old way are drawn again, then the digest here."""
    fit = query.GrowthRow(Metric.WALL, "s", "O(n)", 40.0, 2.5, 0.05, 0.99, 4, "n")
    plot = plot_growth(fit, [(10.0, 70.0), (30.0, 110.0), (100.0, 300.0), (1000.0, 2600.0)])
    assert isinstance(plot, GrowthPlot) and plot.worst_gap is not None
    drawn = "\x00".join([plot.axes, plot.marks, plot.rows, f"{plot.worst_gap:.6f}"])
    assert (charts.CHARTS_VERSION, hashlib.sha256(drawn.encode()).hexdigest()[:16]) == (
        "1",
        "1d71b4784cbc47eb",
    )
