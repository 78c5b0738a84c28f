"""Text that must contain a word: ``"usage:" (case-insensitive) not found``, ``expected
'BEGIN'``, ``missing "[section]"``. A parser that refuses made-up text often quotes the very
literal it looked for; the text argument that lacks it becomes that literal and one word
(``usage: loremdolor``): made-up prose after a header is rarely what the grammar wants next."""

from __future__ import annotations

import re
from collections.abc import Mapping

_QUOTED = r"""["'`]([^"'`\n]{1,40})["'`]"""
_LITERAL_WANTED = re.compile(
    rf"{_QUOTED}[^.;\n]{{0,30}}?\b(?:not found|missing|is required|required|expected)\b"
    rf"|\b(?:expected|missing|requires?|must (?:start|begin) with|must contain)\s+{_QUOTED}",
    re.IGNORECASE,
)
"""A quoted literal said to be looked for and not found, before or after the words saying so."""


def wanted_literal(message: str) -> str | None:
    """The literal the message says the text lacked, or None."""
    found = _LITERAL_WANTED.search(message)
    if found is None:
        return None
    literal = found.group(1) or found.group(2)
    return literal if literal and literal.strip() else None


def text_lacking(literal: str, bound: Mapping[str, object]) -> str | None:
    """The first text argument that does not contain ``literal`` (compared case-insensitively);
    None when one does: ``key 'lorem' not found`` quotes our own input back, not a want."""
    texts = {name: value.lower() for name, value in bound.items() if isinstance(value, str)}
    wanted = literal.lower()
    if any(wanted in text for text in texts.values()):
        return None
    return next(iter(texts), None)


def with_literals(literals: tuple[str, ...], word: str) -> str:
    """Each wanted literal, in the order they were asked for, then ``word``."""
    return " ".join((*literals, word))


_MEMBER_WANTED = re.compile(
    rf"must (?:have|contain|include|define) (?:an? )?{_QUOTED}\s*(?:member|key|field|entry)",
    re.IGNORECASE,
)
"""``Operation must have a 'path' member``: a mapping argument lacks that key."""


def wanted_member(message: str, bound: Mapping[str, object]) -> tuple[str, str] | None:
    """``(parameter, key)`` for the first mapping argument lacking the key the message says it
    must have; None when the message says no such thing or no mapping argument lacks it."""
    found = _MEMBER_WANTED.search(message)
    if found is None:
        return None
    key = found.group(1)
    for name, value in bound.items():
        if isinstance(value, Mapping) and key not in value:
            return name, key
    return None
