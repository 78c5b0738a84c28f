"""Text a regular expression matches, generated from its parsed form.

A handler called with a match of its own pattern (``handleMatch(m)``, a tokenizer's action)
needs a real :class:`re.Match` of that pattern, with every group its body asks for; a parser
that starts with ``PATTERN.match(text)`` needs text the pattern accepts. The pattern's parse
tree (the standard library's own parser) says what to write: literals as they are, one member
of each class, the first alternative of a branch, every optional part once, so groups take
part. The first unbounded repetition repeats ``n`` times: that is the size axis. What the tree
cannot promise (look-arounds, a backreference to a group left out) is checked by matching; a
pattern the walk cannot satisfy falls back to hypothesis' ``from_regex``, drawn reproducibly.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from re import _constants as constants  # type: ignore[attr-defined]  # 3.11+: re's own parser
from re import _parser as parser  # type: ignore[attr-defined]
from typing import Any

from apiprof.engine.scenarios.drawn import draw_one

MAX_TEXT = 20_000
"""Longest text generated (a repetition nested in another is not multiplied past it)."""
_CHARS = "a1_ Z.-x9\n\t@é"
"""Characters tried, in order, where a class or a negation leaves the choice open."""


@dataclass
class _Walk:
    n: int  # repetitions of the first unbounded repeat
    sized: bool = False  # did an unbounded repeat take n?
    groups: dict[int, str] = field(default_factory=dict)


def matching_text(pattern: re.Pattern[Any], n: int, seed: int = 0) -> tuple[Any, bool] | None:
    """``(text, sized)``: text ``pattern`` matches from its start (or finds, for a pattern
    anchored elsewhere), as ``str`` or ``bytes`` like the pattern; ``sized`` when its length
    follows ``n``. None when neither the walk nor hypothesis finds such text."""
    binary = isinstance(pattern.pattern, bytes)
    walk = _Walk(max(n, 1))
    try:
        tree = parser.parse(pattern.pattern, pattern.flags)
        text = "".join(_items(tree, walk))[:MAX_TEXT]
    except (re.error, ValueError, RecursionError, OverflowError):
        text = None
    found = text if text is not None and _matches(pattern, _typed(text, binary)) else None
    if found is not None:
        return _typed(found, binary), walk.sized
    drawn = _from_hypothesis(pattern, seed)
    return (drawn, False) if drawn is not None else None


def match_of(pattern: re.Pattern[Any], text: Any) -> re.Match[Any] | None:
    """The match of ``pattern`` in ``text``: from its start if it matches there, else the first."""
    return pattern.match(text) or pattern.search(text)


def _matches(pattern: re.Pattern[Any], text: Any) -> bool:
    try:
        return match_of(pattern, text) is not None
    except (TypeError, UnicodeError):
        return False


def _typed(text: str, binary: bool) -> Any:
    if not binary:
        return text
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def _items(tree: Any, walk: _Walk) -> list[str]:
    parts: list[str] = []
    for op, value in tree:
        parts.append(_item(op, value, walk))
    return parts


def _item(op: Any, value: Any, walk: _Walk) -> str:
    if op is constants.LITERAL:
        return chr(value)
    if op is constants.NOT_LITERAL:
        return next(c for c in _CHARS if ord(c) != value)
    if op is constants.ANY:
        return "a"
    if op is constants.IN:
        return _member(value)
    if op is constants.BRANCH:
        return "".join(_items(value[1][0], walk))
    if op is constants.SUBPATTERN:
        group, tree = value[0], value[-1]
        text = "".join(_items(tree, walk))
        if group is not None:
            walk.groups[group] = text
        return text
    if op in (
        constants.MAX_REPEAT,
        constants.MIN_REPEAT,
        getattr(constants, "POSSESSIVE_REPEAT", None),
    ):
        low, high, tree = value
        count = max(low, 1)
        if high is constants.MAXREPEAT and not walk.sized:
            walk.sized = True
            count = max(low, walk.n)
        count = min(count, high)
        return "".join("".join(_items(tree, walk)) for _ in range(count))[:MAX_TEXT]
    if op is constants.GROUPREF:
        return walk.groups.get(value, "")
    if op is constants.GROUPREF_EXISTS:
        group, yes, no = value
        chosen = yes if group in walk.groups else no
        return "".join(_items(chosen, walk)) if chosen is not None else ""
    if op is getattr(constants, "ATOMIC_GROUP", None):
        return "".join(_items(value, walk))
    if op is constants.CATEGORY:
        return _in_category(value)
    if op is constants.ASSERT:  # a look-around: write what it wants to see (the match checks)
        return "".join(_items(value[1], _Walk(1, True)))
    return ""  # anchors, negative look-arounds: nothing to write


def _member(items: list[tuple[Any, Any]]) -> str:
    """A character of a class ``[...]`` (one outside it, for ``[^...]``)."""
    negated = bool(items) and items[0][0] is constants.NEGATE
    members = items[1:] if negated else items
    if not negated:
        first_op, first = members[0]
        if first_op is constants.LITERAL:
            return chr(first)
        if first_op is constants.RANGE:
            return chr(first[0])
        if first_op is constants.CATEGORY:
            return _in_category(first)
    for char in _CHARS + string.printable:
        if _in_class(char, members) != negated:
            return char
    raise ValueError("no character fits the class")


def _in_class(char: str, items: list[tuple[Any, Any]]) -> bool:
    for op, value in items:
        if op is constants.LITERAL and ord(char) == value:
            return True
        if op is constants.RANGE and value[0] <= ord(char) <= value[1]:
            return True
        if op is constants.CATEGORY and re.fullmatch(_CATEGORY_CLASS.get(value, "(?!)"), char):
            return True
    return False


_CATEGORY_CLASS = {
    constants.CATEGORY_DIGIT: r"\d",
    constants.CATEGORY_NOT_DIGIT: r"\D",
    constants.CATEGORY_SPACE: r"\s",
    constants.CATEGORY_NOT_SPACE: r"\S",
    constants.CATEGORY_WORD: r"\w",
    constants.CATEGORY_NOT_WORD: r"\W",
}


def _in_category(category: Any) -> str:
    return {
        constants.CATEGORY_DIGIT: "5",
        constants.CATEGORY_NOT_DIGIT: "a",
        constants.CATEGORY_SPACE: " ",
        constants.CATEGORY_NOT_SPACE: "a",
        constants.CATEGORY_WORD: "a",
        constants.CATEGORY_NOT_WORD: " ",
    }.get(category, "a")


def _from_hypothesis(pattern: re.Pattern[Any], seed: int) -> Any:
    """One text hypothesis' ``from_regex`` draws for the pattern (seeded), or None."""
    from hypothesis import strategies as st

    try:
        text = draw_one(st.from_regex(pattern), seed)
    except Exception:  # hypothesis cannot handle the pattern, or drew nothing
        return None
    return text if _matches(pattern, text) else None
