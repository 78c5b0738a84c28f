"""Table rows as HTML, built in Python: a drill-down page has hundreds of cells, and a jinja2
loop per cell costs several times an f-string. Every value is escaped here unless it arrives as
:class:`~markupsafe.Markup` (made by this module or the SVG code), so database contents stay
text wherever they land."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from markupsafe import Markup, escape

Cell = str | int | Markup


def cell(content: Cell, **attrs: str) -> Markup:
    """One ``<td>`` with attributes (``title="…"``, ``rowspan="2"``)."""
    extra = "".join(f' {name}="{escape(value)}"' for name, value in attrs.items() if value)
    return Markup(f"<td{extra}>{escape(content)}</td>")


def rows(body: Iterable[tuple[Mapping[str, str], Sequence[Cell]]]) -> Markup:
    """``<tr>`` elements: (row attributes, cells); a cell that is not already a ``<td>`` from
    :func:`cell` is wrapped in one."""
    out = []
    for attrs, cells in body:
        extra = "".join(f' {name}="{escape(value)}"' for name, value in attrs.items())
        inner = "".join(
            c if isinstance(c, Markup) and c.startswith("<td") else f"<td>{escape(c)}</td>"
            for c in cells
        )
        out.append(f"<tr{extra}>{inner}</tr>")
    return Markup("\n".join(out))
