"""``*args`` a function passes straight on: what the function it forwards to needs.

Compatibility layers and decorators forward their variable arguments untouched —
``getattr(self, _assertCountEqual)(*args, **kwargs)`` in six, ``func(*args, **kw)`` in a
wrapper. Passing nothing makes the inner call fail ("missing 2 required positional arguments"),
so the values for ``*args`` are those the *callee* requires, built as for any call. The callee
is read from the forwarding call in the source: a function the module defines or imports, an
attribute of an argument already built, ``getattr(argument, NAME)`` with ``NAME`` a string
constant or a module-level string, or the base class's own method for ``super().NAME(*args)``
(a deprecated subclass that only forwards to its base's constructor).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from apiprof.engine.scenarios.usage import constructor_of, function_tree


def forwarding_call(function: Callable[..., object], parameter: str) -> ast.Call | None:
    """The call in ``function``'s body that passes ``*parameter`` on, if any."""
    target = inspect.unwrap(getattr(function, "__func__", function))
    if inspect.isclass(target):  # a class forwards what its constructor does
        target = constructor_of(target)
    tree = function_tree(target)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and any(
            isinstance(arg, ast.Starred)
            and isinstance(arg.value, ast.Name)
            and arg.value.id == parameter
            for arg in node.args
        ):
            return node
    return None


def forwarded_callee(
    function: Callable[..., object], parameter: str, built: Mapping[str, Any]
) -> tuple[Callable[..., object], int] | None:
    """The callable ``*parameter`` is forwarded to and how many positional arguments the call
    puts before it; None when the call or its callee cannot be read without running code.
    ``built``: the values already chosen for ``function``'s other parameters, by name."""
    call = forwarding_call(function, parameter)
    if call is None:
        return None
    target = inspect.unwrap(getattr(function, "__func__", function))
    if inspect.isclass(target):
        target = constructor_of(target)
    namespace = {**getattr(target, "__globals__", {}), **_imported_inside(target)}
    inherited = _from_super(call.func, target)
    callee = inherited[0] if inherited else _callee(call.func, namespace, built)
    if not callable(callee):
        return None
    leading = inherited[1] if inherited else 0  # the base's function: `self` / `cls` is bound
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            break
        leading += 1
    return callee, leading


def _callee(node: ast.expr, namespace: Mapping[str, Any], built: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        if node.id in built:
            return built[node.id]
        return namespace.get(node.id, getattr(builtins, node.id, None))  # `range(*args)`
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner = built.get(node.value.id, namespace.get(node.value.id))
        return getattr(owner, node.attr, None) if owner is not None else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in built
    ):
        name = _string(node.args[1], namespace)
        return getattr(built[node.args[0].id], name, None) if name else None
    return None


def _from_super(node: ast.expr, function: Any) -> tuple[Any, int] | None:
    """For ``super().name(*args)`` in a method: the function ``name`` of the next class after
    the method's own in its class's order of bases, and how many of its parameters the call
    binds (``self``, ``cls``); None for any other call, or when the class cannot be found from
    the method's qualified name."""
    if not (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "super"
        and not node.value.args
    ):
        return None
    function = inspect.unwrap(function)  # a decorator's wrapper has its own module's globals
    owner_name, _, _ = getattr(function, "__qualname__", "").rpartition(".")
    owner = getattr(function, "__globals__", {}).get(owner_name)
    if not inspect.isclass(owner):
        return None
    for base in owner.__mro__[1:]:
        if node.attr in vars(base):
            found = vars(base)[node.attr]
            bound = 0 if isinstance(found, staticmethod) else 1
            found = getattr(found, "__func__", found)  # a class or static method's function
            return (found, bound) if inspect.isfunction(found) else None
    return None


def _string(node: ast.expr, namespace: Mapping[str, Any]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and isinstance(namespace.get(node.id), str):
        return str(namespace[node.id])
    return ""


def _imported_inside(function: Callable[..., object]) -> dict[str, Any]:
    """What ``from module import name as alias`` statements in ``function``'s own body bind
    (an import made where it is used, as optional parts do): alias -> object, for modules
    already imported or importable without error."""
    tree = function_tree(function)
    module = str(getattr(function, "__module__", "") or "")
    bound: dict[str, Any] = {}
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.ImportFrom):
            continue
        base = module.rsplit(".", node.level)[0] if node.level else ""
        name = ".".join(part for part in (base, node.module or "") if part)
        try:
            imported = importlib.import_module(name)
        except Exception:  # an absent optional dependency: nothing is known of it
            continue
        for alias in node.names:
            if hasattr(imported, alias.name):
                bound[alias.asname or alias.name] = getattr(imported, alias.name)
    return bound
