"""Usage that continues in a callee: a parameter handed straight to another function or method of
the package is used there too.

``construct_yaml_str(self, node)`` only does ``self.construct_scalar(node)``, and it is
``construct_scalar`` that checks ``isinstance(node, ScalarNode)`` and reads ``node.value``;
``wrapper(path)`` may only call ``_read(path)``, which opens it. What a callee does with the
argument is merged into the caller's :class:`~.usage.Usage`, a few calls deep. Callees are
``self.method(...)`` (looked up on the class that defines the caller), ``super().method(...)``,
plain names of the caller's module and ``module.name(...)`` of a module it imported, when they
are functions or classes of the same top-level package.
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Callable
from dataclasses import fields

from apiprof.engine.scenarios.signatures import defining_class
from apiprof.engine.scenarios.usage import Usage, constructor_of, function_tree, usage_of

MAX_DEPTH = 2
"""How many calls deep a parameter is followed."""


def usage_through_callees(function: Callable[..., object], parameter: str) -> Usage | None:
    """``usage_of(function, parameter)`` with what the package's callees that receive the
    parameter unchanged do with it (None when the function's source is unavailable)."""
    return _usage(function, parameter, MAX_DEPTH, set())


def _usage(
    function: Callable[..., object], parameter: str, depth: int, seen: set[tuple[int, str]]
) -> Usage | None:
    usage = usage_of(function, parameter)
    raw = _raw(function)
    seen.add((id(raw), parameter))
    if usage is None or depth == 0:
        return usage
    for callee, name in passed_on(raw, parameter):
        if (id(_raw(callee)), name) in seen:
            continue
        inner = _usage(callee, name, depth - 1, seen)
        if inner is not None:
            _merge(usage, inner)
        default = _default_of(callee, name)
        if isinstance(default, DEFAULT_TYPES) and default not in usage.defaults:
            usage.defaults.append(default)
    return usage


DEFAULT_TYPES = (bool, int, float, str, bytes)
"""Defaults whose type says what a parameter handed on to it takes (None says nothing)."""


def _default_of(callee: Callable[..., object], name: str) -> object:
    """The default of ``callee``'s parameter ``name`` (None when it has none)."""
    try:
        parameter = inspect.signature(_raw(callee)).parameters.get(name)
    except (TypeError, ValueError):
        return None
    if parameter is None or parameter.default is parameter.empty:
        return None
    return parameter.default


def _raw(function: Callable[..., object]) -> Callable[..., object]:
    target = inspect.unwrap(getattr(function, "__func__", function))
    if inspect.isclass(target):
        init = constructor_of(target)
        return init if inspect.isfunction(init) else target
    return target


def _merge(usage: Usage, inner: Usage) -> None:
    for field in fields(Usage):
        mine, theirs = getattr(usage, field.name), getattr(inner, field.name)
        if isinstance(mine, bool):
            setattr(usage, field.name, mine or theirs)
        elif isinstance(mine, set):
            mine |= theirs
        else:
            mine.extend(value for value in theirs if value not in mine)


def passed_on(
    function: Callable[..., object], parameter: str
) -> list[tuple[Callable[..., object], str]]:
    """``(callee, its parameter)`` for each call in ``function``'s body that passes
    ``parameter`` on unchanged, where the callee can be resolved to the package's own code."""
    tree = function_tree(function)
    if tree is None:
        return []
    found: list[tuple[Callable[..., object], str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee, bound = _resolve(function, node.func)
        if callee is None:
            continue
        names = _parameter_names(callee, bound)
        for index, argument in enumerate(node.args):
            if isinstance(argument, ast.Starred):
                break
            if _is_name(argument, parameter) and index < len(names):
                found.append((callee, names[index]))
        for keyword in node.keywords:
            if keyword.arg in names and _is_name(keyword.value, parameter):
                found.append((callee, keyword.arg))
    return found


def _resolve(
    function: Callable[..., object], func: ast.expr
) -> tuple[Callable[..., object] | None, bool]:
    """The package's callable a call expression names, and whether it is bound (``self.m``)."""
    module_name = getattr(function, "__module__", "") or ""
    package = module_name.split(".")[0]
    found: object = None
    bound = False
    if isinstance(func, ast.Name):
        found = getattr(function, "__globals__", {}).get(func.id)
    elif isinstance(func, ast.Attribute) and (_is_name(func.value, "self") or _is_super(func)):
        owner = defining_class(function)
        if owner is not None and _is_super(func):  # the next class in the MRO that has it
            after = owner.__mro__[1:]
            owner = next((cls for cls in after if func.attr in vars(cls)), None)
        found = inspect.getattr_static(owner, func.attr, None) if owner else None
        bound = not isinstance(found, (staticmethod, classmethod))
        found = getattr(found, "__func__", found)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):  # `pkg.markdown(x)`
        held = getattr(function, "__globals__", {}).get(func.value.id)
        if isinstance(held, types.ModuleType):
            found = getattr(held, func.attr, None)
    if not (inspect.isfunction(found) or inspect.isclass(found)):
        return None, False
    if (getattr(found, "__module__", "") or "").split(".")[0] != package:
        return None, False
    return found, bound


def _parameter_names(callee: Callable[..., object], bound: bool) -> list[str]:
    """The callee's positional parameter names as a caller passes them (``self`` left out)."""
    target = _raw(callee)
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return []
    if inspect.isfunction(target) and (bound or inspect.isclass(callee)):
        parameters = parameters[1:]
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _is_super(func: ast.Attribute) -> bool:
    """``super().method``: the argument-less form."""
    value = func.value
    return (
        isinstance(value, ast.Call)
        and _is_name(value.func, "super")
        and not value.args
        and not value.keywords
    )


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
