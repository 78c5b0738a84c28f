"""Drill-down pages: one per profiled API shown in the docs, plus an index sortable by cost.

Written from ``html-collect-pages``. Each body is rendered from our templates and wrapped in the
theme's ``page.html``, so the pages look like the rest of the project — but rendering hundreds of
pages through a theme costs more than the rest of the extension, and every drill-down page sits
in the same folder (same relative links, same chrome). So the theme renders one *frame* page
with placeholder title and body, and each API's page is that frame with its own title, body and
URL filled in (``html_baseurl`` gives every page its own canonical URL; that is filled in too).

A page is written only when its bytes changed, a no-op rebuild skips the pages altogether, and
pages the extension no longer produces (the API left the docs, the database was deleted,
``apiprof_pages = "none"``) are removed. A manifest in the pages folder lists what was written.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape
from sphinx.application import Sphinx
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.environment import BuildEnvironment

from apiprof import __version__
from apiprof.format import format_bytes, format_ns, worth_showing
from apiprof.model.records import Metric
from apiprof.sphinx_ext.envdata import api_locations
from apiprof.sphinx_ext.gc_pause import cycle_collector_paused
from apiprof.sphinx_ext.growth_view import view_growth
from apiprof.sphinx_ext.i18n import _
from apiprof.sphinx_ext.index_body import index_html
from apiprof.sphinx_ext.page_body import ApiPage, api_page_html
from apiprof.sphinx_ext.pages_names import (
    INDEX_PAGE,
    PAGE_BUILDERS,
    PAGES_DIR,
    assign_page_names,
    pages_enabled,
)
from apiprof.sphinx_ext.profiles import Profiles, profiles_for
from apiprof.sphinx_ext.render import render_legend
from apiprof.sphinx_ext.rst_inline import inline_rst_html
from apiprof.sphinx_ext.scenario_view import SliceFigures, scenario_table, stored_scenario_table
from apiprof.sphinx_ext.views import (
    detail_metric,
    growth_phrase,
    growth_rank,
    heat_strip,
    lab_and_collected,
    other_metrics,
    view_summary,
)

if TYPE_CHECKING:
    from apiprof.db.query import ApiSummary

MANIFEST = ".apiprof-pages.json"
FRAME_TITLE = "apiprofframetitle"
FRAME_BODY = "<!-- apiprof frame body -->"


# -- which APIs get pages (decided once, before writing) ----------------------------------------


def profiled_apis(app: Sphinx, profiles: Profiles) -> list[str]:
    """The APIs that get pages: those the docs show, or every profiled one (``apiprof_pages = "all"``)."""
    if app.config.apiprof_pages == "all":
        return sorted(name for name, s in profiles.summaries().items() if s.profiled)
    return sorted(api_locations(app.env))


def assign_pages(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """``env-updated`` handler (main process, before any writer forks): the page name of every
    API that gets one, so summary links and the page writer agree."""
    names: dict[str, str] = {}
    profiles = profiles_for(env)
    if pages_enabled(app.builder) and profiles.usable:
        names = assign_page_names(profiled_apis(app, profiles))
    env.apiprof_page_names = names  # type: ignore[attr-defined]
    return []


# -- writing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    """What the last build wrote into the pages folder, and what it was made from."""

    key: str
    files: frozenset[str]  # paths relative to the output directory, "/"-separated

    @staticmethod
    def load(pages_root: Path) -> Manifest:
        try:
            data = json.loads((pages_root / MANIFEST).read_text(encoding="utf-8"))
            return Manifest(str(data["key"]), frozenset(str(f) for f in data["files"]))
        except (OSError, ValueError, KeyError, TypeError):
            return Manifest("", frozenset())

    def save(self, pages_root: Path) -> None:
        text = json.dumps({"key": self.key, "files": sorted(self.files)}, indent=0)
        if self.files or (pages_root / MANIFEST).exists():
            write_if_changed(pages_root / MANIFEST, text, "utf-8", pages_root)


def inside(path: str | Path, folder: str | Path) -> str:
    """``path`` relative to ``folder`` ("/"-separated) after both are made absolute and
    normalised ("" for the folder itself); ValueError when it lies outside. String operations:
    pathlib's ``relative_to`` cost more than writing the pages."""
    target, base = os.path.abspath(path), os.path.abspath(folder)
    if target == base:
        return ""
    prefix = base if base.endswith(os.sep) else base + os.sep
    if not target.startswith(prefix):
        raise ValueError(f"{path} is not inside {folder}")
    return target[len(prefix) :].replace(os.sep, "/")


def write_if_changed(path: Path, text: str, encoding: str, root: Path) -> bool:
    """Write ``text`` unless the file already holds exactly it; refuses paths outside ``root``."""
    try:
        inside(path, root)
    except ValueError:
        raise ValueError(f"apiprof: refusing to write {path} outside {root}") from None
    data = text.encode(encoding, "xmlcharrefreplace")
    try:
        with open(path, "rb") as existing:
            if existing.read() == data:
                return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as target:
        target.write(data)
    return True


class PageWriter:
    """Writes the pages of one build through the theme's frame."""

    def __init__(self, app: Sphinx, builder: StandaloneHTMLBuilder) -> None:
        self.app = app
        self.builder = builder
        self.outdir = Path(builder.outdir)
        self.root = self.outdir / PAGES_DIR
        self.encoding = app.config.html_output_encoding
        self.written: set[str] = set()

    def relative(self, path: Path) -> str:
        return inside(path, self.outdir)

    @cached_property
    def legend(self) -> Markup:
        """The colour legend every page shows (the same for all pages of a build)."""
        return render_legend()

    def outfile(self, pagename: str) -> Path:
        return Path(self.builder.get_outfilename(pagename))

    def theme_page(self, pagename: str, context: dict[str, Any]) -> str:
        """A page rendered through the theme's ``page.html``, returned instead of written."""
        scratch = self.root / f".apiprof-scratch-{os.getpid()}.html"
        self.builder.handle_page(pagename, context, "page.html", outfilename=str(scratch))  # type: ignore[arg-type]
        try:
            return scratch.read_text(encoding=self.encoding)
        finally:
            scratch.unlink(missing_ok=True)

    def put(self, pagename: str, text: str) -> None:
        path = self.outfile(pagename)
        write_if_changed(path, text, self.encoding, self.root)
        self.written.add(self.relative(path))

    def page_url(self, pagename: str) -> str:
        base = self.app.config.html_baseurl
        return f"{base.rstrip('/')}/{self.builder.get_target_uri(pagename)}" if base else ""

    def parents(self, pagename: str) -> list[dict[str, str]]:
        return [
            {"link": self.builder.get_relative_uri(pagename, INDEX_PAGE), "title": _("API costs")}
        ]


def write_pages(app: Sphinx) -> Iterator[tuple[str, dict[str, Any], str]]:
    """``html-collect-pages`` handler: writes the pages itself (only the changed ones) and
    removes stale ones; yields nothing for Sphinx to write."""
    builder = app.builder
    if builder.name not in PAGE_BUILDERS or not isinstance(builder, StandaloneHTMLBuilder):
        return
    writer = PageWriter(app, builder)
    manifest = Manifest.load(writer.root)
    key = ""
    if pages_enabled(builder):
        with cycle_collector_paused():
            key = _write_all(app, writer, manifest)
        profiles_for(app.env).release_page_data()
    stale = manifest.files - writer.written
    _remove(writer, stale)
    Manifest(key, frozenset(writer.written)).save(writer.root)
    yield from ()


def _write_all(app: Sphinx, writer: PageWriter, manifest: Manifest) -> str:
    env = app.env
    profiles = profiles_for(env)
    names: dict[str, str] = getattr(env, "apiprof_page_names", {}) if profiles.usable else {}
    locations = api_locations(env)
    frame = ""
    if names:
        first = next(iter(names.values()))
        frame = writer.theme_page(
            first, {"title": FRAME_TITLE, "body": FRAME_BODY, "parents": writer.parents(first)}
        )
    key = hashlib.sha256(
        json.dumps(
            [__version__, profiles.fingerprint, profiles.error, frame, names, locations],
            sort_keys=True,
        ).encode()
    ).hexdigest()
    if key == manifest.key and all((writer.outdir / f).is_file() for f in manifest.files):
        writer.written.update(manifest.files)  # nothing the pages show has changed
        return key
    if frame.count(FRAME_BODY) != 1 or FRAME_TITLE not in frame:
        frame = ""  # the theme altered the placeholders: render every page through it
    frame_url = str(escape(writer.page_url(next(iter(names.values()))))) if names else ""
    summaries = {name: profiles.lookup(name) for name in names}
    for qualname, pagename in names.items():
        summary = summaries[qualname]
        if summary is None:
            continue
        title = _("%(name)s — cost profile") % {"name": qualname}
        body = render_api_page(app, writer, profiles, summary, pagename, locations, names)
        if frame:
            page = frame.replace(FRAME_TITLE, str(escape(title))).replace(FRAME_BODY, body, 1)
            if frame_url:
                page = page.replace(frame_url, str(escape(writer.page_url(pagename))))
        else:
            page = writer.theme_page(
                pagename, {"title": title, "body": body, "parents": writer.parents(pagename)}
            )
        writer.put(pagename, page)
    rows = [
        _index_row(writer, summary, locations, names)
        for summary in summaries.values()
        if summary is not None
    ]
    body = index_html(rows, writer.legend, profiles.error)
    writer.put(
        INDEX_PAGE,
        writer.theme_page(INDEX_PAGE, {"title": _("API costs"), "body": body, "parents": []}),
    )
    return key


def _remove(writer: PageWriter, stale: frozenset[str]) -> None:
    """Delete pages an earlier build wrote and this one did not (never outside the pages
    folder, never a page of a real document)."""
    root = Path(os.path.abspath(writer.root))
    documents = {writer.relative(writer.outfile(docname)) for docname in writer.app.env.all_docs}
    for relative in sorted(stale - documents):
        path = Path(os.path.abspath(writer.outdir / relative))
        if not path.is_relative_to(root) or path == root:
            continue
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent != root and parent.is_relative_to(root):
            try:
                parent.rmdir()  # dirhtml: apiprof/<name>/index.html leaves an empty folder
            except OSError:
                break
            parent = parent.parent


# -- page bodies --------------------------------------------------------------------------------


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
    growth_key: int
    samples: int
    strip_svg: Markup


def _key(value: float | None) -> float:
    return -1.0 if value is None or math.isnan(value) else value


def _doc_url(writer: PageWriter, from_page: str, location: tuple[str, str] | None) -> str:
    if location is None:
        return ""
    docname, anchor = location
    url = writer.builder.get_relative_uri(from_page, docname)
    return f"{url}#{anchor}" if anchor else url


def _index_row(
    writer: PageWriter,
    summary: ApiSummary,
    locations: dict[str, tuple[str, str]],
    names: dict[str, str],
) -> IndexRow:
    hist = summary.time_histogram
    metric = summary.time_metric
    strip = heat_strip(metric, hist, width=120) if hist and metric else Markup("")
    median, p90 = hist.percentiles((50, 90)) if hist else (None, None)
    return IndexRow(
        qualname=summary.qualname,
        url=writer.builder.get_relative_uri(INDEX_PAGE, names[summary.qualname]),
        doc_url=_doc_url(writer, INDEX_PAGE, locations.get(summary.qualname)),
        time=format_ns(median),
        time_key=_key(median),
        p90=format_ns(p90),
        p90_key=_key(p90),
        alloc=format_bytes(summary.alloc_median_bytes),
        alloc_key=_key(summary.alloc_median_bytes),
        growth=growth_phrase(summary.growth),
        growth_key=growth_rank(summary.growth),
        samples=summary.samples,
        strip_svg=strip,
    )


def render_api_page(
    app: Sphinx,
    writer: PageWriter,
    profiles: Profiles,
    summary: ApiSummary,
    pagename: str,
    locations: dict[str, tuple[str, str]],
    names: dict[str, str],
) -> str:
    """The body of one API's drill-down page."""
    qualname = summary.qualname
    shown = [m for m in Metric if worth_showing(m, summary.histograms.get(m))]
    fits, provenance, edges, plots = profiles.background(qualname)
    # with its charts stored, a page reads of its slices only the scenario table's cells
    cells = profiles.stored_cells(qualname) if plots is not None else None
    slices = profiles.slices(qualname) if cells is None else []
    figures = SliceFigures()

    def edge_links(pairs: list[tuple[str, int]]) -> list[tuple[str, str, int]]:
        return [
            (
                name,
                writer.builder.get_relative_uri(pagename, names[name]) if name in names else "",
                count,
            )
            for name, count in pairs
        ]

    page = ApiPage(
        summary=summary,
        summary_html=inline_rst_html(summary.summary),
        view=view_summary(qualname, summary, []),
        legend=writer.legend,
        details=[
            detail_metric(qualname, m, summary.histograms[m])
            for m in shown
            if m in (summary.time_metric, Metric.ALLOC_INCL)
        ],
        other_metrics=other_metrics(
            {
                m: summary.histograms[m]
                for m in shown
                if m not in (summary.time_metric, Metric.ALLOC_INCL)
            }
        ),
        side_by_side=lab_and_collected(slices),
        scenarios=scenario_table(slices, figures)
        if cells is None
        else stored_scenario_table(*cells),
        growth=view_growth(qualname, fits, slices, figures, plots),
        provenance=provenance,
        callers=edge_links(edges["callers"]),
        callees=edge_links(edges["callees"]),
        doc_url=_doc_url(writer, pagename, locations.get(qualname)),
        index_url=writer.builder.get_relative_uri(pagename, INDEX_PAGE),
    )
    return api_page_html(page)
