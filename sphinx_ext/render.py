"""HTML fragments from the jinja2 templates in ``templates/`` (autoescaped; SVGs arrive as Markup):
the colour legend, drawn once per build. Templates translate their words with
``_()``/``ngettext()`` through apiprof's message catalog (:mod:`apiprof.sphinx_ext.i18n`).

What a build draws hundreds of times — summary blocks, drill-down page bodies, the cost index's
rows — is built in Python instead (:mod:`~apiprof.sphinx_ext.summary_html`,
:mod:`~apiprof.sphinx_ext.page_body`, :mod:`~apiprof.sphinx_ext.index_body`): a template call
per value, and compiling the templates in every build, cost more than building the strings."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from apiprof import svg
from apiprof.sphinx_ext.i18n import _, ngettext

TEMPLATES = Path(__file__).with_name("templates")


@cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
        extensions=["jinja2.ext.i18n"],
    )
    # both look the catalog up on every call, so each build uses the language it configured
    environment.install_gettext_callables(  # type: ignore[attr-defined]
        _, ngettext, newstyle=True
    )
    # the same new-style semantics called directly (a page asks for ~50 words, and jinja's
    # wrappers route every one through two context calls)
    environment.globals.update(
        _=_markup_gettext, gettext=_markup_gettext, ngettext=_markup_ngettext
    )
    return environment


def _markup_gettext(message: str, **variables: Any) -> Markup:
    """jinja2's new-style ``gettext`` under autoescape: the translation is trusted markup and
    always a format string, its variables escaped."""
    return Markup(_(message)) % variables


def _markup_ngettext(singular: str, plural: str, num: int, **variables: Any) -> Markup:
    variables.setdefault("num", num)
    return Markup(ngettext(singular, plural, num)) % variables


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


def render_legend() -> Markup:
    """The colour scale in words and swatches, shown once per drill-down and index page."""
    colours = [svg.heat_colour(i / 6) for i in range(7)]
    return Markup(render("legend.html", colours=colours))
