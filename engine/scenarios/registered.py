"""Registered names: a string parameter the body looks up in a registry must be a key of it.

``if template in self.mapping`` (a dictionary loader), ``self.filters.get(name)`` (filters by
registered name), ``OPERATORS[op]``: any made-up word fails the lookup ("template not found",
"no filter named ..."). The lookups are read from the source — ``p in X``, ``X[p]``,
``X.get(p)``, ``X.pop(p)`` — where ``X`` is an attribute path on the receiver (``self.mapping``),
a module-level name, or a local assigned from one of those; a parameter passed straight on to
another method of the receiver (``self.get_source(environment, name)``) is followed one call
deep. At build time the registry is read from the real receiver or module, and its keys are the
candidates.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from apiprof.engine.scenarios.callees import passed_on
from apiprof.engine.scenarios.signatures import defining_class
from apiprof.engine.scenarios.usage import function_tree

MAX_KEYS = 4
"""Keys offered as argument flavours (the first few, in the registry's order)."""


@dataclass(frozen=True)
class RegisteredKey:
    """Annotation marker: a key of the registry at ``path`` — ``("self", "filters")`` on the
    receiver, else a name in ``namespace`` (the function's module globals) and attributes; or,
    with ``via``, of the registries the receiver's method ``via[0]`` looks its parameter
    ``via[1]`` up in (the receiver's own class: a subclass may override it)."""

    path: tuple[str, ...]
    namespace: Mapping[str, Any]
    via: tuple[str, int] | None = None

    def empty_reason(self, parameter: str) -> str:
        """Why no key of an empty registry could be passed, and what to do."""
        where = (
            f"the registry self.{self.via[0]}() looks it up in"
            if self.via is not None
            else ".".join(self.path)
        )
        return (
            f"parameter {parameter!r} is looked up in {where}, which holds no keys on the "
            "receiver built here: a scenario must add one first"
        )

    def __repr__(self) -> str:  # used to deduplicate candidates
        if self.via is not None:
            return f"RegisteredKey(self.{self.via[0]}#{self.via[1]})"
        return f"RegisteredKey({'.'.join(self.path)})"


def registered_keys(
    function: Callable[..., object], parameter: str, *, depth: int = 0
) -> list[RegisteredKey]:
    """The registries ``function``'s body looks ``parameter`` up in, or the receiver's method
    it passes ``parameter`` on to; or those of the package's own functions it passes
    ``parameter`` on to (``compute_hash(message, hash_method)`` checks ``method_name not in
    HASH_METHODS``), two calls deep."""
    raw = inspect.unwrap(getattr(function, "__func__", function))
    if inspect.isclass(raw):  # a constructor's parameter: what its ``__init__`` looks it up in
        raw = getattr(raw, "__init__", None)
        if not inspect.isfunction(raw):
            return []
    namespace = getattr(raw, "__globals__", {})
    found = [RegisteredKey(path, namespace) for path in dict.fromkeys(_lookups(raw, parameter))]
    if not found:
        via = _passed_to_own_method(raw, parameter)
        if via is not None and _may_look_up(raw, via):
            found.append(RegisteredKey((), namespace, via))
    if not found and depth < MAX_DEPTH:
        for callee, name in passed_on(raw, parameter):
            if not inspect.isfunction(callee):  # a class's constructor keeps what it is given
                continue
            inner = registered_keys(callee, name, depth=depth + 1)
            found += [key for key in inner if key.via is None and key.path[0] != "self"]
    return found


MAX_DEPTH = 2
"""How many calls deep a parameter passed on to the package's functions is followed."""


def _may_look_up(function: Callable[..., object], via: tuple[str, int]) -> bool:
    """Whether the method ``via`` names, as the class defining ``function`` has it, looks its
    parameter up (True when that class cannot be found: a subclass's method may)."""
    owner = defining_class(function)
    method = getattr(owner, via[0], None) if owner is not None else None
    if owner is None:
        return True
    names = _parameter_names(method)
    if method is None or via[1] >= len(names):
        return False
    return bool(_lookups(inspect.unwrap(method), names[via[1]]))


def keys_of(marker: RegisteredKey, receiver: object) -> list[Any]:
    """The keys of the registry ``marker`` names, strings first (empty when unreadable)."""
    if marker.via is not None:
        method = getattr(type(receiver), marker.via[0], None)
        names = _parameter_names(method)
        if method is None or marker.via[1] >= len(names):
            return []
        inner = registered_keys(method, names[marker.via[1]])
        return [key for found in inner if found.via is None for key in keys_of(found, receiver)]
    root, *rest = marker.path
    value: Any = receiver if root == "self" else marker.namespace.get(root)
    for attribute in rest:
        value = getattr(value, attribute, None)
    if value is None or isinstance(value, (str, bytes)):
        return []
    try:
        keys = list(value.keys()) if isinstance(value, Mapping) else list(iter(value))
    except Exception:
        return []
    keys = [
        key for key in keys if isinstance(key, int) or (isinstance(key, str) and key[:2] != "__")
    ]
    return sorted(keys, key=lambda key: not isinstance(key, str))[:MAX_KEYS]


def _parameter_names(method: object) -> list[str]:
    """Parameter names after ``self`` ([] when unreadable)."""
    try:
        return list(inspect.signature(method).parameters)[1:]  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return []


def _lookups(function: Callable[..., object], parameter: str) -> list[tuple[str, ...]]:
    tree = function_tree(function)
    if tree is None:
        return []
    locals_ = _local_paths(tree)
    found: list[tuple[str, ...]] = []
    for node in ast.walk(tree):
        container: ast.expr | None = None
        if (
            isinstance(node, ast.Compare)
            and _is_name(node.left, parameter)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
        ):
            container = node.comparators[0]
        elif isinstance(node, ast.Subscript) and _is_name(node.slice, parameter):
            container = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "__getitem__")
            and node.args
            and _is_name(node.args[0], parameter)
        ):
            container = node.func.value
        path = _path(container) if container is not None else None
        if path and len(path) == 1 and path[0] in locals_:
            found += locals_[path[0]]
        elif path:
            found.append(path)
    return found


def _local_paths(tree: ast.AST) -> dict[str, list[tuple[str, ...]]]:
    """The registry paths each local is assigned from, in source order (``if is_filter:
    env_map = self.filters else: env_map = self.tests`` gives both; a conditional expression
    gives both branches)."""
    paths: dict[str, list[tuple[str, ...]]] = {}
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        values = (
            [node.value.body, node.value.orelse]
            if isinstance(node.value, ast.IfExp)
            else [node.value]
        )
        for value in values:
            path = _path(value)
            if path and len(path) > 1:
                paths.setdefault(node.targets[0].id, []).append(path)
    return paths


def _path(node: ast.expr) -> tuple[str, ...] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return (node.id, *parts)
    return None


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _passed_to_own_method(
    function: Callable[..., object], parameter: str
) -> tuple[str, int] | None:
    """``(method name, argument position)`` when the body calls ``self.method(..., parameter,
    ...)`` positionally."""
    tree = function_tree(function)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and _is_name(node.func.value, "self")
        ):
            for index, arg in enumerate(node.args):
                if _is_name(arg, parameter):
                    return node.func.attr, index
    return None
