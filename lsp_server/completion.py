"""Completion items as the Python server beside us would write them, plus a cost.

Labels, ``filterText`` and ``sortText`` follow jedi-language-server's or pyright's conventions
(``completion.sortLike``), so a client that merges our list with theirs folds the twins
together; the cost goes where the client shows it without a round trip.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from lsprotocol import types

from apiprof.lsp_server.resolve import Candidate

_KINDS = {
    "module": types.CompletionItemKind.Module,
    "class": types.CompletionItemKind.Class,
    "instance": types.CompletionItemKind.Variable,
    "function": types.CompletionItemKind.Function,
    "param": types.CompletionItemKind.Variable,
    "path": types.CompletionItemKind.File,
    "keyword": types.CompletionItemKind.Keyword,
    "property": types.CompletionItemKind.Property,
    "statement": types.CompletionItemKind.Variable,
}

IMPORT_CONTEXT = re.compile(r"\bimport\s+(?:[\w.]+(?:\s+as\s+\w+)?\s*,\s*)*$")
"""The text before the cursor right after ``import`` (or ``import a, ``): where a space asks for
completion in standalone mode."""

TYPED_PREFIX = re.compile(r"\w*$")
"""The part of the name already typed before the cursor."""

EMPTY_COMPLETION: dict[str, Any] = {"isIncomplete": False, "items": []}


def sort_text(candidate: Candidate, style: str, typed: str) -> str:
    """The ``sortText`` the Python server beside us gives the same candidate, so merged lists
    keep both in one place: jedi-language-server sorts by jedi's order behind a letter for
    public, private and dunder names; pyright by category, recency and name."""
    name = candidate.label
    dunder = name.startswith("__") and name.endswith("__") and len(name) > 4
    if style == "jedi-language-server":
        if candidate.type == "param" and name.endswith("="):
            letter = "a"
        elif dunder:
            letter = "y"
        elif name.startswith("__"):
            letter = "x"
        elif name.startswith("_"):
            letter = "w"
        else:
            letter = "v"
        return letter + str(candidate.index).zfill(len(str(candidate.total)))
    category = 11 if dunder else 10 if name.startswith("_") and not typed else 9
    return f"{category:02d}.9999.{name}"


def completion_items(
    candidates: Sequence[Candidate],
    hints: Mapping[str, str | None],
    *,
    style: str,
    typed: str,
    companion: bool,
    label_details: bool,
) -> list[dict[str, Any]]:
    """JSON-ready items: 1000 lsprotocol objects would cost more to build (attrs validators)
    and to serialise than the cost lookups themselves. A companion lists only the candidates
    with a cost; ``data`` is just the qualified name, to keep a 1000-item list small."""
    items = []
    for c in candidates:
        hint = hints.get(c.qualname) if c.costed else None
        if c.type == "path" or (companion and hint is None):
            continue
        item: dict[str, Any] = {
            "label": c.label,
            "kind": _KINDS.get(c.type, types.CompletionItemKind.Text).value,
            "sortText": sort_text(c, style, typed),
            "filterText": c.label,
            "insertText": c.label,
        }
        if hint is not None:
            if label_details:
                item["labelDetails"] = {"description": hint}
            else:
                item["detail"] = hint
            item["data"] = c.qualname
        items.append(item)
    return items
