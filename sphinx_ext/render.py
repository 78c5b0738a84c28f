"""HTML fragments from the jinja2 templates in ``templates/`` (autoescaped; SVGs arrive as Markup).

The drill-down pages are rendered here to a body fragment and then handed to the theme's
``page.html``, so they wear whatever theme the project uses.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from apiprof.sphinx_ext.views import SummaryView

TEMPLATES = Path(__file__).with_name("templates")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,
    )


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


def render_summary(
    view: SummaryView, *, compact: bool, page_url: str = "", anchor: str = ""
) -> str:
    """The block shown in an API's documentation (compact line or full card)."""
    return render("summary.html", view=view, compact=compact, page_url=page_url, anchor=anchor)
