"""Type annotations written as text — in stub files, docstrings, string annotations — turned into
the runtime types argument synthesis understands, as far as they can be.

Evaluation walks the expression's syntax tree instead of calling ``eval``: a name nobody can
resolve (a stub-only alias, a class imported only for type checking) drops out of a union or
makes the whole annotation unknown (``None``), rather than failing everything around it.
Typeshed's private helper types (``_typeshed.StrPath``, ``SupportsRead[bytes]``...) map to the
values that satisfy them.
"""

from __future__ import annotations

import ast
import builtins
import collections.abc as abc
import datetime
import decimal
import fractions
import io
import os
import pathlib
import re
import types
import typing
from collections.abc import Mapping
from typing import Any


class PathMarker:
    """Annotation marker: a path to a real file inside the worker's sandbox."""


class DirectoryMarker:
    """Annotation marker: a path to a directory (with a few files) inside the sandbox."""


class TextFileMarker:
    """Annotation marker: an in-memory text file (readable as text, and as JSON)."""


class BinaryFileMarker:
    """Annotation marker: an in-memory binary file."""


UNKNOWN_NAMES = frozenset({"Incomplete", "Unused", "_Unknown"})
"""Typeshed's way of saying "not typed yet": no information, so other sources are asked."""

TYPESHED_ALIASES: dict[str, Any] = {
    "StrPath": PathMarker,
    "BytesPath": PathMarker,
    "StrOrBytesPath": PathMarker,
    "GenericPath": PathMarker,
    "FileDescriptorOrPath": PathMarker,
    "FileDescriptor": int,
    "ReadableBuffer": bytes,
    "WriteableBuffer": bytearray,
    "ReadOnlyBuffer": bytes,
    "SupportsKeysAndGetItem": dict,
    "SupportsItems": dict,
    "SupportsRichComparison": int,
    "SupportsRichComparisonT": int,
    "SupportsAllComparisons": int,
    "SupportsLenAndGetItem": list,
    "SupportsIter": list,
    "SupportsNext": abc.Iterator,
    "SupportsInt": int,
    "SupportsFloat": float,
    "SupportsIndex": int,
    "SupportsAbs": int,
    "SupportsRound": float,
    "SupportsBytes": bytes,
    "SupportsTrunc": float,
    "ConvertibleToInt": int,
    "ConvertibleToFloat": float,
    "StrOrLiteralStr": str,
    "LiteralString": str,
    "AnyStr_co": str,
    "AnyStr": str,
    "Self": "Self",
}
"""Helper names of typeshed (``_typeshed``, ``typing_extensions``) and what stands in for them."""

_FILE_PROTOCOLS = {
    "SupportsRead",
    "SupportsReadline",
    "SupportsWrite",
    "SupportsNoArgReadline",
    "IO",
    "TextIO",
    "BinaryIO",
}

STDLIB_NAMES: dict[str, Any] = {
    "Path": pathlib.Path,
    "PurePath": pathlib.PurePath,
    "PathLike": os.PathLike,
    "Decimal": decimal.Decimal,
    "Fraction": fractions.Fraction,
    "date": datetime.date,
    "datetime": datetime.datetime,
    "time": datetime.time,
    "timedelta": datetime.timedelta,
    "tzinfo": datetime.tzinfo,
    "Pattern": re.Pattern,
    "Match": re.Match,
    "StringIO": io.StringIO,
    "BytesIO": io.BytesIO,
    "datetime.datetime": datetime.datetime,
    "datetime.date": datetime.date,
    "datetime.timedelta": datetime.timedelta,
    "datetime.tzinfo": datetime.tzinfo,
}
"""Standard-library names annotations often import only for type checking."""

DEFAULT_NAMES: dict[str, Any] = {
    **{name: getattr(builtins, name) for name in dir(builtins) if not name.startswith("_")},
    **{name: getattr(typing, name) for name in typing.__all__},
    **{name: getattr(abc, name) for name in abc.__all__},
    **STDLIB_NAMES,
}


def evaluate_type(text: str, namespace: Mapping[str, Any] = DEFAULT_NAMES) -> Any:
    """The runtime type ``text`` means, or None when nothing useful can be made of it."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None
    return evaluate_node(tree.body, namespace)


def evaluate_node(node: ast.expr, namespace: Mapping[str, Any]) -> Any:
    """:func:`evaluate_type` for an already parsed annotation (e.g. from a stub's syntax tree)."""
    result = _evaluate(node, namespace)
    return None if result is _UNKNOWN else result


_UNKNOWN: Any = object()


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        prefix = _dotted(node.value)
        return f"{prefix}.{node.attr}" if prefix else ""
    return ""


def _lookup(name: str, namespace: Mapping[str, Any]) -> Any:
    if not name:
        return _UNKNOWN
    last = name.rsplit(".", 1)[-1]
    if last in UNKNOWN_NAMES:
        return _UNKNOWN
    if name in namespace:
        return namespace[name]
    if last in TYPESHED_ALIASES:
        return TYPESHED_ALIASES[last]
    head, *rest = name.split(".")
    if head in namespace:
        value = namespace[head]
        for part in rest:
            value = getattr(value, part, _UNKNOWN)
            if value is _UNKNOWN:
                break
        if value is not _UNKNOWN:
            return value
    return namespace.get(last, DEFAULT_NAMES.get(last, _UNKNOWN)) if "." in name else _UNKNOWN


def _evaluate(node: ast.expr, namespace: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return type(None)
        if isinstance(node.value, str):  # a forward reference inside an annotation
            inner = evaluate_type(node.value, namespace)
            return _UNKNOWN if inner is None else inner
        if node.value is Ellipsis:
            return Ellipsis
        return _UNKNOWN
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _lookup(_dotted(node), namespace)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([_evaluate(node.left, namespace), _evaluate(node.right, namespace)])
    if isinstance(node, ast.Subscript):
        return _subscript(node, namespace)
    return _UNKNOWN


def _union(members: list[Any]) -> Any:
    known = [member for member in members if member is not _UNKNOWN]
    return union_of(known) if known else _UNKNOWN


def union_of(members: list[Any]) -> Any:
    """The union of one or more annotations (the first, when they cannot be combined)."""
    if len(members) == 1:
        return members[0]
    try:
        return typing.Union[tuple(members)]  # noqa: UP007 - built from a runtime list
    except TypeError:
        return members[0]


def _subscript(node: ast.Subscript, namespace: Mapping[str, Any]) -> Any:
    origin_name = _dotted(node.value).rsplit(".", 1)[-1]
    elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if origin_name in _FILE_PROTOCOLS:
        inner = _evaluate(elements[0], namespace) if elements else str
        return BinaryFileMarker if inner in (bytes, bytearray) else TextFileMarker
    if origin_name == "Literal":
        values = [e.value for e in elements if isinstance(e, ast.Constant)]
        return typing.Literal[tuple(values)] if values else _UNKNOWN
    if origin_name in ("Optional",):
        return _union([_evaluate(elements[0], namespace), type(None)])
    if origin_name == "Union":
        return _union([_evaluate(element, namespace) for element in elements])
    if origin_name == "Annotated":
        return _evaluate(elements[0], namespace)
    origin = _evaluate(node.value, namespace)
    if origin is _UNKNOWN:
        return _UNKNOWN
    if origin in TYPESHED_ALIASES.values() and not hasattr(origin, "__class_getitem__"):
        return origin
    if origin_name == "Callable":
        return abc.Callable[..., Any]
    args = []
    for element in elements:
        if isinstance(element, ast.List):  # Callable's parameter list, or Concatenate
            return _plain(origin)
        value = _evaluate(element, namespace)
        args.append(Any if value is _UNKNOWN else value)
    try:
        return origin[tuple(args)] if len(args) > 1 else origin[args[0]]
    except Exception:  # not generic at run time (a stub-only generic): the bare class
        return _plain(origin)


def _plain(origin: Any) -> Any:
    return typing.get_origin(origin) or origin


def module_namespace(module: types.ModuleType | None) -> dict[str, Any]:
    """Names an annotation in ``module`` may use: the defaults, then the module's own globals."""
    names = dict(DEFAULT_NAMES)
    if module is not None:
        names.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    return names
