"""What a real project needs from the extension before it ships: PDF output with every LaTeX
engine, every builder, a linkable cost index, no-op rebuilds that rewrite nothing, content-based
re-reads, orphaned pages removed, translations, lab and real-program figures side by side, and
untrusted database contents kept in their place (file names and markup).

Real Sphinx builds of tests/roots/test-apiprof-basic against databases written here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from sphinxhelp import (
    COUNTS,
    ENV,
    add_cpu_samples,
    build,
    build_logged,
    elements,
    links,
    make_project,
    rebuild,
    resolve,
    write_database,
)

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_batch, store_entry_points
from apiprof.format import format_ns
from apiprof.model.histogram import from_counts
from apiprof.model.records import (
    EntryKind,
    EntryPoint,
    Measurement,
    Metric,
    ScanBatch,
    Scenario,
    ScenarioSource,
)
from apiprof.sphinx_ext.pages_names import INDEX_PAGE, assign_page_names
from apiprof.sphinx_ext.profiles import FILE_STAT

LATEXMK = shutil.which("latexmk")


def mtimes(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


# -- 1. PDF with every LaTeX engine -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    LATEXMK is None,
    reason="latexmk is not installed (apt-get install latexmk texlive-latex-recommended "
    "texlive-latex-extra texlive-fonts-recommended texlive-xetex texlive-luatex tex-gyre "
    "fonts-freefont-otf)",
)
@pytest.mark.parametrize("engine", ["pdflatex", "xelatex", "lualatex"])
def test_pdf_builds_with_every_latex_engine(tmp_path, engine):
    if shutil.which(engine) is None:
        pytest.skip(f"{engine} is not installed")
    srcdir = make_project(tmp_path)
    # makeindex (part of TeX Live) rather than xindy, whose Debian package cannot read the index
    app, warnings = build(srcdir, "latex", latex_engine=engine, latex_use_xindy=False)
    out = Path(app.outdir)
    assert (out / "apiprof.sty").is_file() and "Traceback" not in warnings
    [tex] = out.glob("*.tex")
    assert r"\usepackage{apiprof}" in tex.read_text(encoding="utf-8")
    assert "≈" in tex.read_text(encoding="utf-8")
    flag = {"pdflatex": "-pdf", "xelatex": "-pdfxe", "lualatex": "-pdflua"}[engine]
    done = subprocess.run(
        [LATEXMK, flag, "-interaction=nonstopmode", "-halt-on-error", tex.name],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    log = done.stdout[-3000:]
    assert done.returncode == 0, log
    assert "not set up for use with LaTeX" not in done.stdout
    assert tex.with_suffix(".pdf").stat().st_size > 10_000


# -- every builder ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "buildername", ["texinfo", "xml", "pseudoxml", "gettext", "dummy", "changes", "singlehtml"]
)
def test_every_builder_writes_the_text_or_the_graphic(tmp_path, buildername):
    srcdir = make_project(tmp_path)
    app, warnings, _ = build_logged(srcdir, buildername, warningiserror=True)
    assert warnings == ""
    produced = "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in Path(app.outdir).rglob("*")
        if p.is_file() and p.suffix in {".texi", ".xml", ".pseudoxml", ".pot", ".html"}
    )
    if buildername == "gettext":  # numbers are not prose: nothing of a summary is translatable
        assert "Cost" not in produced and "≈" not in produced
    elif buildername in {"texinfo", "xml", "pseudoxml"}:
        assert "Cost: time ≈" in produced
    elif buildername == "singlehtml":
        assert "apiprof-chart-histogram" in produced


# -- 4. -W builds: see test_sphinx_ext.py (notes by default, warnings when asked) --------------------

# -- 5. the cost index is linkable ---------------------------------------------------------------

LINKS_RST = """\
Links
=====

.. toctree::

   apiprof/index

Go to :doc:`/apiprof/index`, to :doc:`the costs </apiprof/index>` or to :ref:`apiprof-index`.
"""


@pytest.mark.parametrize("buildername", ["html", "dirhtml"])
def test_cost_index_is_linkable_by_doc_toctree_and_ref(tmp_path, buildername):
    srcdir = make_project(tmp_path)
    (srcdir / "links.rst").write_text(LINKS_RST, encoding="utf-8")
    index = (srcdir / "index.rst").read_text(encoding="utf-8")
    (srcdir / "index.rst").write_text(index.replace("   api\n", "   api\n   links\n"))
    app, warnings, _ = build_logged(srcdir, buildername, warningiserror=True)
    assert warnings == ""
    out = Path(app.outdir)
    page = out / ("links.html" if buildername == "html" else "links/index.html")
    hrefs = [h for h in links(page) if "apiprof" in h]
    assert len(hrefs) >= 4  # toctree entry, two :doc:, one :ref:
    for href in hrefs:
        target, _ = resolve(page, href)
        target = target / "index.html" if target.is_dir() else target
        assert target == (out / "apiprof" / "index.html").resolve(), href
    text = page.read_text(encoding="utf-8")
    assert ">API costs<" in text and ">the costs<" in text


def test_cost_index_links_are_text_where_there_are_no_pages(tmp_path):
    srcdir = make_project(tmp_path)
    (srcdir / "links.rst").write_text(":orphan:\n\n" + LINKS_RST, encoding="utf-8")
    app, warnings, _ = build_logged(srcdir, "text", warningiserror=True)
    assert warnings == ""
    assert "Go to *API costs*, to *the costs* or to *API costs*." in " ".join(
        (Path(app.outdir) / "links.txt").read_text(encoding="utf-8").split()
    )


# -- 6. and 7.: no-op rebuilds, content-based re-reads, orphaned pages ----------------------------


def test_noop_rebuild_rewrites_no_page_and_touch_rereads_nothing(tmp_path):
    srcdir = make_project(tmp_path)
    app, _ = build(srcdir)
    assert app.env.apiprof_db_stat[1].startswith(FILE_STAT)  # a fresh build hashes no bytes
    pages = Path(app.outdir) / "apiprof"
    before = mtimes(pages)
    assert len(before) >= len(COUNTS) + 1
    _, status = rebuild(srcdir)
    assert "0 added, 0 changed, 0 removed" in status
    assert mtimes(pages) == before
    html = {p: t for p, t in before.items() if p.suffix == ".html"}
    for touch in range(2):  # compared by summaries with the fresh build's, then by the bytes
        os.utime(srcdir / "apiprof.db")  # the file's time changes, its content does not
        app, status = rebuild(srcdir)
        assert "0 added, 0 changed, 0 removed" in status
        assert not app.env.apiprof_db_stat[1].startswith(FILE_STAT)
        # no page is written (the first time, the manifest records the file's hash)
        after = mtimes(pages)
        assert (after == before) if touch else ({p: after[p] for p in html} == html)
        before = after


def test_changed_content_rereads_only_documents_showing_the_changed_api(tmp_path):
    srcdir = make_project(tmp_path)
    app, _ = build(srcdir)
    pages = Path(app.outdir) / "apiprof"
    names = assign_page_names(COUNTS)
    before = mtimes(pages)
    add_cpu_samples(srcdir / "apiprof.db", "demo_mod.Widget.draw", {12: 5})
    _, status = rebuild(srcdir)
    assert "0 added, 1 changed, 0 removed" in status  # api.rst shows draw; index.rst does not
    after = mtimes(pages)
    changed = {p.name for p in after if after[p] != before.get(p)}
    assert f"{names['demo_mod.Widget.draw'].split('/')[1]}.html" in changed
    assert f"{names['demo_mod.parse'].split('/')[1]}.html" not in changed


def test_pages_no_longer_produced_are_removed(tmp_path):
    srcdir = make_project(tmp_path)
    app, _ = build(srcdir)
    pages = Path(app.outdir) / "apiprof"
    assert len(list(pages.glob("demo_mod.*.html"))) == len(COUNTS)
    (srcdir / "apiprof.db").unlink()
    app, _status = rebuild(srcdir)
    assert not list(pages.glob("demo_mod.*.html"))
    index = (pages / "index.html").read_text(encoding="utf-8")
    assert "could not be read" in index  # the index stays, so links to it still work
    write_database(srcdir / "apiprof.db")
    rebuild(srcdir)
    assert len(list(pages.glob("demo_mod.*.html"))) == len(COUNTS)
    rebuild(srcdir, apiprof_pages="none")
    assert not list(pages.glob("*.html"))


def test_dirhtml_pages_are_removed_with_their_folders(tmp_path):
    srcdir = make_project(tmp_path)
    app, _ = build(srcdir, "dirhtml")
    pages = Path(app.outdir) / "apiprof"
    assert (pages / "demo_mod.parse" / "index.html").is_file()
    (srcdir / "apiprof.db").unlink()
    rebuild(srcdir, "dirhtml")
    assert not (pages / "demo_mod.parse").exists()


# -- 9. an empty database -----------------------------------------------------------------------


def test_empty_database_file_is_called_empty(tmp_path):
    srcdir = make_project(tmp_path, database="missing")
    (srcdir / "apiprof.db").write_bytes(b"")
    _, warnings = build(srcdir)
    [line] = [w for w in warnings.splitlines() if "apiprof" in w]
    assert "the database is empty" in line and "apiprof-scan" in line
    assert "schema 0" not in line


# -- issue 9: lab scan and real programs side by side ---------------------------------------------


def write_collected_database(path: Path) -> None:
    """parse: lab (the fixture's synth scenario) and collected figures; render: collected only."""
    write_database(path)
    db = open_db(path)
    store_entry_points(
        db, [EntryPoint("demo_mod.wild", "demo_mod", "demo_mod", EntryKind.FUNCTION)]
    )
    collected = [
        Measurement("demo_mod.parse", "collected", Metric.WALL, from_counts({9: 40, 10: 10})),
        Measurement("demo_mod.parse", "collected", Metric.ALLOC_INCL, from_counts({7: 50})),
        Measurement("demo_mod.wild", "collected", Metric.WALL, from_counts({15: 8})),
    ]
    store_batch(
        db,
        ScanBatch(
            measurements=collected,
            scenarios=[Scenario("collected", "demo_mod.parse", ScenarioSource.COLLECTED)],
        ),
        environment_id=ENV.id,
        package="demo_mod",
    )
    db.close()


def test_drilldown_shows_lab_and_real_program_figures_apart(tmp_path):
    srcdir = make_project(tmp_path, database="missing")
    write_collected_database(srcdir / "apiprof.db")
    (srcdir / "wild.rst").write_text(":orphan:\n\n.. apiprof:: demo_mod.wild\n   :compact:\n")
    app, warnings = build(srcdir)
    out = Path(app.outdir)
    page = (out / "apiprof" / "demo_mod.parse.html").read_text(encoding="utf-8")
    section = page[page.index('id="apiprof-lab-and-programs"') :]
    section = section[: section.index("</section>")]
    assert "lab scan" in section and "measured in real programs" in section
    lab_cpu = from_counts(COUNTS["demo_mod.parse"][Metric.CPU])
    wild = from_counts({9: 40, 10: 10})
    assert f"≈{format_ns(lab_cpu.median)}" in section and f"≈{format_ns(wild.median)}" in section
    # the summary stays the lab's: parse has no lab wall time, so its time is the lab CPU time
    index = (out / "index.html").read_text(encoding="utf-8")
    assert f"≈{format_ns(lab_cpu.median)}" in index
    assert "300 calls measured" in index
    # the scenario table labels the collected row
    assert "measured in real programs" in page[page.index('id="apiprof-scenarios"') :]
    # an API measured only in real programs shows those figures
    wild_page = (out / "wild.html").read_text(encoding="utf-8")
    assert f"≈{format_ns(from_counts({15: 8}).median)}" in wild_page
    assert "Traceback" not in warnings


# -- untrusted database contents -------------------------------------------------------------------

HOSTILE = [
    "../../escape",
    "demo_mod/../../../escape2",
    "..",
    "index",
    "demo_mod.<script>alert(1)</script>",
    'demo_mod."quoted"&amp',
    "Demo_mod.PARSE",
]


def test_page_names_stay_inside_the_pages_folder_and_are_unique():
    names = assign_page_names([*HOSTILE, "demo_mod.parse", "demo_mod.Parse"])
    assert len(set(names.values())) == len(names)
    assert len({n.casefold() for n in names.values()}) == len(names)
    for _qualname, page in names.items():
        folder, slug = page.split("/")
        assert folder == "apiprof" and re.fullmatch(r"[A-Za-z0-9_.-]+", slug), page
        assert not slug.startswith(".") and page != INDEX_PAGE
    assert names["demo_mod.parse"] == "apiprof/demo_mod.parse"


def test_hostile_names_and_summaries_write_nothing_outside_and_are_escaped(tmp_path):
    srcdir = make_project(tmp_path)
    db = open_db(srcdir / "apiprof.db")
    store_entry_points(
        db,
        [
            EntryPoint(
                name,
                "demo_mod",
                "demo_mod",
                EntryKind.FUNCTION,
                "(x='<b>')",
                "*x* <img src=x onerror=alert(1)>",
            )
            for name in HOSTILE
        ],
    )
    for name in HOSTILE:
        add_histograms(db, name, {Metric.CPU: from_counts({5: 3})}, environment=ENV)
    db.close()
    app, warnings = build(srcdir, apiprof_pages="all")
    out = Path(app.outdir)
    inside = {p.resolve() for p in out.rglob("*")}
    outside = {
        p
        for p in tmp_path.rglob("*")
        if "escape" in p.name and not p.resolve().is_relative_to(out.resolve())
    }
    assert not outside, outside
    assert all(str(p).startswith(str(out.resolve())) for p in inside)
    pages = out / "apiprof"
    bodies = "".join(p.read_text(encoding="utf-8") for p in pages.glob("*.html"))
    assert "<script>alert(1)</script>" not in bodies and "<img src=x" not in bodies
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in bodies
    assert "<em>x</em>" in bodies  # the reST summary reads as text, its markup as HTML
    index = pages / "index.html"
    assert "Cost profile" not in index.read_text(encoding="utf-8")  # the real index survived
    for tag, attrs, _ in elements(index):
        if tag == "a" and attrs.get("href", "").endswith(".html"):
            target, _ = resolve(index, attrs["href"])
            assert target.is_file() and target.parent in (pages.resolve(), out.resolve()), attrs
    assert "Traceback" not in warnings


# -- 8. reading the numbers ---------------------------------------------------------------------


def test_units_are_labelled_and_the_heat_strip_has_a_legend_in_words(tmp_path):
    app, _ = build(make_project(tmp_path))
    out = Path(app.outdir)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert re.search(r'apiprof-figure-label">time</span> ≈', index)
    assert re.search(r'apiprof-figure-label">allocated</span> \d', index)
    strips = [
        a
        for tag, a, _ in elements(out / "index.html")
        if tag == "svg" and "apiprof-chart-strip" in a.get("class", "")
    ]
    assert strips and all("blue cheap, red expensive" in a["aria-label"] for a in strips)
    page = (out / "apiprof" / "demo_mod.render.html").read_text(encoding="utf-8")
    assert 'id="apiprof-legend"' in page
    assert "bucket" not in re.sub(
        r'data-bucket="[^"]*"|apiprof-table-buckets', "", page.split('id="apiprof-page"')[1]
    )
    # the growth chart comes with the measured medians against the fitted curve
    growth = page[page.index('id="apiprof-growth"') :]
    assert "measured median" in growth and "fitted curve" in growth and "(log scale)" in growth


def test_index_sorts_growth_by_complexity(tmp_path):
    app, _ = build(make_project(tmp_path))
    index = (Path(app.outdir) / "apiprof" / "index.html").read_text(encoding="utf-8")
    growth_cells = re.findall(
        r'<td data-key="(-?\d+)">(O\([^<]*\)|)</td>\s*<td data-key="\d+">', index
    )
    ranks = {label: int(key) for key, label in growth_cells}
    assert ranks[""] == -1 and ranks["O(n)"] == 2  # O(1) 0, O(log n) 1, O(n) 2, …


def test_docstring_summary_markup_becomes_html():
    from apiprof.sphinx_ext.rst_inline import inline_rst_html

    assert inline_rst_html("Break *iterable* into lists of length *n*:") == (
        "Break <em>iterable</em> into lists of length <em>n</em>:"
    )
    assert inline_rst_html(r"Like :func:`~itertools.chain` with ``a<b`` and \*args") == (
        "Like <code>chain</code> with <code>a&lt;b</code> and *args"
    )
    assert inline_rst_html("a * b * c <b>") == "a * b * c &lt;b&gt;"


# -- every common theme ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "theme", ["alabaster", "furo", "classic", "nature", "sphinxdoc", "pyramid", "agogo", "bizstyle"]
)
def test_every_theme_wears_the_pages(tmp_path, theme):
    app, warnings = build(make_project(tmp_path), html_theme=theme, html_baseurl="https://x.org/")
    pages = Path(app.outdir) / "apiprof"
    for name in ("demo_mod.parse", "demo_mod.render", "index"):
        page = (pages / f"{name}.html").read_text(encoding="utf-8")
        assert "apiprofframetitle" not in page and "apiprof frame body" not in page
        assert "apiprof.css" in page and 'class="apiprof-page"' in page
        assert f'href="https://x.org/apiprof/{name}.html"' in page  # its own canonical URL
    assert "Traceback" not in warnings
