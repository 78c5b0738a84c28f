"""A URI of the scheme an error names: ``not a data URI``, ``invalid mailto URL``.

A parser of one kind of URI refuses the web address a parameter named ``uri`` or ``url`` is
given. The text argument becomes a small well-formed URI of that scheme (its form is the
scheme's standard's, not any package's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

SAMPLES = {
    "data": "data:,lorem%20ipsum%20dolor",
    "mailto": "mailto:someone@example.com?subject=hello",
    "file": "file:///tmp/example.txt",
    "urn": "urn:isbn:0451450523",
    "tel": "tel:+1-201-555-0123",
    "http": "http://example.com/path/page?query=1#part",
    "https": "https://example.com/path/page?query=1#part",
    "ftp": "ftp://ftp.example.com/pub/file.txt",
    "ws": "ws://example.com/socket",
    "wss": "wss://example.com/socket",
}
"""A well-formed URI of each scheme an error may name."""
_NAMED = re.compile(
    r"\b(?:not an?|invalid|expected an?|must be an?)\s+['\"]?([a-z][a-z0-9+.-]*)['\"]?:?\s+ur[il]\b",
    re.IGNORECASE,
)


def scheme_wanted(message: str, bound: Mapping[str, object]) -> tuple[str, str] | None:
    """``(parameter, uri)``: the text argument a URI of the scheme the message names should
    be, and such a URI; None when the message names no scheme this knows."""
    named = _NAMED.search(message)
    sample = SAMPLES.get(named.group(1).lower()) if named is not None else None
    if sample is None:
        return None
    texts = [name for name, value in bound.items() if isinstance(value, (str, bytes)) and value]
    linked = [name for name in texts if ":" in str(bound[name])]  # the one given an address
    chosen = (linked or texts)[:1]
    return (chosen[0], sample) if chosen else None
