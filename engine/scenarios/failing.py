"""What a failing call's traceback says about the object it failed on: the innermost frame,
the failing expression (3.11+ position information), the values its subscripts and attribute
lookups were applied to, and which of the call's arguments holds that object (itself, one of
its elements, or a value under one of its keys)."""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import linecache
import operator
import re
import sys
import types
from collections.abc import Callable, Iterator, Mapping


def culprit(
    error: BaseException, bound: Mapping[str, object], fits: Callable[[object], bool]
) -> tuple[str, bool] | None:
    """The parameter (and whether through one of its elements) holding the object the failing
    expression worked on: the values the innermost frame names, those in the failing
    expression first, that ``fits`` (a dict without the key, a list indexed by a string)."""
    frame = innermost(error)
    if frame is None:
        return None
    named = expression_names(error)
    local = dict(frame.f_locals)
    ordered = subjects(error, frame)
    ordered += [local[name] for name in named if name in local]
    ordered += [value for name, value in local.items() if name not in named]
    for value in ordered:
        if not fits(value):
            continue
        for holder in holders(bound, functools.partial(operator.is_, value)):
            return holder
    return None


def subjects(error: BaseException, frame: types.FrameType) -> list[object]:
    """What the subscripts and attribute lookups of the failing expression were applied to
    (``token['data']`` in ``token['data']['x']``), the outermost (the one that failed) first,
    where that is plain names, attributes and constant subscripts (nothing is called)."""
    text, _ = failing_text(error)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return []
    found: list[object] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            with contextlib.suppress(Exception):
                found.append(_evaluate(node.value, frame))
    return found


def _evaluate(node: ast.expr, frame: types.FrameType) -> object:
    if isinstance(node, ast.Name):
        for namespace in (frame.f_locals, frame.f_globals, vars(builtins)):
            if node.id in namespace:
                return namespace[node.id]
        raise LookupError(node.id)
    if isinstance(node, ast.Attribute):
        return getattr(_evaluate(node.value, frame), node.attr)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return _evaluate(node.value, frame)[node.slice.value]  # type: ignore[index]
    raise LookupError(ast.dump(node))


def holders(
    bound: Mapping[str, object], match: Callable[[object], bool]
) -> Iterator[tuple[str, bool]]:
    """``(parameter, through an element)`` for each argument that matches, or holds an
    element that does (lists and tuples of tokens, nodes, rows), or a value under one of its
    keys (``token['data']``, named so)."""
    for name, value in bound.items():
        if _safe(match, value):
            yield name, False
    for name, value in bound.items():
        if isinstance(value, (list, tuple)) and any(_safe(match, item) for item in value):
            yield name, True
    for name, value in bound.items():
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _safe(match, item):
                    yield f"{name}[{key!r}]", False


def _safe(match: Callable[[object], bool], value: object) -> bool:
    try:
        return bool(match(value))
    except Exception:  # an odd __eq__: no match
        return False


def innermost(error: BaseException) -> types.FrameType | None:
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame if tb is not None else None


def failing_text(error: BaseException) -> tuple[str, str]:
    """The failing expression of the innermost frame and the rest of its line after it (3.11+
    position information; the whole line when there is none)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "", ""
    code = tb.tb_frame.f_code
    line = linecache.getline(code.co_filename, tb.tb_lineno)
    positions = list(code.co_positions()) if sys.version_info >= (3, 11) else []
    index = tb.tb_lasti // 2
    if index < len(positions):
        start, end, column, end_column = positions[index]
        if start == end == tb.tb_lineno and column is not None and end_column is not None:
            encoded = line.encode()
            return encoded[column:end_column].decode(errors="replace"), encoded[end_column:].decode(
                errors="replace"
            )
    return line.strip(), ""


def expression_names(error: BaseException) -> list[str]:
    """The names in the failing expression, in order (``token`` in ``token['data']``)."""
    text, _ = failing_text(error)
    return list(dict.fromkeys(re.findall(r"(?<![.\w])([A-Za-z_]\w*)", text)))


def called(error: AttributeError, attribute: str) -> bool:
    """Whether the missing attribute is called right away (``handler.startDocument()``)."""
    text, rest = failing_text(error)
    return rest.lstrip().startswith("(") or bool(re.search(rf"\.{re.escape(attribute)}\s*\(", text))
