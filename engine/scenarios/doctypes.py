"""Docstring types: what a function's docstring says its parameters are, in the three common
styles — Sphinx field lists (``:param int x:``, ``:type x: str``, ``:rtype:``), numpydoc
``Parameters`` sections (``x : int, optional``) and Google ``Args:`` sections (``x (int): ...``).

Type words are read the way people write them: ``str or None``, ``list of int``, ``file-like``,
``NetworkX graph`` (a word naming one of the package's classes means that class),
``{'left', 'right'}`` (one of these values). What cannot be read is left out, so another
source is asked.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apiprof.engine.scenarios.typetext import (
    DEFAULT_NAMES,
    PathMarker,
    TextFileMarker,
    evaluate_type,
    union_of,
)


@dataclass(frozen=True)
class DocTypes:
    parameters: dict[str, list[Any]] = field(default_factory=dict)
    returns: list[Any] = field(default_factory=list)


WORDS: dict[str, Any] = {
    "str": str,
    "string": str,
    "strings": str,
    "unicode": str,
    "basestring": str,
    "text": str,
    "int": int,
    "integer": int,
    "integers": int,
    "long": int,
    "float": float,
    "number": float,
    "numbers": float,
    "real": float,
    "scalar": float,
    "bool": bool,
    "boolean": bool,
    "bytes": bytes,
    "bytestring": bytes,
    "bytearray": bytearray,
    "buffer": bytes,
    "dict": dict[str, int],
    "dictionary": dict[str, int],
    "mapping": dict[str, int],
    "list": list[int],
    "sequence": list[int],
    "iterable": list[int],
    "tuple": tuple[int, ...],
    "set": set[int],
    "array": list[float],
    "array-like": list[float],
    "array_like": list[float],
    "callable": Callable[..., Any],
    "function": Callable[..., Any],
    "func": Callable[..., Any],
    "file": TextFileMarker,
    "file-like": TextFileMarker,
    "stream": TextFileMarker,
    "path": PathMarker,
    "filename": PathMarker,
    "datetime": DEFAULT_NAMES["datetime"],
    "date": DEFAULT_NAMES["date"],
    "timedelta": DEFAULT_NAMES["timedelta"],
    "none": type(None),
}
_COLLECTIONS: dict[str, Any] = {
    "list": list,
    "sequence": list,
    "iterable": list,
    "iterator": list,
    "tuple": list,
    "set": set,
    "container": list,
}
_ROLE = re.compile(r":\w+:`~?([^`]+)`")
_FILLER = re.compile(r"\b(optional|default[^,]*|or None|keyword[- ]only)\b", re.IGNORECASE)


def docstring_types(obj: object, classes: Mapping[str, type] | None = None) -> DocTypes:
    """The parameter and return types ``obj``'s docstring states (a class: its own docstring
    and its ``__init__``'s)."""
    texts = [_doc(obj)]
    if inspect.isclass(obj):
        texts.append(_doc(vars(obj).get("__init__")))
    found = DocTypes()
    for text in filter(None, texts):
        for name, words in _described(text):
            annotation = read_type(words, classes or {})
            if annotation is None:
                continue
            if name == "return":
                found.returns.append(annotation)
            else:
                found.parameters.setdefault(name, []).append(annotation)
    return found


def _doc(obj: object) -> str:
    doc = getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


def _described(text: str) -> list[tuple[str, str]]:
    """(parameter name or "return", type words) pairs, in the order the docstring gives them."""
    pairs: list[tuple[str, str]] = []
    for match in re.finditer(r"^\s*:param\s+(.+?)\s+(\*{0,2}\w+)\s*:", text, re.MULTILINE):
        pairs.append((match.group(2).lstrip("*"), match.group(1)))
    for match in re.finditer(r"^\s*:type\s+(\*{0,2}\w+)\s*:\s*(.+)$", text, re.MULTILINE):
        pairs.append((match.group(1).lstrip("*"), match.group(2)))
    for match in re.finditer(r"^\s*:rtype:\s*(.+)$", text, re.MULTILINE):
        pairs.append(("return", match.group(1)))
    lines = text.splitlines()
    for index, line in enumerate(lines):
        heading = line.strip().rstrip(":").lower()
        underlined = index + 1 < len(lines) and set(lines[index + 1].strip()) == {"-"}
        if heading in ("parameters", "other parameters") and underlined:
            pairs += _numpydoc_items(lines[index + 2 :])
        elif heading in ("returns", "yields") and underlined:
            pairs += [("return", words) for _, words in _numpydoc_items(lines[index + 2 :], True)]
        elif heading in (
            "args",
            "arguments",
            "parameters",
            "keyword args",
        ) and line.rstrip().endswith(":"):
            pairs += _google_items(lines[index + 1 :])
    return pairs


def _numpydoc_items(lines: list[str], returns: bool = False) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    for position, line in enumerate(lines):
        if not line.strip():
            continue
        if position + 1 < len(lines) and set(lines[position + 1].strip()) == {"-"}:
            break  # the next section
        if line[:1].isspace():
            continue  # a description line
        name, colon, words = line.partition(" : ")
        if colon:
            items.extend((part.strip().lstrip("*"), words) for part in name.split(","))
        elif returns:
            items.append(("", line))
    return items


def _google_items(lines: list[str]) -> list[tuple[str, str]]:
    items = []
    indent = None
    for line in lines:
        if not line.strip():
            continue
        current = len(line) - len(line.lstrip())
        if indent is None:
            indent = current
        if current < indent or (current == 0 and line.rstrip().endswith(":")):
            break
        if current > indent:
            continue
        match = re.match(r"\s*\*{0,2}(\w+)\s*\(([^)]*)\)\s*:", line)
        if match:
            items.append((match.group(1), match.group(2)))
    return items


def read_type(words: str, classes: Mapping[str, type]) -> Any:
    """The annotation a docstring's type words mean, or None."""
    words = _ROLE.sub(r"\1", words).replace("`", "").strip().rstrip(".")
    words = _FILLER.sub("", words).strip(" ,")
    if not words:
        return None
    choices = re.fullmatch(r"\{(.+)\}", words)
    if choices:
        values = [evaluate_literal(part) for part in choices.group(1).split(",")]
        values = [value for value in values if value is not _NOT_LITERAL]
        return typing.Literal[tuple(values)] if values else None
    members = [part for part in re.split(r"\s+or\s+|\s*\|\s*|,\s*", words) if part.strip()]
    annotations = [annotation for part in members if (annotation := _one_type(part, classes))]
    return union_of(annotations) if annotations else None


_NOT_LITERAL = object()


def evaluate_literal(text: str) -> Any:
    text = text.strip()
    if re.fullmatch(r"'[^']*'|\"[^\"]*\"", text):
        return text[1:-1]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    return _NOT_LITERAL


def _one_type(text: str, classes: Mapping[str, type]) -> Any:
    text = text.strip()
    collection = re.fullmatch(r"(\w+)\s+of\s+(.+)", text, re.IGNORECASE)
    if collection and collection.group(1).lower() in _COLLECTIONS:
        inner = _one_type(re.sub(r"s$", "", collection.group(2).strip()), classes) or int
        return _COLLECTIONS[collection.group(1).lower()][inner]
    if re.fullmatch(r"[\w.]+(\[.*\])?", text):
        evaluated = evaluate_type(text, {**DEFAULT_NAMES, **classes})
        if evaluated is not None and text.split("[")[0] not in ("list", "dict", "tuple", "set"):
            return evaluated
        if evaluated is not None and "[" in text:
            return evaluated
    lowered = text.lower()
    if lowered in WORDS:
        return WORDS[lowered]
    for word in reversed(re.findall(r"[\w-]+", text)):  # "NetworkX graph": the noun comes last
        for name, cls in classes.items():
            if name.lower() == word.lower():
                return cls
        if word.lower() in WORDS:
            return WORDS[word.lower()]
    return None
