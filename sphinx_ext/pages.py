"""Drill-down pages: one per profiled API shown in the docs, plus an index sortable by cost.

Generated through ``html-collect-pages``: each body is rendered from our templates and handed
to the theme's ``page.html``, so the pages look like the rest of the project.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup, escape
from sphinx.application import Sphinx

from apiprof.db import query
from apiprof.db.query import ApiSummary
from apiprof.format import format_bytes, format_ns, worth_showing
from apiprof.model.records import Metric
from apiprof.sphinx_ext import svg
from apiprof.sphinx_ext.envdata import api_locations
from apiprof.sphinx_ext.pages_names import INDEX_PAGE, page_name, pages_enabled
from apiprof.sphinx_ext.profiles import Profiles, profiles_for
from apiprof.sphinx_ext.render import render
from apiprof.sphinx_ext.views import (
    detail_metric,
    growth_phrase,
    scenario_table,
    view_growth,
    view_summary,
)


@dataclass(frozen=True)
class IndexRow:
    qualname: str
    url: str
    doc_url: str
    time: str
    time_key: float
    p90: str
    p90_key: float
    alloc: str
    alloc_key: float
    growth: str
    samples: int
    strip_svg: Markup


def _key(value: float | None) -> float:
    return -1.0 if value is None or math.isnan(value) else value


def profiled_apis(app: Sphinx, profiles: Profiles) -> dict[str, ApiSummary]:
    """The APIs that get pages: those the docs show, or every profiled one (``apiprof_pages = "all"``)."""
    if app.config.apiprof_pages == "all":
        found = profiles.read(query.all_summaries) or {}
    else:
        found = profiles.read(query.summaries, list(api_locations(app.env))) or {}
    return {name: s for name, s in sorted(found.items()) if s.profiled}


def collect_pages(app: Sphinx) -> Iterator[tuple[str, dict, str]]:
    """``html-collect-pages`` handler: yields (pagename, context, template) per page.

    Rendering hundreds of pages through a theme costs more than the rest of the extension, and
    every drill-down page sits in the same folder (same relative links, same chrome). So the
    theme renders one *frame* page with placeholder title and body, and each API's page is that
    frame with its own title and body filled in. Settings that make pages differ by name
    (``html_baseurl`` → canonical links) fall back to rendering every page through the theme.
    """
    if not pages_enabled(app.builder):
        return
    profiles = profiles_for(app.env)
    if not profiles.usable:
        return
    apis = profiled_apis(app, profiles)
    locations = api_locations(app.env)
    paged = set(apis)
    encoding = app.config.html_output_encoding
    frame: str | None = None
    for qualname, summary in apis.items():
        pagename = page_name(qualname)
        title = f"{qualname} — cost profile"
        body = render_api_page(app, profiles, summary, pagename, locations, paged)
        outfile = Path(app.builder.get_outfilename(pagename))
        if frame is None:
            frame = ""  # rendered through the theme from here on unless the frame below works
            if not app.config.html_baseurl:
                yield (
                    pagename,
                    {"title": FRAME_TITLE, "body": FRAME_BODY, "parents": _parents(app, pagename)},
                    "page.html",
                )
                frame = _read_frame(outfile, encoding)
        if frame:
            fill_frame(frame, title, body, outfile, encoding)
        else:  # also overwrites a frame page whose placeholders the theme did not keep
            yield (
                pagename,
                {"title": title, "body": body, "parents": _parents(app, pagename)},
                "page.html",
            )
    rows = [_index_row(app, summary, locations) for summary in apis.values()]
    yield (
        INDEX_PAGE,
        {"title": "API costs", "body": render("index_page.html", rows=rows), "parents": []},
        "page.html",
    )


FRAME_TITLE = "apiprofframetitle"
FRAME_BODY = "<!-- apiprof frame body -->"


def _read_frame(path: Path, encoding: str) -> str:
    """The rendered frame page, or "" when the theme did not keep the placeholders intact."""
    text = path.read_text(encoding=encoding)
    return text if text.count(FRAME_BODY) == 1 and FRAME_TITLE in text else ""


def fill_frame(frame: str, title: str, body: str, path: Path, encoding: str) -> None:
    """Write one page: the theme's frame with this page's title and body."""
    page = frame.replace(FRAME_TITLE, str(escape(title))).replace(FRAME_BODY, body)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding=encoding, errors="xmlcharrefreplace")


def _parents(app: Sphinx, pagename: str) -> list[dict[str, str]]:
    return [{"link": app.builder.get_relative_uri(pagename, INDEX_PAGE), "title": "API costs"}]


def _doc_url(app: Sphinx, from_page: str, location: tuple[str, str] | None) -> str:
    if location is None:
        return ""
    docname, anchor = location
    url = app.builder.get_relative_uri(from_page, docname)
    return f"{url}#{anchor}" if anchor else url


def _index_row(app: Sphinx, summary: ApiSummary, locations: dict[str, tuple[str, str]]) -> IndexRow:
    hist = summary.time_histogram
    metric = summary.time_metric
    strip = (
        svg.heat_strip_svg(
            hist.counts(), metric, title=f"{summary.qualname}: {metric.label}", width=120
        )
        if hist
        else ""
    )
    return IndexRow(
        qualname=summary.qualname,
        url=app.builder.get_relative_uri(INDEX_PAGE, page_name(summary.qualname)),
        doc_url=_doc_url(app, INDEX_PAGE, locations.get(summary.qualname)),
        time=format_ns(summary.time_median_ns),
        time_key=_key(summary.time_median_ns),
        p90=format_ns(summary.time_p90_ns),
        p90_key=_key(summary.time_p90_ns),
        alloc=format_bytes(summary.alloc_median_bytes),
        alloc_key=_key(summary.alloc_median_bytes),
        growth=growth_phrase(summary.growth),
        samples=summary.samples,
        strip_svg=Markup(strip),
    )


def render_api_page(
    app: Sphinx,
    profiles: Profiles,
    summary: ApiSummary,
    pagename: str,
    locations: dict[str, tuple[str, str]],
    paged: set[str],
) -> str:
    """The body of one API's drill-down page."""
    qualname = summary.qualname
    slices = profiles.read(query.scenario_breakdown, qualname) or []
    edges = profiles.read(query.call_edges, qualname) or {"callers": [], "callees": []}

    def edge_links(pairs: list[tuple[str, int]]) -> list[tuple[str, str, int]]:
        return [
            (
                name,
                app.builder.get_relative_uri(pagename, page_name(name)) if name in paged else "",
                count,
            )
            for name, count in pairs
        ]

    return render(
        "api_page.html",
        summary=summary,
        view=view_summary(qualname, summary, []),
        details=[
            detail_metric(qualname, m, summary.histograms[m])
            for m in Metric
            if worth_showing(m, summary.histograms.get(m))
        ],
        scenarios=scenario_table(slices),
        growth=view_growth(qualname, profiles.read(query.growth, qualname) or [], slices),
        provenance=profiles.read(query.provenance, qualname) or [],
        callers=edge_links(edges["callers"]),
        callees=edge_links(edges["callees"]),
        doc_url=_doc_url(app, pagename, locations.get(qualname)),
        index_url=app.builder.get_relative_uri(pagename, INDEX_PAGE),
    )
