"""Values an error lists as the ones it accepts: ``unknown locale code 'xy'; available: ja,
ru, zh``, ``mode must be one of: 'r', 'w'``, ``choose from 'fast', 'slow'``, ``enclosing must
be either '{' or '"', not 'x'``.

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
_REFUSED_AFTER = re.compile(r",?\s+(?:not|but (?:got|was|is))\s", re.IGNORECASE)
"""Where the list ends and the refused value begins (``must be 'a' or 'b', not 'c'``)."""
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"").findall


def listed_choices(message: str) -> list[str]:
    """The values the message lists as accepted, in its order ([] when it lists none)."""
    found = _LISTED.search(message)
    if found is None:
        return []
    listed = _REFUSED_AFTER.split(found.group(1), maxsplit=1)[0].strip().rstrip(".;")
    quoted = [single or double for single, double in _QUOTED(listed)]
    if quoted:  # quoted values are taken as written: '{' and '"' are choices too
        return _plausible(quoted)
    items = re.split(r"\s*(?:,|\||/|;|\bor\b|\band\b)\s*", listed.strip("[](){}"))
    return _plausible([item.strip().strip("'\"`[](){}<>").strip() for item in items])


def _plausible(values: list[str]) -> list[str]:
    """The values that can be names or codes: short, one word."""
    return [v for v in values if v and len(v) <= 40 and not re.search(r"\s", v)][:MAX_CHOICES]


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
