"""Docstring summary lines are reST: ``Break *iterable* into lists of length *n*``. Shown on a
drill-down page they must read as text, not markup, and nothing in them may reach the HTML
unescaped (the database is untrusted input). A full docutils run per page would cost more than
the page; inline markup is all a first line has, so a small tokenizer does.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

_TOKEN = re.compile(
    r"""
    ``(?P<literal>.+?)``
  | (?::[\w.+-]+)+:`(?P<role>[^`]+)`
  | \*\*(?P<strong>[^*\s](?:[^*]*?[^*\s])?)\*\*
  | (?<![\w*\\])\*(?P<emph>[^*\s](?:[^*]*?[^*\s])?)\*(?![\w*])
  | `(?P<ref>[^`]+)`__?
  | `(?P<interpreted>[^`]+)`
  | \\(?P<escaped>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_TARGET = re.compile(r"^(?P<title>.*?)\s*<[^<>]+>$", re.DOTALL)


def _role_text(text: str) -> str:
    """What a role shows: the title of ``title <target>``, the last part of ``~a.b.c``."""
    if titled := _TARGET.match(text):
        return titled.group("title")
    text = text.lstrip("!")
    return text[1:].rsplit(".", 1)[-1] if text.startswith("~") else text


def inline_rst_html(text: str) -> Markup:
    """reST inline markup as HTML: literals and roles as ``<code>``, emphasis, strong; every
    other character escaped."""
    out: list[str] = []
    position = 0
    for match in _TOKEN.finditer(text):
        out.append(str(escape(text[position : match.start()])))
        position = match.end()
        kind, value = next((k, v) for k, v in match.groupdict().items() if v is not None)
        if kind == "literal":
            out.append(f"<code>{escape(value)}</code>")
        elif kind in ("role", "interpreted"):
            out.append(f"<code>{escape(_role_text(value))}</code>")
        elif kind == "strong":
            out.append(f"<strong>{escape(value)}</strong>")
        elif kind == "emph":
            out.append(f"<em>{escape(value)}</em>")
        elif kind == "ref":
            out.append(str(escape(_role_text(value))))
        else:
            out.append(str(escape(value)))
    out.append(str(escape(text[position:])))
    return Markup("".join(out))
