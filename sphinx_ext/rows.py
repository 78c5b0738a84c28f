"""Table rows as HTML, built in Python: a drill-down page has hundreds of cells, and a jinja2
loop per cell costs several times an f-string. Every value is escaped here unless it arrives as
:class:`~markupsafe.Markup` (made by this module or the SVG code), so database contents stay
text wherever they land."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from markupsafe import Markup

Cell = str | int | Markup

_SPECIAL = re.compile("[&<>'\"]")


def text(value: object) -> str:
    """``value`` as HTML text: escaped exactly as :func:`markupsafe.escape` (and so jinja2)
    escapes it, but returned as a plain ``str`` — pages escape tens of thousands of values, and
    a :class:`~markupsafe.Markup` object per value was a noticeable part of their cost."""
    if type(value) is not str:
        html = getattr(value, "__html__", None)
        if html is not None:
            return str(html())
    plain = str(value)
    if _SPECIAL.search(plain) is None:
        return plain
    return (
        plain.replace("&", "&amp;")
        .replace(">", "&gt;")
        .replace("<", "&lt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;")
    )


def cell(content: Cell, **attrs: str) -> Markup:
    """One ``<td>`` with attributes (``title="…"``, ``rowspan="2"``)."""
    extra = "".join(f' {name}="{text(value)}"' for name, value in attrs.items() if value)
    return Markup(f"<td{extra}>{text(content)}</td>")


def rows(body: Iterable[tuple[Mapping[str, str], Sequence[Cell]]]) -> Markup:
    """``<tr>`` elements: (row attributes, cells); a cell that is not already a ``<td>`` from
    :func:`cell` is wrapped in one."""
    out = []
    for attrs, cells in body:
        extra = "".join(f' {name}="{text(value)}"' for name, value in attrs.items())
        inner = "".join(
            c if isinstance(c, Markup) and c.startswith("<td") else f"<td>{text(c)}</td>"
            for c in cells
        )
        out.append(f"<tr{extra}>{inner}</tr>")
    return Markup("\n".join(out))
