"""Real Sphinx builds of the test project against a generated profile database: the directive,
drill-down pages, and APIs that are not profiled. One HTML build is shared by the module."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from sphinxhelp import (
    COUNTS,
    bars_by_metric,
    build,
    build_html_once,
    build_logged,
    elements,
    ids_in,
    links,
    make_project,
    resolve,
)

from apiprof.db import query
from apiprof.db.schema import open_db
from apiprof.format import format_bytes, format_ns
from apiprof.model.histogram import Histogram, from_counts
from apiprof.model.records import (
    Metric,
)

html_build = pytest.fixture(scope="module")(build_html_once)


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
