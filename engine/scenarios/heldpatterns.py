"""Where the package keeps its regular expressions: the receiver's compiled attributes, the
module's pattern constants (top-level globals in source order, literals its functions assign to
``*_RE`` names), the patterns the module passes to a class, and the pattern an expression in a
function body names. What :mod:`.patterns` builds matches and texts from."""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
import typing
from collections.abc import Callable
from typing import Any

MAX_PATTERNS = 6
"""Pattern constants offered to one parameter (flavours), best first."""
_PREFERRED_ATTRIBUTES = ("compiled_re", "pattern", "regex", "re", "RE", "regexp", "rx", "_re")


def held_patterns(
    receiver: object, attributes: tuple[str, ...], module: str
) -> list[re.Pattern[Any]]:
    """The receiver's compiled patterns (``attributes`` first — those the method matches with
    — then the usual names, then any), then the module's."""
    found: list[re.Pattern[Any]] = []
    if receiver is not None:
        held = _attributes(receiver)
        order = [*attributes, *_PREFERRED_ATTRIBUTES, *sorted(held)]
        found += [held[name] for name in dict.fromkeys(order) if name in held]
    found += _module_patterns(module).values()
    return list({id(pattern): pattern for pattern in found}.values())


def _attributes(receiver: object) -> dict[str, re.Pattern[Any]]:
    """The receiver's attributes (its own, then its classes') that are compiled patterns."""
    held: dict[str, re.Pattern[Any]] = {}
    namespaces = [getattr(receiver, "__dict__", {}), *(vars(k) for k in type(receiver).__mro__)]
    for namespace in namespaces:
        for name, value in namespace.items():
            if isinstance(value, re.Pattern):
                held.setdefault(name, value)
    return held


def resolve_pattern(expression: str, module: str, holder: object) -> re.Pattern[Any] | None:
    """The pattern ``expression`` names: a literal (``re.compile`` of one), a global of
    ``module`` (``NUMBER_RE``, ``patterns.NUMBER``), or ``self.<attribute>`` of ``holder`` (the
    receiver, else the called class)."""
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None
    value: Any = None
    if is_compile(node):  # re.compile(r"...").match(text)
        node = typing.cast(ast.Call, node).args[0]
    if isinstance(node, ast.Constant):
        value = node.value
    elif expression.startswith("self."):
        value = getattr(holder, expression.removeprefix("self."), None)
    else:
        value = sys.modules.get(module)
        for part in expression.split("."):
            value = getattr(value, part, None)
    return compiled_pattern(value)


def compiled_pattern(value: object) -> re.Pattern[Any] | None:
    if isinstance(value, re.Pattern):
        return value
    if isinstance(value, (str, bytes)):
        try:
            return re.compile(value)
        except (re.error, RecursionError, OverflowError):
            return None
    return None


def is_compile(node: ast.expr) -> bool:
    """``re.compile(<literal>, ...)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "compile"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
    )


def module_patterns(target: Callable[..., object]) -> tuple[str, ...]:
    """The module's pattern constants for a pattern parameter of ``target``: those the
    module passes to ``target`` itself (``Handler(ESCAPE_RE)``, ``Handler(r"...")``) first,
    then the others, at most :data:`MAX_PATTERNS`."""
    module = getattr(target, "__module__", "") or ""
    held = _module_patterns(module)
    passed = _passed(module, getattr(target, "__name__", ""))
    ordered = [*passed, *(pattern.pattern for pattern in held.values())]
    return tuple(dict.fromkeys(ordered))[:MAX_PATTERNS]


_PATTERN_NAME = re.compile(r"(^|_)(RE|PATTERN|REGEX|RX)S?$")
"""What a name that holds a pattern ends with (``TAG_RE``, ``number_pattern``)."""


@functools.cache
def _module_patterns(module_name: str) -> dict[str, re.Pattern[Any]]:
    """The module's pattern constants by name: compiled patterns, strings named like one
    (``*_RE``, ``*_PATTERN``, ``*_REGEX``) that compile — the globals its source assigns at
    the top level (in source order: the same in every worker, whatever ran before), and such
    names its functions assign a literal to."""
    module = sys.modules.get(module_name)
    tree = _module_tree(module_name)
    if module is None or tree is None:
        return {}
    found: dict[str, re.Pattern[Any]] = {}
    for name in _assigned(tree.body):
        value = getattr(module, name, None)
        named = _PATTERN_NAME.search(name.upper()) is not None
        compiled = compiled_pattern(value) if named or isinstance(value, re.Pattern) else None
        if compiled is not None:
            found[name] = compiled
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _PATTERN_NAME.search(node.targets[0].id.upper())
            and isinstance(node.value, ast.Constant)
        ):
            compiled = compiled_pattern(node.value.value)
            if compiled is not None:
                found.setdefault(node.targets[0].id, compiled)
    return found


def _assigned(body: list[ast.stmt]) -> list[str]:
    """Names the statements assign (``X = ...``, ``X: T = ...``), in order, once each."""
    names: list[str] = []
    for statement in body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        names += [target.id for target in targets if isinstance(target, ast.Name)]
    return list(dict.fromkeys(names))


@functools.cache
def _module_tree(module_name: str) -> ast.Module | None:
    module = sys.modules.get(module_name)
    try:
        return ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError, SyntaxError):
        return None


@functools.cache
def _passed(module_name: str, callee: str) -> tuple[str, ...]:
    """The patterns the module's own source passes first to ``callee(...)``: a pattern
    constant by its name, or a literal that compiles."""
    held = _module_patterns(module_name)
    found: list[str] = []
    for node in ast.walk(_module_tree(module_name) or ast.Module([], [])) if callee else ():
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        first = node.args[0]
        if called != callee:
            continue
        if isinstance(first, ast.Name) and first.id in held:
            found.append(held[first.id].pattern)
        elif _is_pattern_literal(first):
            found.append(str(typing.cast(ast.Constant, first).value))
    return tuple(dict.fromkeys(found))


def _is_pattern_literal(node: ast.expr) -> bool:
    """A string literal that compiles as a regular expression."""
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and compiled_pattern(node.value) is not None
    )
