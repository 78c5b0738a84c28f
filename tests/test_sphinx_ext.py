"""Real Sphinx builds of tests/roots/test-apiprof-basic against a generated profile database.

One HTML build is shared by the module; the other builders and the failure paths build the
same small project again with different settings.
"""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from io import StringIO
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from sphinx.testing.util import SphinxTestApp

from apiprof.db import query
from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_batch, store_entry_points
from apiprof.format import format_bytes, format_ns
from apiprof.model.histogram import Histogram, from_counts
from apiprof.model.records import (
    CallEdge,
    Coverage,
    CoverageRecord,
    EntryKind,
    EntryPoint,
    Environment,
    Measurement,
    Metric,
    ScanBatch,
    Scenario,
    ScenarioSource,
)

ROOT = Path(__file__).parent / "roots" / "test-apiprof-basic"
ENV = Environment("3.12.1", "cpython", "Linux", "x86_64", "Test CPU")

# bucket counts per API and metric (parse's are the bucketing example of docs/mechanisms.rst)
COUNTS = {
    "demo_mod.parse": {Metric.CPU: {4: 191, 5: 109}, Metric.ALLOC_INCL: {1: 100, 2: 100, 4: 100}},
    "demo_mod.render": {
        Metric.CPU: {10: 50, 11: 200, 12: 30},
        Metric.ALLOC_INCL: {9: 100, 10: 200},
    },
    "demo_mod.Widget": {Metric.CPU: {8: 40}},
    "demo_mod.Widget.draw": {Metric.CPU: {12: 5, 13: 20, 14: 3}, Metric.ALLOC_INCL: {6: 28}},
}


def write_database(path: Path) -> None:
    """The fixture database: bucket counts above, a sized scenario (for a growth fit), an
    alias, a call edge and one API that could not be profiled."""
    db = open_db(path)
    store_entry_points(
        db,
        [
            EntryPoint(
                "demo_mod.parse",
                "demo_mod",
                "demo_mod",
                EntryKind.FUNCTION,
                "(text)",
                "Split text into words.",
                aliases=("demo_mod.parse_alias",),
            ),
            EntryPoint(
                "demo_mod.render", "demo_mod", "demo_mod", EntryKind.FUNCTION, "(items, width=70)"
            ),
            EntryPoint(
                "demo_mod.unprofiled", "demo_mod", "demo_mod", EntryKind.FUNCTION, "(callback)"
            ),
            EntryPoint("demo_mod.Widget", "demo_mod", "demo_mod", EntryKind.CLASS),
            EntryPoint("demo_mod.Widget.draw", "demo_mod", "demo_mod", EntryKind.METHOD),
        ],
    )
    for qualname, per_metric in COUNTS.items():
        add_histograms(
            db,
            qualname,
            {m: from_counts(c) for m, c in per_metric.items()},
            scenario_id="synth",
            environment=ENV,
        )
    sized = [
        Measurement(
            "demo_mod.render", "render-n", Metric.WALL, Histogram.of([100.0 + 3.0 * n] * 4), size=n
        )
        for n in (10, 100, 1000, 5000)
    ]
    store_batch(
        db,
        ScanBatch(
            measurements=sized,
            edges=[CallEdge("demo_mod.parse", "demo_mod.render", 12)],
            coverage=[CoverageRecord("demo_mod.unprofiled", Coverage.NO_ARGUMENTS)],
            scenarios=[
                Scenario("render-n", "demo_mod.render", ScenarioSource.FILE, "n items", "n")
            ],
        ),
        environment_id=ENV.id,
        package="demo_mod",
    )
    db.close()


def add_cpu_samples(path: Path, qualname: str, counts: dict[int, int]) -> None:
    """A later scan's CPU time samples for one API (added to its ``synth`` scenario)."""
    db = open_db(path)
    add_histograms(
        db, qualname, {Metric.CPU: from_counts(counts)}, scenario_id="synth", environment=ENV
    )
    db.close()


def make_project(tmp: Path, *, database: str = "good") -> Path:
    srcdir = tmp / "src"
    shutil.copytree(ROOT, srcdir)
    if database == "good":
        write_database(srcdir / "apiprof.db")
    elif database == "corrupt":
        (srcdir / "apiprof.db").write_bytes(b"SQLite format 3\x00" + b"\x13" * 4000)
    return srcdir


def build_logged(
    srcdir: Path, buildername: str = "html", *, warningiserror: bool = False, **confoverrides
) -> tuple[SphinxTestApp, str, str]:
    """Build and return the app, its warnings and its status output (the app is cleaned up)."""
    warnings, status = StringIO(), StringIO()
    app = SphinxTestApp(
        buildername,
        srcdir=srcdir,
        builddir=srcdir.parent / f"_build-{buildername}",
        confoverrides=confoverrides,
        status=status,
        warning=warnings,
        warningiserror=warningiserror,
    )
    try:
        app.build()
    finally:
        app.cleanup()
    return app, warnings.getvalue(), status.getvalue()


def build(srcdir: Path, buildername: str = "html", **confoverrides) -> tuple[SphinxTestApp, str]:
    """Build and return the app and its warnings (the app is cleaned up already)."""
    app, warnings, _ = build_logged(srcdir, buildername, **confoverrides)
    return app, warnings


class Collector(HTMLParser):
    """Elements with their attributes and the ids/metrics of their ancestors."""

    VOID = frozenset({"br", "img", "input", "link", "meta", "hr", "col", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, dict]] = []
        self.elements: list[tuple[str, dict, list[dict]]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs, [a for _, a in self.stack]))
        if tag not in self.VOID:
            self.stack.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), [a for _, a in self.stack]))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break


def elements(path: Path) -> list[tuple[str, dict, list[dict]]]:
    collector = Collector()
    collector.feed(path.read_text(encoding="utf-8"))
    return collector.elements


def bars_by_metric(
    path: Path, summary_id: str, css_class: str = "apiprof-bar"
) -> dict[str, dict[int, int]]:
    """``{metric: {bucket: count}}`` drawn inside the element with id ``summary_id``."""
    found: dict[str, dict[int, int]] = {}
    for tag, attrs, ancestors in elements(path):
        if tag != "rect" or css_class not in attrs.get("class", "").split():
            continue
        if not any(a.get("id") == summary_id for a in ancestors):
            continue
        metric = next(a["data-metric"] for a in reversed(ancestors) if "data-metric" in a)
        found.setdefault(metric, {})[int(attrs["data-bucket"])] = int(attrs["data-count"])
    return found


def links(path: Path, css_class: str | None = None) -> list[str]:
    return [
        attrs["href"]
        for tag, attrs, _ in elements(path)
        if tag == "a"
        and "href" in attrs
        and (css_class is None or css_class in attrs.get("class", "").split())
    ]


def resolve(from_file: Path, href: str) -> tuple[Path, str]:
    parts = urlsplit(href)
    return (from_file.parent / unquote(parts.path)).resolve(), parts.fragment


def ids_in(path: Path) -> set[str]:
    return {attrs["id"] for _, attrs, _ in elements(path) if "id" in attrs}


@pytest.fixture(scope="module")
def html_build(tmp_path_factory) -> tuple[Path, Path, str]:
    srcdir = make_project(tmp_path_factory.mktemp("html"))
    app, warnings = build(srcdir)
    return srcdir, Path(app.outdir), warnings


# -- the directive -----------------------------------------------------------------------------


def test_directive_bars_match_database_bucket_counts(html_build):
    srcdir, outdir, _ = html_build
    db = open_db(srcdir / "apiprof.db", readonly=True)
    stored = {str(m): h.counts() for m, h in query.histograms(db, "demo_mod.parse").items()}
    db.close()
    drawn = bars_by_metric(outdir / "index.html", "apiprof-demo-mod-parse")
    assert drawn == {
        str(Metric.CPU): stored[str(Metric.CPU)],
        str(Metric.ALLOC_INCL): stored[str(Metric.ALLOC_INCL)],
    }
    assert drawn[str(Metric.CPU)] == {4: 191, 5: 109}


def test_directive_shows_median_spread_samples_and_growth(html_build):
    _, outdir, _ = html_build
    page = (outdir / "index.html").read_text(encoding="utf-8")
    hist = from_counts(COUNTS["demo_mod.parse"][Metric.CPU])
    assert f"≈{format_ns(hist.median)}" in page
    assert f"p10–p90 {format_ns(hist.percentile(10))} – {format_ns(hist.percentile(90))}" in page
    assert "300 calls measured" in page
    # render's compact summary shows only allocation cells and its O(n) growth from the sized scenario
    compact = re.search(
        r'<div class="apiprof-summary apiprof-summary-compact" id="apiprof-demo-mod-render">(.*?)</div>',
        page,
        re.S,
    )
    assert compact, "render's compact summary is missing"
    cells = dict(
        re.findall(r'class="apiprof-cell" data-bucket="(\d+)" data-count="(\d+)"', compact.group(1))
    )
    assert {int(k): int(v) for k, v in cells.items()} == COUNTS["demo_mod.render"][
        Metric.ALLOC_INCL
    ]
    assert '<span class="apiprof-badge-growth"' in compact.group(1) and "O(n)" in compact.group(1)
    # measured at n = 10 … 5000: its typical time is the one at n = 100 (4 calls of 400 ns), named
    assert f"≈{format_ns(400)}" in compact.group(1) and "at n = 100" in compact.group(1)


def test_alias_resolves_to_canonical_api(html_build):
    _, outdir, _ = html_build
    hrefs = links(outdir / "index.html", "apiprof-more")
    assert "apiprof/demo_mod.parse.html" in hrefs
    assert not any("parse_alias" in h for h in hrefs)


def test_svg_has_accessible_title(html_build):
    _, outdir, _ = html_build
    for tag, attrs, _ in elements(outdir / "index.html"):
        if tag == "svg":
            assert attrs.get("role") == "img" and attrs.get("aria-label"), attrs


# -- drill-down pages ----------------------------------------------------------------------------


def test_every_summary_link_resolves_to_an_existing_page(html_build):
    _, outdir, _ = html_build
    checked = 0
    for doc in ("index.html", "api.html"):
        for href in links(outdir / doc, "apiprof-more"):
            target, _ = resolve(outdir / doc, href)
            assert target.is_file(), f"{doc}: {href} does not exist"
            checked += 1
    assert checked >= 6  # parse, render, alias on index; parse, render, Widget, draw in api


def test_drilldown_page_links_back_and_shows_every_bucket(html_build):
    _srcdir, outdir, _ = html_build
    page = outdir / "apiprof" / "demo_mod.render.html"
    [back] = links(page, "apiprof-back")
    target, fragment = resolve(page, back)
    # shown by the directive in index.rst and by autodoc in api.rst: the first document by name wins
    assert target == (outdir / "api.html").resolve()
    assert fragment == "demo_mod.render" and fragment in ids_in(target)
    [back] = links(outdir / "apiprof" / "demo_mod.Widget.draw.html", "apiprof-back")
    target, fragment = resolve(outdir / "apiprof" / "demo_mod.Widget.draw.html", back)
    assert target == (outdir / "api.html").resolve() and fragment == "demo_mod.Widget.draw"
    assert fragment in ids_in(target)
    rows = {
        (
            ancestors[-2]["data-metric"]
            if len(ancestors) > 1 and "data-metric" in ancestors[-2]
            else None,
            int(a["data-bucket"]),
        ): int(a["data-count"])
        for tag, a, ancestors in elements(page)
        if tag == "tr" and "data-bucket" in a
    }
    assert rows[(str(Metric.ALLOC_INCL), 10)] == 200
    assert rows[(str(Metric.WALL), 8)] == 4  # n = 100: 400 ns
    # the CPU time sampled beside the wall time is one row of "other measurements"
    other = {a["data-metric"] for tag, a, _ in elements(page) if tag == "tr" and "data-metric" in a}
    assert other == {str(Metric.CPU)}
    text = page.read_text(encoding="utf-8")
    for section in ("apiprof-scenarios", "apiprof-growth", "apiprof-calls", "apiprof-provenance"):
        assert f'id="{section}"' in text, section
    assert "Test CPU" in text and "cpython 3.12.1" in text
    assert 'class="apiprof-fit"' in text and text.count("<circle") == 4  # 4 sizes + fitted curve
    for p in ("p10", "p50", "p90", "p99"):
        assert f"<td>{p}</td>" in text


def test_scenario_table_has_a_row_per_scenario_and_size_and_a_column_per_metric(html_build):
    _, outdir, _ = html_build
    text = (outdir / "apiprof" / "demo_mod.render.html").read_text(encoding="utf-8")
    table = text[text.index('id="apiprof-scenarios"') :]
    table = table[: table.index("</table>")]
    header = re.findall(r"<th>([^<]*)</th>", table)
    assert header == [
        "scenario",
        "source",
        "size",
        Metric.WALL.label,
        Metric.CPU.label,
        Metric.ALLOC_INCL.label,
    ]
    rows = [
        re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
    ][1:]
    assert len(rows) == 5  # render-n at 4 sizes, synth unsized
    assert table.count('rowspan="4"') == 2  # scenario and source cells span render-n's four sizes
    for n in (10, 100, 1000, 5000):
        [cells] = [c for c in rows if f"<td>{n}</td>" in "".join(f"<td>{x}</td>" for x in c)]
        # wall only: no CPU, no allocation
        assert format_ns(100.0 + 3.0 * n) in cells and cells.count("—") == 2
    synth = next(c for c in rows if "synth" in "".join(c))
    cpu = from_counts(COUNTS["demo_mod.render"][Metric.CPU])
    assert (
        format_ns(cpu.median) in synth
        and format_bytes(from_counts(COUNTS["demo_mod.render"][Metric.ALLOC_INCL]).median) in synth
    )
    assert f'title="p90 {format_ns(cpu.percentile(90))} · 280 calls"' in table


def test_call_edges_link_between_pages(html_build):
    _, outdir, _ = html_build
    page = outdir / "apiprof" / "demo_mod.parse.html"
    assert "demo_mod.render.html" in links(page)
    assert (outdir / "apiprof" / "demo_mod.render.html").is_file()


def test_index_lists_profiled_apis_sortable_by_cost(html_build):
    srcdir, outdir, _ = html_build
    index = outdir / "apiprof" / "index.html"
    in_table = [
        attrs["href"]
        for tag, attrs, ancestors in elements(index)
        if tag == "a" and any(a.get("id") == "apiprof-index-table" for a in ancestors)
    ]
    pages = {unquote(Path(urlsplit(h).path).stem) for h in in_table if "apiprof-doclink" not in h}
    assert {p for p in pages if p.startswith("demo_mod.")} == set(COUNTS)
    for href in in_table:
        target, fragment = resolve(index, href)
        assert target.is_file(), href
        if fragment:
            assert fragment in ids_in(target), href
    text = index.read_text(encoding="utf-8")
    assert 'data-sort="number"' in text and "<script>" in text
    # the time column sorts by the median in ns; "-1" marks a missing value (sorts first)
    rows = re.findall(
        r'<code>(demo_mod[.\w]*)</code></a>.*?</td>\s*<td data-key="([-0-9.e+]+)">.*?'
        r'<td data-key="[-0-9.e+]+">.*?<td data-key="([-0-9.e+]+)">',
        text,
        re.S,
    )
    assert {name for name, _, _ in rows} == set(COUNTS)
    db = open_db(srcdir / "apiprof.db", readonly=True)
    for name, time_key, alloc_key in rows:
        expected = query.summary(db, name)
        assert float(time_key) == pytest.approx(expected.time_median_ns)
        alloc = COUNTS[name].get(Metric.ALLOC_INCL)
        assert float(alloc_key) == (pytest.approx(from_counts(alloc).median) if alloc else -1.0)
    db.close()
    # render's typical time is its wall time (measured in the sized scenario), not its CPU time
    assert {n: float(t) for n, t, _ in rows}["demo_mod.render"] == pytest.approx(
        Histogram.of([100.0 + 3.0 * n for n in (10, 100, 1000, 5000) for _ in range(4)]).median
    )


# -- not profiled, missing and corrupt databases -----------------------------------------------------


def test_unprofiled_api_shows_its_reason_and_the_build_has_no_warning(html_build):
    _, outdir, warnings = html_build
    page = (outdir / "index.html").read_text(encoding="utf-8")
    assert "not profiled: needs arguments apiprof could not make up" in page
    assert "apiprof" not in warnings


def with_typo(srcdir: Path) -> Path:
    (srcdir / "typo.rst").write_text(
        ":orphan:\n\nTypo\n====\n\n.. apiprof:: demo_mod.pasre\n", encoding="utf-8"
    )
    return srcdir


def test_missing_profiles_are_notes_by_default_so_strict_builds_pass(tmp_path):
    srcdir = with_typo(make_project(tmp_path))
    _app, warnings, status = build_logged(srcdir, warningiserror=True)
    assert warnings == ""
    notes = [line for line in status.splitlines() if "apiprof:" in line]
    scanned = [n for n in notes if "demo_mod.unprofiled was scanned but not profiled" in n]
    assert len(scanned) == 2  # the directive and the autodoc entry
    assert all("needs arguments apiprof could not make up" in n for n in scanned)
    [typo] = [n for n in notes if "demo_mod.pasre" in n]
    assert (
        "typo.rst" in typo and "is not in the profile database; did you mean demo_mod.parse" in typo
    )


def test_missing_profiles_warn_when_asked_with_a_type_per_kind(tmp_path):
    srcdir = with_typo(make_project(tmp_path))
    _, warnings = build(srcdir, apiprof_warn_unprofiled=True)
    lines = [w for w in warnings.splitlines() if "apiprof" in w]
    assert sum("[apiprof.unprofiled]" in w for w in lines) == 2
    assert sum("[apiprof.unknown]" in w and "did you mean demo_mod.parse" in w for w in lines) == 1
    _, warnings = build(
        srcdir, apiprof_warn_unprofiled=True, suppress_warnings=["apiprof.unprofiled"]
    )
    assert "[apiprof.unprofiled]" not in warnings and "[apiprof.unknown]" in warnings


@pytest.mark.parametrize("database", ["missing", "corrupt"])
def test_unusable_database_gives_one_warning_and_a_build(tmp_path, database):
    srcdir = make_project(tmp_path, database=database)
    app, warnings = build(srcdir)
    apiprof_warnings = [w for w in warnings.splitlines() if "apiprof" in w]
    assert len(apiprof_warnings) == 1, warnings
    assert "[apiprof.database]" in apiprof_warnings[0]
    assert ("no such database" if database == "missing" else "not a usable") in apiprof_warnings[0]
    html = (Path(app.outdir) / "index.html").read_text(encoding="utf-8")
    assert "apiprof-bar" not in html
    assert (Path(app.outdir) / "api.html").is_file()


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
    status = StringIO()
    app = SphinxTestApp(
        "html",
        srcdir=srcdir,
        builddir=srcdir.parent / "_build-html",
        status=status,
        warning=StringIO(),
    )
    try:
        app.build()
    finally:
        app.cleanup()
    assert "0 added, 0 changed, 0 removed" in status.getvalue()
    add_cpu_samples(srcdir / "apiprof.db", "demo_mod.parse", {4: 700})
    status = StringIO()
    app = SphinxTestApp(
        "html",
        srcdir=srcdir,
        builddir=srcdir.parent / "_build-html",
        status=status,
        warning=StringIO(),
    )
    try:
        app.build()
    finally:
        app.cleanup()
    assert "0 added, 2 changed, 0 removed" in status.getvalue()  # both documents show parse
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
    srcdir = make_project(tmp_path)
    warnings = StringIO()
    app = SphinxTestApp(
        "html",
        srcdir=srcdir,
        builddir=tmp_path / "_build-par",
        parallel=2,
        status=StringIO(),
        warning=warnings,
    )
    try:
        app.build()
    finally:
        app.cleanup()
    _, outdir, _ = html_build
    for doc in ("index.html", "api.html"):
        assert bars_by_metric(Path(app.outdir) / doc, "apiprof-demo-mod-parse") == bars_by_metric(
            outdir / doc, "apiprof-demo-mod-parse"
        )
    assert sorted(p.name for p in (Path(app.outdir) / "apiprof").iterdir()) == sorted(
        p.name for p in (outdir / "apiprof").iterdir()
    )


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
    warnings = StringIO()
    app = SphinxTestApp(
        "html",
        srcdir=Path(__file__).parent.parent / "docs",
        builddir=tmp_path / "_build",
        confoverrides={"apiprof_db": str(db_path)},
        status=StringIO(),
        warning=warnings,
    )
    try:
        app.build()
    finally:
        app.cleanup()
    out = Path(app.outdir)
    assert "apiprof" not in warnings.getvalue(), warnings.getvalue()
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
