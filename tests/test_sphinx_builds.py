"""Real Sphinx builds of the test project: autodoc annotation, other builders and themes,
incremental and parallel rebuilds, and the project's own docs."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from sphinxhelp import (
    COUNTS,
    ENV,
    add_cpu_samples,
    bars_by_metric,
    build,
    build_html_once,
    elements,
    links,
    make_project,
    rebuild,
    resolve,
    write_database,
)

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_entry_points
from apiprof.format import format_bytes, format_ns
from apiprof.model.histogram import from_counts
from apiprof.model.records import (
    EntryKind,
    EntryPoint,
    Metric,
)
from apiprof.sphinx_ext.nodes import apiprof_summary

html_build = pytest.fixture(scope="module")(build_html_once)


# -- autodoc ------------------------------------------------------------------------------------


def test_auto_mode_annotates_every_autodoc_entry(html_build):
    _, outdir, _ = html_build
    shown: dict[str, str] = {}  # documented object → class of the summary in its description
    signature = ""
    for tag, attrs, ancestors in elements(outdir / "api.html"):
        if tag == "dt" and "id" in attrs:
            signature = attrs["id"]  # summaries open the description that follows their signature
        if tag == "div" and "apiprof-summary" in attrs.get("class", "").split():
            assert ancestors[-2].get("class", "").startswith("py "), (
                "summary outside an object description"
            )
            shown[signature] = attrs["class"]
    assert shown == {
        **dict.fromkeys(COUNTS, "apiprof-summary apiprof-summary-compact"),
        "demo_mod.unprofiled": "apiprof-summary apiprof-summary-unprofiled",
    }


def test_auto_mode_works_with_legacy_autodoc(tmp_path):
    srcdir = make_project(tmp_path)
    app, _ = build(srcdir, autodoc_use_legacy_class_based=True)
    text = (Path(app.outdir) / "api.html").read_text(encoding="utf-8")
    assert text.count("apiprof-summary apiprof-summary-compact") == len(COUNTS)


def test_auto_mode_off_leaves_autodoc_alone(tmp_path):
    srcdir = make_project(tmp_path)
    app, _ = build(srcdir, apiprof_auto=False)
    text = (Path(app.outdir) / "api.html").read_text(encoding="utf-8")
    assert 'class="apiprof-summary ' not in text
    assert 'class="apiprof-summary ' in (Path(app.outdir) / "index.html").read_text(
        encoding="utf-8"
    )


# -- other builders, themes, rebuilds -------------------------------------------------------------


@pytest.mark.parametrize("buildername", ["text", "latex", "man"])
def test_non_html_builders_get_text_fallback(tmp_path, buildername):
    srcdir = make_project(tmp_path)
    app, warnings = build(srcdir, buildername)
    out = Path(app.outdir)
    produced = "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in out.rglob("*")
        if p.suffix in {".txt", ".tex", ".1"}
    )
    assert "≈" in produced or r"\(\approx\)" in produced or "approx" in produced
    assert "O(n)" in produced
    assert "not profiled" in produced
    assert "Traceback" not in warnings


def test_text_fallback_sentence(tmp_path):
    srcdir = make_project(tmp_path)
    app, _ = build(srcdir, "text")
    # unwrap lines
    text = " ".join((Path(app.outdir) / "index.txt").read_text(encoding="utf-8").split())
    # wall time at the reference size n = 100 (4 calls of 400 ns), not pooled over sizes;
    # allocation from the unsized scenario, the only one that measured it
    alloc = from_counts(COUNTS["demo_mod.render"][Metric.ALLOC_INCL]).median
    assert (
        f"Cost: time ≈{format_ns(400)} · allocated {format_bytes(alloc)} at n = 100, O(n)" in text
    )  # the compact form
    assert f"{Metric.CPU.label} ≈" in text and "300 calls measured in 1 scenario" in text


def test_furo_theme_builds_with_summaries_and_pages(tmp_path):
    srcdir = make_project(tmp_path)
    app, warnings = build(srcdir, html_theme="furo")
    out = Path(app.outdir)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "apiprof.css" in index and "apiprof-bar" in index
    page = (out / "apiprof" / "demo_mod.parse.html").read_text(encoding="utf-8")
    assert "furo" in page and "Cost profile of" in page
    # each page gets its own title in the shared frame
    assert "<title>demo_mod.parse — cost profile" in page
    assert "apiprofframetitle" not in page and "apiprof frame body" not in page
    assert (out / "_static" / "apiprof.css").is_file()
    assert "Traceback" not in warnings


def test_each_page_has_its_own_canonical_url_with_html_baseurl(tmp_path):
    srcdir = make_project(tmp_path)
    app, _ = build(srcdir, html_baseurl="https://example.org/docs/")
    page = (Path(app.outdir) / "apiprof" / "demo_mod.render.html").read_text(encoding="utf-8")
    # its own canonical URL
    assert 'href="https://example.org/docs/apiprof/demo_mod.render.html"' in page
    assert "<title>demo_mod.render — cost profile" in page and "apiprofframetitle" not in page


def test_database_change_rereads_documents_that_use_it(tmp_path):
    srcdir = make_project(tmp_path)
    build(srcdir)
    _, status = rebuild(srcdir)
    assert "0 added, 0 changed, 0 removed" in status
    add_cpu_samples(srcdir / "apiprof.db", "demo_mod.parse", {4: 700})
    app, status = rebuild(srcdir)
    assert "0 added, 2 changed, 0 removed" in status  # both documents show parse
    assert "1000 calls measured" in (Path(app.outdir) / "index.html").read_text(encoding="utf-8")
    drawn = bars_by_metric(Path(app.outdir) / "index.html", "apiprof-demo-mod-parse")
    assert drawn[str(Metric.CPU)] == {4: 891, 5: 109}


def test_database_appearing_later_fills_in_the_summaries(tmp_path):
    srcdir = make_project(tmp_path, database="missing")
    app, _ = build(srcdir)
    assert "apiprof-compact" not in (Path(app.outdir) / "api.html").read_text(encoding="utf-8")
    write_database(srcdir / "apiprof.db")
    app, warnings = build(srcdir)
    assert "apiprof.database" not in warnings
    assert (Path(app.outdir) / "api.html").read_text(encoding="utf-8").count(
        "apiprof-summary apiprof-summary-compact"
    ) == len(COUNTS)
    assert "apiprof-bar" in (Path(app.outdir) / "index.html").read_text(encoding="utf-8")


def test_parallel_build_matches_serial(tmp_path, html_build):
    app, _ = build(make_project(tmp_path), parallel=2)
    _, outdir, _ = html_build
    for doc in ("index.html", "api.html"):
        assert bars_by_metric(Path(app.outdir) / doc, "apiprof-demo-mod-parse") == bars_by_metric(
            outdir / doc, "apiprof-demo-mod-parse"
        )
    assert sorted(p.name for p in (Path(app.outdir) / "apiprof").iterdir()) == sorted(
        p.name for p in (outdir / "apiprof").iterdir()
    )


def test_stored_doctrees_say_what_to_show_and_writing_draws_it(html_build):
    """Doctrees (pickled to disk, and between ``-j`` processes) keep each summary as the API's
    name, metrics and form only; its figures are drawn when the page is written, where the
    search index reads their words too."""
    _, outdir, _ = html_build
    doctree = pickle.loads((outdir.parent / "doctrees" / "index.doctree").read_bytes())
    stored = list(doctree.findall(apiprof_summary))
    assert {n["qualname"] for n in stored} == {
        "demo_mod.parse",
        "demo_mod.render",
        "demo_mod.parse_alias",
        "demo_mod.unprofiled",
    }
    for node in stored:
        assert not node.children and "view" not in node.attributes
        assert isinstance(node["compact"], bool)
        assert all(isinstance(m, str) for m in node["metrics"])
    # "calls measured in 1 scenario": words only the full summary's text holds
    assert "measur" in (outdir / "searchindex.js").read_text(encoding="utf-8")


@pytest.mark.parametrize("buildername", ["dirhtml", "singlehtml", "epub"])
def test_other_html_builders(tmp_path, buildername):
    srcdir = make_project(tmp_path)
    app, warnings = build(srcdir, buildername)
    out = Path(app.outdir)
    assert "Traceback" not in warnings and "apiprof.database" not in warnings
    if buildername == "dirhtml":  # pages live at apiprof/<name>/index.html and links reach them
        for href in links(out / "index.html", "apiprof-more"):
            target, _ = resolve(out / "index.html", href)
            assert (target / "index.html").is_file() if target.is_dir() else target.is_file(), href
    else:
        produced = next(out.rglob("index.*html"))
        assert "apiprof-bar" in produced.read_text(encoding="utf-8")


def test_every_config_value_is_documented():
    from apiprof import sphinx_ext

    registered = []

    class Recorder:
        def add_config_value(self, name, *args, **kwargs):
            registered.append(name)

        def __getattr__(self, _name):
            return lambda *args, **kwargs: None

    sphinx_ext.setup(Recorder())  # type: ignore[arg-type]  # records what setup() registers
    docs = (Path(__file__).parent.parent / "docs" / "sphinx.rst").read_text(encoding="utf-8")
    assert registered and all(name.startswith("apiprof_") for name in registered)
    for name in registered:
        assert f".. confval:: {name}" in docs, f"{name} is not documented in docs/sphinx.rst"


@pytest.mark.slow
def test_project_docs_build_with_the_extension(tmp_path):
    """docs/ builds (furo or alabaster) against a small generated database of json and textwrap."""
    db_path = tmp_path / "docs.db"
    db = open_db(db_path)
    store_entry_points(
        db,
        [
            EntryPoint("json.dumps", "json", "json", EntryKind.FUNCTION),
            EntryPoint("textwrap.wrap", "textwrap", "textwrap", EntryKind.FUNCTION),
        ],
    )
    for name in ("json.dumps", "textwrap.wrap"):
        add_histograms(
            db,
            name,
            {Metric.CPU: from_counts({12: 40, 13: 10}), Metric.ALLOC_INCL: from_counts({10: 50})},
            environment=ENV,
        )
    db.close()
    docs = Path(__file__).parent.parent / "docs"
    app, warnings = build(docs, builddir=tmp_path / "_build", apiprof_db=str(db_path))
    out = Path(app.outdir)
    assert "apiprof" not in warnings, warnings
    assert bars_by_metric(out / "index.html", "apiprof-json-dumps")[str(Metric.CPU)] == {
        12: 40,
        13: 10,
    }
    assert "apiprof-summary apiprof-summary-compact" in (
        out / "api-costs" / "textwrap.html"
    ).read_text(encoding="utf-8")
    assert (out / "apiprof" / "textwrap.wrap.html").is_file() and (
        out / "apiprof" / "index.html"
    ).is_file()
