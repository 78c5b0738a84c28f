"""A call that matched a regular expression against one of our values that is not text.

``regex.findall(s)`` given a number raises ``expected string or bytes-like object, got
'int'``; ``json.loads(s)`` given a stream, ``must be str, bytes or bytearray, not StringIO``. The number is found in the innermost frame (``s`` in the package's own matcher) and
traced to the argument that holds it: the argument itself (then it is text), one of its items
(a list of texts), or an item of one of its items (``mapcat(f, *seqs)`` given ``[[1, 2]]``: one
sequence of texts).

The message alone does not make a rejected variant a start of the repair: a package that takes
a pattern where a function is expected (``mapcat(f, ...)`` with ``f`` text) says it of its own
matcher, and mended to text the call then finds no match. It is read when a call the repair
already mends says it (after the ``*seqs`` items were trimmed to one)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from apiprof.engine.scenarios.builtinrefusals import TEXTS
from apiprof.engine.scenarios.failing import innermost
from apiprof.engine.scenarios.wants import Lesson, Want

_EXPECTED = re.compile(
    r"expected string or bytes-like object, got '(\w+)'|"
    r"must be str, bytes or bytearray, not '?(\w+)'?"  # json.loads given a stream
)


def text_wanted(message: str, error: BaseException, bound: Mapping[str, object]) -> Lesson | None:
    """The lesson of a regular expression applied to a value of ours that is not text."""
    found = _EXPECTED.search(message)
    frame = innermost(error)
    if found is None or frame is None:
        return None
    refused = [
        value
        for value in frame.f_locals.values()
        if type(value).__name__ == (found.group(1) or found.group(2))
        and not isinstance(value, (str, bytes))
    ]
    cause = f"TypeError {message}"
    for value in refused:
        for name, argument in bound.items():
            depth = _depth(argument, value)
            if depth == 0:
                return Lesson(name, Want.TYPE, ("str",), cause=cause)
            if depth is not None:
                return Lesson(name, Want.TYPE, (TEXTS,), cause=cause)
    return None


def _depth(argument: object, value: object) -> int | None:
    """0 when ``argument`` is ``value``, 1 or 2 when it holds it that deep in lists and
    tuples, else None."""
    if argument is value:
        return 0
    if not isinstance(argument, (list, tuple)):
        return None
    if any(item is value for item in argument):
        return 1
    for item in argument:
        if isinstance(item, (list, tuple)) and any(inner is value for inner in item):
            return 2
    return None
