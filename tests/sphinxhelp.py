"""What the Sphinx tests share: a generated profile database, the test project, builds, and
reading the HTML they write."""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from io import StringIO
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from sphinx.testing.util import SphinxTestApp

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_batch, store_entry_points
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
    srcdir: Path,
    buildername: str = "html",
    *,
    warningiserror: bool = False,
    parallel: int = 0,
    builddir: Path | None = None,
    **confoverrides,
) -> tuple[SphinxTestApp, str, str]:
    """Build and return the app, its warnings and its status output (the app is cleaned up).
    The output goes beside ``srcdir`` unless ``builddir`` says where (a source tree that is not
    a temporary copy, such as the project's own docs)."""
    warnings, status = StringIO(), StringIO()
    app = SphinxTestApp(
        buildername,
        srcdir=srcdir,
        builddir=builddir or srcdir.parent / f"_build-{buildername}",
        confoverrides=confoverrides,
        status=status,
        warning=warnings,
        warningiserror=warningiserror,
        parallel=parallel,
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


def rebuild(srcdir: Path, buildername: str = "html", **conf) -> tuple[Any, str]:
    """Build again into the output folder of the last :func:`build` (an incremental build);
    returns the app and its status output."""
    app, _, status = build_logged(srcdir, buildername, **conf)
    return app, status


def build_html_once(tmp_path_factory) -> tuple[Path, Path, str]:
    """A module's shared HTML build of the test project: (source dir, output dir, warnings)."""
    srcdir = make_project(tmp_path_factory.mktemp("html"))
    app, warnings = build(srcdir)
    return srcdir, Path(app.outdir), warnings
