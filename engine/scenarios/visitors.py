"""The node a tree visitor's method takes, read from the method's name.

Tree walkers dispatch on the node's class name: ``visit_ArrayDecl(self, n)`` is called with an
``ArrayDecl``, ``depart_paragraph(self, node)`` with a ``paragraph``. So the first parameter of
a method named ``visit_X`` (also ``_visit_X``, ``depart_X``, ``leave_X``, ``handle_X``,
``on_X``), where ``X`` is exactly the name of one of the package's classes, takes an ``X`` —
when it is unannotated, or annotated with a base class of ``X`` (the tree's ``Node``). The
dispatchers (``visit(node)``, ``generic_visit(node)``) take any node the visitor has a method
for: the classes its ``visit_X`` methods name (a base visitor that has none: the leaves of
the tree its annotation names), simplest first, in place of the base class (whose bare
instance has no children to walk). The node itself is built well-formed by
:mod:`.treenodes`. Both are the ``nodes`` source (``--no-nodes``).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from apiprof.engine.scenarios.pysyntax import handled_node_class
from apiprof.engine.scenarios.signatures import defining_class, package_classes
from apiprof.engine.scenarios.treenodes import leaf_classes, node_candidates, node_slots

PREFIXES = ("visit_", "depart_", "leave_", "handle_", "on_")
"""Method name prefixes that name the class of the node handled (leading ``_`` ignored)."""
DISPATCHERS = ("visit", "generic_visit")
"""Methods that take any node and dispatch on its class."""
MAX_DISPATCHED = 4
"""Node classes offered to a dispatcher (the simplest first)."""


def tree_candidates(
    target: Callable[..., object],
    parameter: inspect.Parameter,
    signature: inspect.Signature,
    annotation: Any,
) -> list[Any]:
    """Annotations the ``nodes`` source gives ``parameter`` of ``target`` (``annotation``: its
    own, or ``parameter.empty``): a node class's children and plain values, the node a
    ``visit_X`` method takes, the nodes a dispatcher takes."""
    if annotation is parameter.empty:
        found = node_candidates(target, parameter.name)
        if found:
            return found
    if not _is_node_parameter(signature, parameter):
        return []
    annotation = _without_none(annotation)
    visited = visited_class(target)
    if visited is not None:
        return [visited] if _refines(visited, annotation, parameter) else []
    if _bare_name(target) not in DISPATCHERS:
        return []
    handled = handled_classes(_owner(target))
    if not handled and node_slots(annotation) is not None:
        handled = list(leaf_classes(annotation))  # a base visitor: any node of the tree
    handled = [cls for cls in handled if _refines(cls, annotation, parameter)]
    return sorted(handled, key=_simplicity)[:MAX_DISPATCHED]


def visited_class(method: object) -> type | None:
    """The package class a ``visit_X``-style method is named after, else the ``ast`` class a
    handler's name gives (:func:`.pysyntax.handled_node_class`), or None."""
    name = _bare_name(method)
    module = getattr(method, "__module__", "") or ""
    for prefix in PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            found = package_classes(module).get(name[len(prefix) :])
            if inspect.isclass(found):
                return found
            break
    owner = _owner(method)
    return handled_node_class(name, lambda: dir(owner) if owner is not None else [])


def handled_classes(owner: type | None) -> list[type]:
    """The package classes ``owner``'s ``visit_X``-style methods are named after."""
    if owner is None:
        return []
    found: list[type] = []
    for name in dir(owner):
        method = getattr(owner, name, None)
        cls = visited_class(method) if callable(method) else None
        if cls is not None and cls not in found:
            found.append(cls)
    return found


def _without_none(annotation: Any) -> Any:
    """``Node | None`` → ``Node`` (a dispatcher that also takes None)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(annotation) if m is not type(None)]
        return members[0] if len(members) == 1 else annotation
    return annotation


def _bare_name(method: object) -> str:
    return (getattr(method, "__name__", "") or "").lstrip("_")


def _owner(target: object) -> type | None:
    receiver = getattr(target, "__self__", None)
    if receiver is not None and not inspect.ismodule(receiver):
        return receiver if inspect.isclass(receiver) else type(receiver)
    return defining_class(target)  # type: ignore[arg-type]  # any callable with a qualname


def _is_node_parameter(signature: inspect.Signature, parameter: inspect.Parameter) -> bool:
    """Whether ``parameter`` is the first positional one after ``self``: the node."""
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("self", "cls")
    ]
    return bool(positional) and positional[0].name == parameter.name


def _refines(cls: type, annotation: Any, parameter: inspect.Parameter) -> bool:
    """Whether ``cls`` says more than ``annotation`` does: none, or a base class of ``cls``."""
    if annotation is parameter.empty or annotation in (Any, object):
        return True
    return inspect.isclass(annotation) and annotation is not cls and issubclass(cls, annotation)


def _simplicity(cls: type) -> tuple[bool, bool, int, int, str]:
    """Leaves that carry values first (an ``ID``), then fewer required arguments."""
    slots = node_slots(cls)
    try:
        required = sum(
            1 for p in inspect.signature(cls).parameters.values() if p.default is p.empty
        )
    except (TypeError, ValueError):
        required = 99
    leaf = slots is not None and slots.leaf
    return (not leaf, not (slots and slots.plain), required, len(cls.__name__), cls.__name__)
