"""Lessons from what a builtin refused of an argument's parts: ``"".join(words)`` on numbers
(``sequence item 0: expected str instance, int found``) wants texts in the list; ``len(x)`` on
a number (``object of type 'int' has no len()``) wants a sized value there.

The argument is found by what it holds — the list whose item the message numbers is of the
type it names, or a list of such lists (``*sequences`` each joined) — so only that parameter
is rebuilt, its elements when the refused value was one of them."""

from __future__ import annotations

import re
from collections.abc import Mapping

from apiprof.engine.scenarios.failing import culprit, holders

JOINED = re.compile(r"sequence item (\d+): expected (str|bytes-like object) instance, (\w+) found")
UNSIZED = re.compile(r"object of type '(\w+)' has no len\(\)")
TEXTS = "texts"
"""The want (a key of the lessons' builtin types) of a list of texts."""
BYTES_ITEMS = "byte strings"
"""The want of a list of byte strings (``b"".join(chunks)``)."""


def refused_part(error: BaseException, bound: Mapping[str, object]) -> tuple[str, bool, str] | None:
    """``(parameter, through its elements, wanted type)`` for a join of items of the wrong
    type or a ``len()`` of an unsized value, or None when the message is neither or no
    argument holds what was refused."""
    message = str(error.args[0]) if error.args else ""
    joined = JOINED.search(message)
    if joined is not None:
        index, expected, found = int(joined.group(1)), joined.group(2), joined.group(3)
        wanted = TEXTS if expected == "str" else BYTES_ITEMS

        def holds(value: object) -> bool:
            return (
                isinstance(value, (list, tuple))
                and len(value) > index
                and type(value[index]).__name__ == found
            )

        held = next(holders(bound, holds), None)
        return None if held is None else (held[0], held[1], wanted)
    unsized = UNSIZED.search(message)
    if unsized is not None:
        type_name = unsized.group(1)
        found = culprit(error, bound, lambda value: type(value).__name__ == type_name)
        if found is None:
            found = next(holders(bound, lambda value: type(value).__name__ == type_name), None)
        return None if found is None else (found[0], found[1], "list")
    return None
