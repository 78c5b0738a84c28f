"""Example calls: what the package's own text passes to a callable, written out as literals.

A parameter that must be a well-formed domain string (a marker expression, a requirement, a
version specifier, a date format) fails when made up; the package usually shows valid values
itself — ``>>> Specifier(">=1.2.3")`` in a docstring, ``Marker('"Foo" in extras')`` in a
comment, ``Version("0.dev0")`` in its code. Every call of a callable by its name whose arguments
are all literals is read from the package's source files (code, docstrings and comments alike);
the values become candidates for its parameters, and whole calls of a class are a way to build
an instance of it. An example may be wrong on purpose (``Specifier("lolwat")`` documents the
error): candidates are only ever kept when the call they take part in runs.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_EXAMPLES = 4
"""Distinct example calls kept per callable (in the order the package's files show them)."""
MAX_CALL_CHARS = 600
"""How far a call's text may reach: examples are short; anything longer is not one."""
MAX_PACKAGE_BYTES = 20_000_000
"""Source read per package at most (a vendored giant is not searched to its end)."""


@dataclass(frozen=True)
class ExampleCall:
    """Literal arguments the package's text passes to a callable."""

    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()

    def arguments(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Fresh copies (a call may change a list or dict it is given)."""
        return copy.deepcopy(self.args), copy.deepcopy(dict(self.kwargs))


@dataclass(frozen=True)
class ExampleValues:
    """Annotation marker: one of the literal values the package's text passes to this
    parameter (the variant picks which)."""

    values: tuple[Any, ...]

    def __repr__(self) -> str:  # used to deduplicate candidates
        return f"ExampleValues({self.values!r})"


def example_calls(target: Callable[..., object]) -> list[ExampleCall]:
    """Calls of ``target`` by its name (``Marker(...)``, ``.evaluate(...)``) with literal
    arguments only, in the package's text. A method's name may be another class's method too:
    what does not bind to its signature, or does not run, is left out by the callers."""
    name = getattr(target, "__name__", "") or ""
    module = getattr(target, "__module__", "") or ""
    owner = getattr(target, "__self__", None)
    if not module and owner is not None:
        module = getattr(owner if inspect.isclass(owner) else type(owner), "__module__", "")
    if not name.isidentifier() or not module or name.startswith("__"):
        return []
    return list(_example_calls(module.split(".")[0], name))


def example_values(target: Callable[..., object], parameter: str) -> ExampleValues | None:
    """The literal values the package's example calls pass to ``parameter`` of ``target``."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    listed = list(signature.parameters.values())
    if listed and listed[0].name in ("self", "cls"):  # a function called with its receiver
        signature = signature.replace(parameters=listed[1:])
    found: list[Any] = []
    for call in example_calls(target):
        try:
            bound = signature.bind_partial(*call.args, **dict(call.kwargs))
        except TypeError:  # not a call of this signature (another callable of that name)
            continue
        if parameter in bound.arguments and bound.arguments[parameter] not in found:
            found.append(bound.arguments[parameter])
    return ExampleValues(tuple(found)) if found else None


@functools.cache
def _example_calls(top: str, name: str) -> tuple[ExampleCall, ...]:
    pattern = re.compile(rf"(?<![\w]){re.escape(name)}\(")
    found: list[ExampleCall] = []
    for text in _package_texts(top):
        for match in pattern.finditer(text):
            call = _literal_call(text, match.start(), match.end())
            if call is not None and call not in found:
                found.append(call)
                if len(found) >= MAX_EXAMPLES:
                    return tuple(found)
    return tuple(found)


def _literal_call(text: str, start: int, opened: int) -> ExampleCall | None:
    """The call starting at ``start`` (its name) if it parses and passes only literals."""
    for close in _closing_parens(text, opened, start + MAX_CALL_CHARS):
        try:
            node = ast.parse(text[start : close + 1], mode="eval").body
        except SyntaxError:
            continue
        if not isinstance(node, ast.Call) or not (node.args or node.keywords):
            return None
        try:
            args = tuple(ast.literal_eval(arg) for arg in node.args)
            kwargs = tuple((k.arg, ast.literal_eval(k.value)) for k in node.keywords if k.arg)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None  # an argument that is no literal: says nothing about the values
        if len(kwargs) != len(node.keywords) or any(
            isinstance(arg, ast.Starred) for arg in node.args
        ):
            return None
        try:
            hash(repr((args, kwargs)))
        except Exception:
            return None
        return ExampleCall(args, kwargs)
    return None


def _closing_parens(text: str, opened: int, limit: int) -> Iterator[int]:
    index = text.find(")", opened)
    while 0 <= index < min(limit, len(text)):
        yield index
        index = text.find(")", index + 1)


def package_source_texts(top: str) -> tuple[str, ...]:
    """The text of every ``.py`` file of the package ``top`` (read once)."""
    return _package_texts(top)


@functools.cache
def _package_texts(top: str) -> tuple[str, ...]:
    """The text of every ``.py`` file of the package (comments and docstrings included)."""
    module = sys.modules.get(top)
    roots = [Path(p) for p in getattr(module, "__path__", [])]
    single = getattr(module, "__file__", None)
    if not roots and single:  # a one-module distribution (six)
        roots = [Path(single)]
    texts: list[str] = []
    budget = MAX_PACKAGE_BYTES
    for root in roots:
        files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
        for path in files:
            if budget <= 0:
                break
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            budget -= len(text)
            texts.append(text)
    return tuple(texts)
