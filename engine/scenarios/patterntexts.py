"""A document made of what the package's own regular expressions match, for its parsers.

A markup or template parser builds one token class per construct and recognises each with a
compiled pattern it holds (``Emphasis.pattern``, ``AUTOLINK_RE``); its renderers' ``render_X``
methods and its tokens' methods only run on a document that uses construct X, and made-up prose
uses none. Text matching each compiled pattern the package's modules and classes hold
(:mod:`.regextext`) is joined into one document — each on a paragraph of its own, and all on
one line — which self-driven capture (:mod:`.drive`) feeds to the package's text-taking
drivers: the tokens its parser makes of it reach the entry points that wait for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from apiprof.engine.scenarios.grammartexts import package_holders
from apiprof.engine.scenarios.regextext import matching_text
from apiprof.engine.scenarios.spec import ScenarioSpec, text_producer
from apiprof.model.records import ScenarioSource

MAX_PIECES = 60
"""Texts joined at most (the patterns found first, modules and classes in name order)."""
MAX_PIECE = 80
"""Longest text taken from one pattern (a longer one is mostly repetition)."""
PIECE_SIZE = 1
"""The size each pattern's repetitions are generated at: one of each (an escape pattern's
repeated backslashes would escape what follows)."""
JOINS = ("\n\n", " ")
"""How the texts are joined: as paragraphs of their own (block constructs start a line), and
on one line (inline constructs inside a paragraph)."""


def pattern_document(top: str, form: int) -> str:
    """The texts of ``top``'s held patterns joined the ``form``-th way ("" when it holds none)."""
    return JOINS[form].join(_pieces(top)) if 0 <= form < len(JOINS) else ""


def pattern_refs(top: str) -> Iterator[tuple[str, str]]:
    """``(patterns:TOP#K, document)`` for each way of joining, when the package holds any."""
    pieces = _pieces(top)
    for form, join in enumerate(JOINS if len(pieces) > 1 else ()):
        yield f"patterns:{top}#{form}", join.join(pieces)


def pattern_spec(ref: str) -> ScenarioSpec | None:
    """The producer of a pattern document, ``patterns:TOP#K``; None for a malformed name."""
    top, _, form = ref.removeprefix("patterns:").rpartition("#")
    if not top.isidentifier() or not form.isdigit():
        return None
    return text_producer(
        ref,
        top,
        ScenarioSource.DRIVEN,
        pattern_document,
        int(form),
        description=f"a document of what {top}'s own regular expressions match",
        inputs=f"<a document of what {top}'s patterns match>",
    )


def _pieces(top: str) -> list[str]:
    """A text matching each compiled text pattern the package's modules and classes hold."""
    pieces: list[str] = []
    for holder in package_holders(top):
        for _, value in sorted(vars(holder).copy().items(), key=lambda item: str(item[0])):
            if not isinstance(value, re.Pattern) or not isinstance(value.pattern, str):
                continue
            text = _text(value)
            if text and text.strip() and text not in pieces:
                pieces.append(text)
            if len(pieces) >= MAX_PIECES:
                return pieces
    return pieces


def _text(pattern: re.Pattern[Any]) -> str:
    try:
        found = matching_text(pattern, PIECE_SIZE)
    except Exception:  # a pattern the generator cannot walk: no text of it
        return ""
    text = found[0] if found is not None else ""
    return text if isinstance(text, str) and len(text) <= MAX_PIECE else ""
