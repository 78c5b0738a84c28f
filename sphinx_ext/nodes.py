"""The ``apiprof_summary`` node: made at read time from the database, drawn by each builder.

The node carries a ready :class:`~apiprof.sphinx_ext.views.SummaryView`, and its children are
a plain paragraph — the text fallback that latex, text, man and texinfo render as-is. HTML
builders replace the children with the graphic summary and a link to the drill-down page.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from apiprof.sphinx_ext import pages_names
from apiprof.sphinx_ext.envdata import note_reader, record_use
from apiprof.sphinx_ext.profiles import profiles_for
from apiprof.sphinx_ext.render import render_summary
from apiprof.sphinx_ext.views import view_summary

logger = logging.getLogger(__name__)


class apiprof_summary(nodes.General, nodes.Element):
    """Cost summary of one API (attributes: qualname, canonical, view, compact, anchor)."""


def make_summary(
    env: BuildEnvironment,
    name: str,
    *,
    metrics: list[str],
    compact: bool,
    target: str,
    location: object,
) -> apiprof_summary:
    """Look ``name`` up and build its node; warns (type ``apiprof.unprofiled``) if it has no data.

    ``target`` is the anchor in the current document that drill-down pages link back to.
    """
    profiles = profiles_for(env)
    note_reader(env, env.docname)
    summary = profiles.lookup(name)
    canonical = summary.qualname if summary else name
    view = view_summary(canonical, summary, metrics, compact=compact)
    node = apiprof_summary(
        qualname=name, canonical=canonical, view=view, compact=compact, anchor=""
    )
    text = view.compact_text if compact else view.full_text()
    node += nodes.paragraph(text, f"Cost: {text}" if compact else text, classes=["apiprof-text"])
    if view.profiled:
        record_use(env, env.docname, canonical, target)
    elif profiles.usable and env.config.apiprof_warn_unprofiled:
        logger.warning(
            "apiprof: %s is %s",
            name,
            view.not_profiled_text,
            type="apiprof",
            subtype="unprofiled",
            location=location,
        )
    return node


def visit_summary_html(translator, node: apiprof_summary) -> None:
    builder = translator.builder
    page_url = ""
    if node["view"].profiled and pages_names.pages_enabled(builder):
        page_url = builder.get_relative_uri(
            builder.current_docname, pages_names.page_name(node["canonical"])
        )
    translator.body.append(
        render_summary(
            node["view"], compact=node["compact"], page_url=page_url, anchor=node["anchor"]
        )
    )
    raise nodes.SkipNode


def visit_summary_text(_translator, _node: apiprof_summary) -> None:
    """Non-HTML builders render the fallback paragraph the node already holds."""


def depart_summary_text(_translator, _node: apiprof_summary) -> None:
    pass


VISITORS = {
    "html": (visit_summary_html, None),
    **dict.fromkeys(("latex", "text", "man", "texinfo"), (visit_summary_text, depart_summary_text)),
}
