"""The ``apiprof_summary`` node: placed at read time, filled from the database when written.

Read time stores only what to show — the API's name, the metrics and the form — so doctrees
stay small to pickle (to disk, and between ``-j`` processes) and hold no views for the cycle
collector to walk during the rest of the build. When a doctree is resolved for writing
(:func:`fill_summaries`), each node gets its :class:`~apiprof.sphinx_ext.views.SummaryView`,
made from the stored figures, and a plain paragraph — the text fallback that LaTeX, text, man,
texinfo and any other builder render as-is (and that the HTML search index reads). HTML
builders draw the graphic summary and a link to the drill-down page instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from apiprof.sphinx_ext.envdata import note_lookup, record_use
from apiprof.sphinx_ext.gc_pause import cycle_collector_paused
from apiprof.sphinx_ext.i18n import _
from apiprof.sphinx_ext.profiles import profiles_for
from apiprof.sphinx_ext.summary_html import summary_html
from apiprof.sphinx_ext.views import SummaryView, unprofiled_reason, view_summary

logger = logging.getLogger(__name__)


class apiprof_summary(nodes.General, nodes.Element):
    """Cost summary of one API (attributes: qualname, canonical, metrics, compact, anchor;
    ``view`` once the doctree is resolved)."""


@cycle_collector_paused()
def make_summary(
    env: BuildEnvironment,
    name: str,
    *,
    metrics: list[str],
    compact: bool,
    target: str,
    location: Any,
    typed: bool,
) -> apiprof_summary:
    """Look ``name`` up and build its node; a name without data gets a note (see
    :func:`note_unprofiled`). ``typed`` says a person wrote the name (a directive) rather than
    autodoc.

    ``target`` is the anchor in the current document that drill-down pages link back to.
    """
    profiles = profiles_for(env)
    note_lookup(env, env.docname, name)
    summary = profiles.lookup(name)
    canonical = summary.qualname if summary else name
    node = apiprof_summary(
        qualname=name, canonical=canonical, metrics=list(metrics), compact=compact, anchor=""
    )
    if summary is not None and summary.profiled:
        record_use(env, env.docname, canonical, target)
    elif profiles.usable:
        note_unprofiled(
            env,
            name,
            unprofiled_reason(summary),
            known=summary is not None,
            typed=typed,
            location=location,
        )
    return node


def summary_view(env: BuildEnvironment, node: apiprof_summary) -> SummaryView:
    """What ``node`` shows, from the database as this build reads it."""
    summary = profiles_for(env).lookup(node["qualname"])
    return view_summary(node["canonical"], summary, node["metrics"], compact=node["compact"])


@cycle_collector_paused()
def fill_summaries(app: Sphinx, doctree: nodes.document, _docname: str) -> None:
    """``doctree-resolved``: give each summary its view and text fallback. Outside HTML the
    summary becomes that paragraph, so every builder — including third-party ones that know
    nothing of our node — can write it."""
    html = app.builder.format == "html"
    for node in list(doctree.findall(apiprof_summary)):
        view = summary_view(app.env, node)
        text = view.compact_text if node["compact"] else view.full_text()
        fallback = nodes.paragraph(
            text, _("Cost") + ": " + text if node["compact"] else text, classes=["apiprof-text"]
        )
        fallback["translatable"] = False  # numbers, not prose: keep them out of gettext catalogs
        if html:
            node["view"] = view
            node[:] = [fallback]
        else:
            node.replace_self(fallback)


def note_unprofiled(
    env: BuildEnvironment, name: str, reason: str, *, known: bool, typed: bool, location: Any
) -> None:
    """Say why ``name`` shows no costs: scanned but not profiled (with the reason), or absent
    from the database (a typo when a person wrote it: close names are suggested).

    An info note by default, so ``sphinx-build -W`` passes on a real database where some APIs
    cannot be profiled; a warning (``apiprof.unprofiled`` / ``apiprof.unknown``) with
    ``apiprof_warn_unprofiled = True``.
    """
    if known:
        subtype = "unprofiled"
        message = f"apiprof: {name} was scanned but not profiled: {reason or 'no measurements'}"
    else:
        subtype = "unknown"
        if typed:  # a person wrote the name: likely a typo
            close = difflib.get_close_matches(name, profiles_for(env).known_names(), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else "; check the spelling"
        else:  # autodoc documents it, so the scan did not reach it
            hint = "; scan its package with apiprof-scan to add it"
        message = f"apiprof: {name} is not in the profile database{hint}"
    if env.config.apiprof_warn_unprofiled:
        logger.warning(message, type="apiprof", subtype=subtype, location=location)
    else:
        logger.info(message, location=location)


def visit_summary_html(translator: Any, node: apiprof_summary) -> None:
    builder = translator.builder
    view = node.get("view") or summary_view(builder.env, node)  # resolved without our handler
    pages: dict[str, str] = getattr(builder.env, "apiprof_page_names", {})
    page = pages.get(node["canonical"]) if view.profiled else None
    page_url = builder.get_relative_uri(builder.current_docname, page) if page else ""
    translator.body.append(
        summary_html(view, compact=node["compact"], page_url=page_url, anchor=node["anchor"])
    )
    raise nodes.SkipNode


def visit_summary_text(_translator: Any, _node: apiprof_summary) -> None:
    """Non-HTML builders render the fallback paragraph :func:`fill_summaries` put in place."""


def depart_summary_text(_translator: Any, _node: apiprof_summary) -> None:
    pass


Visitor = Callable[[Any, apiprof_summary], None]
VISITORS: dict[str, tuple[Visitor, Visitor | None]] = {
    "html": (visit_summary_html, None),
    **dict.fromkeys(("latex", "text", "man", "texinfo"), (visit_summary_text, depart_summary_text)),
}
