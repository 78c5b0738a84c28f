"""The body of an API's drill-down page, built in Python.

A docs build writes one page per profiled API, and through a jinja2 template each page cost
tens of thousands of template calls and escapes — most of the extension's share of the build.
The page is a fixed sequence of sections, so it is written here as plain string pieces: every
value from the database is escaped with :func:`~apiprof.sphinx_ext.rows.text`, every sentence
goes through the message catalog (:mod:`apiprof.sphinx_ext.i18n`) with its variables escaped,
and fragments made by the views (SVGs, table rows) arrive as :class:`~markupsafe.Markup`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from apiprof.sphinx_ext.i18n import _, ngettext
from apiprof.sphinx_ext.rows import text

if TYPE_CHECKING:
    from apiprof.db.details import Provenance
    from apiprof.db.query import ApiSummary
    from apiprof.sphinx_ext.growth_view import GrowthView
    from apiprof.sphinx_ext.scenario_view import ScenarioTable
    from apiprof.sphinx_ext.views import (
        MetricDetail,
        SideBySideRow,
        SummaryView,
    )

Edge = tuple[str, str, int]  # (qualified name, link or "", calls)


def fill(translated: str, **variables: Any) -> str:
    """A translated message with its variables escaped (the translation itself is trusted);
    callers translate with literal ``_()``/``ngettext()`` calls, so extraction finds them."""
    return translated % {name: text(value) for name, value in variables.items()}


def header(*labels: str) -> str:
    """A table's header row. Callers pass literal ``_()`` calls, never ``_()`` inside an
    f-string: Babel cannot see into f-strings before Python 3.12."""
    return "<thead><tr>" + "".join(f"<th>{label}</th>" for label in labels) + "</tr></thead>\n"


def scroll(label: str) -> str:
    """The opening tag of a horizontally scrolling, keyboard-reachable table wrapper."""
    return f'<div class="apiprof-scroll" role="region" tabindex="0" aria-label="{label}">\n'


@dataclass(frozen=True)
class ApiPage:
    """Everything one drill-down page shows, as the views made it."""

    summary: ApiSummary
    summary_html: str  # the one-line description, already HTML
    view: SummaryView
    legend: str
    details: Sequence[MetricDetail]
    other_metrics: str  # table rows
    side_by_side: Sequence[SideBySideRow]
    scenarios: ScenarioTable
    growth: Sequence[GrowthView]
    provenance: Sequence[Provenance]
    callers: Sequence[Edge]
    callees: Sequence[Edge]
    doc_url: str
    index_url: str


def api_page_html(page: ApiPage) -> str:
    s, view = page.summary, page.view
    out = [
        '<section class="apiprof-page" id="apiprof-page">\n<h1>',
        _("Cost profile of %(name)s") % {"name": f"<code>{text(s.qualname)}</code>"},
        '</h1>\n<p class="apiprof-nav">\n',
    ]
    if page.doc_url:
        out += [
            f'<a class="apiprof-back" href="{text(page.doc_url)}">← ',
            fill(_("documentation of %(name)s"), name=s.qualname),
            "</a> · ",
        ]
    out += [f'  <a href="{text(page.index_url)}">', _("all profiled APIs"), "</a>\n</p>\n"]
    if s.signature or s.summary:
        out.append('<p class="apiprof-about">')
        if s.signature:
            out.append(f"<code>{text(s.qualname)}{text(s.signature)}</code>")
        if s.summary:
            out += [" — ", str(page.summary_html)]
        out.append("</p>\n")
    out += ['<p class="apiprof-lede">\n  ', _("Typically"), f" <strong>{text(view.hint)}</strong>"]
    if view.growth:
        out += [", ", _("growing"), f" <strong>{text(view.growth)}</strong>"]
    out += [
        ";\n  ",
        fill(
            ngettext(
                "%(calls)s calls measured in %(num)s scenario.",
                "%(calls)s calls measured in %(num)s scenarios.",
                view.scenarios,
            ),
            calls=view.samples,
            num=view.scenarios,
        ),
        "\n</p>\n",
        str(page.legend),
        "\n\n",
    ]
    if page.side_by_side:
        _side_by_side(out, page.side_by_side)
    out.append("\n")
    _distributions(out, page.details, str(page.other_metrics))
    out.append("\n")
    if page.scenarios.body:
        _scenarios(out, page.scenarios)
    out.append("\n")
    if page.growth:
        _growth(out, page.growth)
    out.append("\n")
    if page.callers or page.callees:
        _calls(out, page.callers, page.callees)
    out.append("\n")
    if page.provenance:
        _provenance(out, page.provenance)
    out.append("</section>")
    return "".join(out)


def _side_by_side(out: list[str], side_by_side: Sequence[SideBySideRow]) -> None:
    title = _("Lab scan and real programs")
    out += [
        f'<section id="apiprof-lab-and-programs">\n<h2>{title}</h2>\n<p>',
        _(
            "The summary figures on this page come from the lab scan; real programs called "
            "this API with their own arguments and data."
        ),
        "</p>\n",
        scroll(title),
        '<table class="apiprof-table apiprof-table-sources">\n',
        "  <thead><tr><th>",
        _("metric"),
        '</th><th class="apiprof-source-lab">',
        _("lab scan"),
        '</th><th class="apiprof-source-collected">',
        _("measured in real programs"),
        "</th></tr></thead>\n  <tbody>\n",
    ]
    for row in side_by_side:
        out.append(f'    <tr>\n      <th scope="row">{text(row.label)}</th>\n')
        for cell, kind in ((row.lab, "lab"), (row.collected, "collected")):
            out.append(f'      <td class="apiprof-source-{kind}">')
            if cell:
                out += [
                    str(cell.strip_svg),
                    f'<span class="apiprof-figure">≈{text(cell.median)}</span> ',
                    f'<span class="apiprof-detail-note">p90 {text(cell.p90)} · ',
                    fill(ngettext("%(num)s call", "%(num)s calls", cell.samples), num=cell.samples),
                    "</span>",
                ]
            else:
                out.append("—")
            out.append("</td>\n")
        out.append("    </tr>\n")
    out.append("  </tbody>\n</table>\n</div>\n</section>\n")


def _distributions(out: list[str], details: Sequence[MetricDetail], other_rows: str) -> None:
    out += ['<section id="apiprof-metrics">\n<h2>', _("Distributions"), "</h2>\n"]
    for d in details:
        metric = text(d.view.metric.value)
        out += [
            f'<section class="apiprof-detail" id="metric-{metric}">\n',
            f"  <h3>{text(d.view.label)}</h3>\n",
            '  <div class="apiprof-detail-row">\n',
            f'    <figure class="apiprof-metric" data-metric="{metric}">',
            str(d.view.histogram_svg),
            "\n      <figcaption>",
            fill(
                _("median ≈%(median)s (dashed line) · mean %(mean)s ± %(stdev)s"),
                median=d.view.median,
                mean=d.mean,
                stdev=d.stdev,
            ),
            "</figcaption>\n    </figure>\n    ",
            scroll(_("Percentiles")),
            '    <table class="apiprof-table apiprof-table-percentiles">\n',
            "      ",
            header(_("percentile"), _("value")),
            "      <tbody>\n      ",
            str(d.percentile_rows),
            "\n      <tr><td>",
            _("calls measured"),
            f"</td><td>{text(d.view.samples)}</td></tr>\n",
            "      </tbody>\n    </table>\n    </div>\n  </div>\n  ",
            scroll(_("Calls per range of cost")),
            f'  <table class="apiprof-table apiprof-table-buckets" data-metric="{metric}">\n',
            "    ",
            header(_("range of cost"), _("calls"), _("share")),
            "    <tbody>\n    ",
            str(d.bucket_rows),
            "\n    </tbody>\n  </table>\n  </div>\n</section>\n",
        ]
    if other_rows:
        title = _("Other measurements")
        out += [
            f"<h3>{title}</h3>\n",
            scroll(title),
            '<table class="apiprof-table apiprof-table-other">\n',
            "  ",
            header(_("metric"), _("median"), "p10 – p90", _("calls measured")),
            "  <tbody>\n  ",
            other_rows,
            "\n  </tbody>\n</table>\n</div>\n",
        ]
    out.append("</section>\n")


def _scenarios(out: list[str], scenarios: ScenarioTable) -> None:
    title = _("By scenario")
    out += [
        f'<section id="apiprof-scenarios">\n<h2>{title}</h2>\n<p>',
        _("Medians per scenario and input size; hover a value for its p90 and number of calls."),
        "</p>\n",
        scroll(title),
        '<table class="apiprof-table apiprof-table-scenarios">\n',
        "  ",
        header(_("scenario"), _("source"), _("size"), *map(text, scenarios.columns)),
        "  <tbody>\n  ",
        str(scenarios.body),
        "\n  </tbody>\n</table>\n</div>\n</section>\n",
    ]


def _fit_caption(g: GrowthView) -> str:
    scenario = _("scenario")
    return (
        f"<strong>{text(g.growth_class)}</strong> — {text(g.metric)} {text(g.formula)}; "
        f"{text(g.quality)}; {scenario} <code>{text(g.scenario_id)}</code>"
    )


def _growth(out: list[str], growth: Sequence[GrowthView]) -> None:
    title = _("Growth with input size")
    out.append(f'<section id="apiprof-growth">\n<h2>{title}</h2>\n')
    for g in growth:
        if not g.point_rows:
            continue
        out += [
            '<figure class="apiprof-growth-chart">\n  ',
            str(g.chart_svg),
            f"\n  <figcaption>{_fit_caption(g)}</figcaption>\n</figure>\n",
            scroll(title),
            '<table class="apiprof-table apiprof-table-growth">\n',
            "  ",
            header(text(g.size_axis), _("measured median"), _("fitted curve"), _("difference")),
            "  <tbody>\n  ",
            str(g.point_rows),
            "\n  </tbody>\n</table>\n</div>\n",
        ]
    others = [g for g in growth if not g.point_rows]
    if others:
        out += ["<p>", _("Other fits:"), '</p>\n<ul class="apiprof-fits">\n']
        out += [f"<li>{_fit_caption(g)}</li>\n" for g in others]
        out.append("</ul>\n")
    out.append("</section>\n")


def _calls(out: list[str], callers: Sequence[Edge], callees: Sequence[Edge]) -> None:
    out += ['<section id="apiprof-calls">\n<h2>', _("Calls"), "</h2>\n"]
    out.append('<div class="apiprof-detail-row">\n')
    for title, edges in ((_("Called by"), callers), (_("Calls"), callees)):
        if not edges:
            continue
        out += [
            "  ",
            scroll(title),
            '  <table class="apiprof-table apiprof-table-edges">\n',
            "    ",
            header(title, _("calls")),
            "    <tbody>\n",
        ]
        for name, url, count in edges:
            code = f"<code>{text(name)}</code>"
            linked = f'<a href="{text(url)}">{code}</a>' if url else code
            out.append(f"      <tr><td>{linked}</td><td>{text(count)}</td></tr>\n")
        out.append("    </tbody>\n  </table>\n  </div>\n")
    out.append("</div>\n</section>\n")


def _scan_line(scan: dict[str, Any]) -> str:
    """``#3 2026-01-02 → 2026-01-03 (how it measured)`` for one scan."""
    line = f"#{text(scan['id'])} {text(scan['started_at'])}"
    if scan["finished_at"]:
        line += f" → {text(scan['finished_at'])}"
    calibration = scan["calibration"]
    how = [
        text(calibration.get(key))
        for key in ("mechanism", "alloc_mechanism", "io_mechanism")
        if calibration.get(key)
    ]
    return f"{line} ({'; '.join(how)})" if how else line


def _provenance(out: list[str], provenance: Sequence[Provenance]) -> None:
    title = _("Where it was measured")
    out += [
        f'<section id="apiprof-provenance">\n<h2>{title}</h2>\n',
        scroll(title),
        '<table class="apiprof-table apiprof-table-provenance">\n',
        "  ",
        header(_("interpreter"), _("system"), _("CPU"), _("calls measured"), _("scans")),
        "  <tbody>\n",
    ]
    for p in provenance:
        scans = "<br>".join(_scan_line(scan) for scan in p.scans) or _("added outside a scan")
        out += [
            f"    <tr>\n      <td>{text(p.implementation)} {text(p.python)}</td>",
            f"<td>{text(p.system)} {text(p.machine)}</td><td>{text(p.cpu)}</td>\n",
            f"      <td>{text(p.samples)}</td>\n",
            f'      <td class="apiprof-cell-prose">{scans}</td>\n    </tr>\n',
        ]
    out.append("  </tbody>\n</table>\n</div>\n</section>\n")
