"""Values an error lists as the ones it accepts: ``unknown locale code 'xy'; available: ja,
ru, zh``, ``mode must be one of: 'r', 'w'``, ``choose from 'fast', 'slow'``.

A lookup that refuses a made-up name often says which names it knows. The argument whose value
the message quotes (the name it did not know) becomes the first of the listed ones. A message
that names a parameter with the one value it accepts (``year must be 0``: a class that stands
for one year only) makes that parameter that value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_LISTED = re.compile(
    r"\b(?:available(?: \w+)?|one of|choose from|choices are|valid (?:values|options|choices|"
    r"names|codes|keys)(?: are)?|supported(?: values| options)?(?: are)?|possible values"
    r"(?: are)?|must be either)\s*[:=]?\s*(.+)$",
    re.IGNORECASE,
)
"""The words that introduce the accepted values, and the list after them."""
MAX_CHOICES = 16


def listed_choices(message: str) -> list[str]:
    """The values the message lists as accepted, in its order ([] when it lists none)."""
    found = _LISTED.search(message)
    if found is None:
        return []
    listed = found.group(1).strip().rstrip(".;")
    items = re.split(r"\s*(?:,|\||/|;|\bor\b|\band\b)\s*", listed.strip("[](){}"))
    cleaned = [item.strip().strip("'\"`[](){}<>").strip() for item in items]
    return [c for c in cleaned if c and len(c) <= 40 and not re.search(r"\s", c)][:MAX_CHOICES]


def refused_choice(message: str, bound: Mapping[str, object]) -> tuple[str, str] | None:
    """``(parameter, value)``: the text argument the message quotes as refused, and the first
    value it lists instead; None when it lists none or quotes no argument."""
    choices = listed_choices(message)
    if not choices:
        return None
    for name, value in bound.items():
        if "." in name or not isinstance(value, str) or not value or value in choices:
            continue
        if repr(value) in message or f'"{value}"' in message:
            return name, choices[0]
    return None


_REQUIRED = re.compile(r"^(\w+) must (?:be|equal) (-?\d+(?:\.\d+)?|True|False)\.?$")
"""A message that names the one value a parameter may have (``year must be 0``)."""


def required_value(message: str, bound: Mapping[str, object]) -> tuple[str, str] | None:
    """``(parameter, literal)``: the argument a message names with the one value it accepts
    (``year must be 0``), when the argument is not that already; None otherwise."""
    found = _REQUIRED.match(message.strip())
    if found is None or found.group(1) not in bound:
        return None
    name, literal = found.groups()
    if repr(bound[name]) == literal:
        return None
    return name, literal
