"""The summary block shown in an API's documentation (compact line or full card), as HTML.

Written in Python, like the drill-down page body (:mod:`apiprof.sphinx_ext.page_body`): a docs
build draws one block per documented API, and through a jinja2 template each cost a template
call per value plus compiling the template in every build. Values are escaped with
:func:`~apiprof.sphinx_ext.rows.text`; the SVGs arrive as :class:`~markupsafe.Markup`.
"""

from __future__ import annotations

from apiprof.sphinx_ext.i18n import _, ngettext
from apiprof.sphinx_ext.page_body import fill
from apiprof.sphinx_ext.rows import text
from apiprof.sphinx_ext.views import SummaryView


def summary_html(view: SummaryView, *, compact: bool, page_url: str = "", anchor: str = "") -> str:
    """The block; ``page_url`` links it to the drill-down page, ``anchor`` is its id."""
    ident = f' id="{text(anchor)}"' if anchor else ""
    cost = _("Cost")
    if not view.profiled:
        return (
            f'<div class="apiprof-summary apiprof-summary-unprofiled"{ident}>\n'
            f'  <span class="apiprof-label">{cost}</span>\n'
            f'  <span class="apiprof-none">{text(view.not_profiled_text)}</span>\n</div>\n'
        )
    link = _details_link(view, page_url) if page_url else ""
    growth = ""
    if view.growth:
        tip = _("growth with input size")
        growth = f'<span class="apiprof-badge-growth" title="{tip}">{text(view.growth)}</span>'

    samples = text(view.samples_text)
    if compact:
        strip = view.metrics[0].strip_svg if view.metrics else ""
        figures = "".join(
            f'<span class="apiprof-figure"><span class="apiprof-figure-label">{text(f.label)}'
            f"</span> {text(f.value)}</span>"
            for f in view.figures
        )
        return (
            f'<div class="apiprof-summary apiprof-summary-compact"{ident}>\n'
            f'  <span class="apiprof-label">{cost}</span>\n'
            f'{strip}{figures}{growth}  <span class="apiprof-samples">{samples}</span>\n'
            f"{link}</div>\n"
        )
    if view.scenarios:
        samples += " · " + fill(
            ngettext("%(num)s scenario", "%(num)s scenarios", view.scenarios), num=view.scenarios
        )
    metrics = "".join(
        f'    <figure class="apiprof-metric" data-metric="{text(m.metric.value)}">\n'
        "      <figcaption>\n"
        f'        <span class="apiprof-metric-label">{text(m.label)}</span>\n'
        f'        <strong class="apiprof-median">≈{text(m.median)}</strong>\n'
        f'        <span class="apiprof-spread">p10–p90 {text(m.p10)} – {text(m.p90)}</span>\n'
        "      </figcaption>\n"
        f"      {m.histogram_svg}\n"
        "    </figure>\n"
        for m in view.metrics
    )
    legend = _(
        "Bars: calls per range of cost (log scale); colour from blue (cheap) to red "
        "(expensive); dashed line: median."
    )
    label = _("Cost profile")
    return (
        f'<div class="apiprof-summary apiprof-summary-full"{ident}>\n'
        '  <div class="apiprof-head">\n'
        f'    <span class="apiprof-label">{label}</span>\n'
        f'    <code class="apiprof-name">{text(view.qualname)}</code>\n'
        f'{growth}    <span class="apiprof-samples">{samples}</span>\n'
        f"{link}  </div>\n"
        f'  <div class="apiprof-metrics">\n{metrics}  </div>\n'
        f'  <p class="apiprof-legend">{legend}</p>\n</div>\n'
    )


def _details_link(view: SummaryView, page_url: str) -> str:
    title = fill(_("Full cost profile of %(name)s"), name=view.qualname)
    details = _("details")
    return f'<a class="apiprof-more" href="{text(page_url)}" title="{title}">{details}</a>'
