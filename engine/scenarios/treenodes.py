"""Syntax-tree nodes built well-formed, from what their classes say they hold.

Node classes that come without annotations still describe themselves: a method lists a node's
children (pycparser's ``children()`` returns ``self.type``, ``self.dim`` and each of
``self.attributes``), and a class attribute names its plain values (``attr_names =
("dim_quals",)``). Built from the other sources, an ``ArrayDecl`` holds a list where a child
node belongs, and every code generator or visitor taking it fails on the first child. Here a
constructor parameter that the lister reads as one child is given one *leaf* node of the same
tree (a node class whose lister reads nothing: ``ID``, ``Constant``, ``IdentifierType``), one it
iterates a list of leaves, and a plain value a word (later variants: the empty string, which
also serves a value read as a list of names or nodes). Children are always leaves, so building
a node never nests more than one level.
"""

from __future__ import annotations

import ast
import functools
import inspect
import typing
from dataclasses import dataclass
from typing import Any

from apiprof.engine.scenarios.usage import function_tree, self_attributes

CHILD_LISTERS = ("children", "get_children", "iter_children", "child_nodes")
"""Methods a node class lists its children with (the first one a class has is read)."""
PLAIN_LISTS = ("attr_names",)
"""Class attributes naming a node's plain (non-node) values."""
MAX_LEAVES = 8
"""Leaf classes offered for a child (variants rotate through them): the simplest first."""


@dataclass(frozen=True)
class NodeSlots:
    """What a node class's attributes hold, read from its child lister and ``attr_names``."""

    single: tuple[str, ...] = ()  # one child node each
    many: tuple[str, ...] = ()  # a list of child nodes each
    plain: tuple[str, ...] = ()  # plain values (names, operators, qualifiers)

    @property
    def leaf(self) -> bool:
        return not self.single and not self.many


def node_candidates(cls: object, parameter: str) -> list[Any]:
    """Annotations for constructor parameter ``parameter`` of node class ``cls`` (none when
    ``cls`` is no node class or its lister says nothing about the parameter)."""
    slots = node_slots(cls)
    if slots is None:
        return []
    if parameter in slots.plain:
        return [str | typing.Literal[""]]
    leaves = leaf_classes(cls)
    if not leaves:
        return []
    child = leaves[0] if len(leaves) == 1 else typing.Union[tuple(leaves)]  # noqa: UP007
    if parameter in slots.single:
        return [child]
    if parameter in slots.many:
        return [list[child]]  # type: ignore[valid-type]  # a union built at run time
    return []


def node_slots(cls: object) -> NodeSlots | None:
    """The slots of ``cls`` when it lists its children (None: not a node class)."""
    return _class_slots(typing.cast(type, cls)) if inspect.isclass(cls) else None


@functools.cache
def _class_slots(cls: type) -> NodeSlots | None:
    lister = next((getattr(cls, name) for name in CHILD_LISTERS if hasattr(cls, name)), None)
    tree = function_tree(lister) if callable(lister) else None
    if tree is None:
        return None
    read = [name for name in self_attributes(tree) if _is_data(cls, name)]
    many = dict.fromkeys(name for name in _iterated_attributes(tree) if name in read)
    single = dict.fromkeys(name for name in read if name not in many)
    plain = next(
        (names for name in PLAIN_LISTS if isinstance(names := getattr(cls, name, None), tuple)),
        (),
    )
    return NodeSlots(
        tuple(single),
        tuple(many),
        tuple(name for name in plain if isinstance(name, str) and name not in single),
    )


def _is_data(cls: type, name: str) -> bool:
    """Whether ``self.name`` is data the node holds, not a method or property it calls."""
    if name.startswith("_"):
        return False
    try:
        found = inspect.getattr_static(cls, name)
    except AttributeError:
        return True
    return not (
        inspect.isroutine(found) or isinstance(found, (property, functools.cached_property))
    )


def node_root(cls: type) -> type:
    """The topmost class of ``cls``'s package in its bases that has the child lister: the
    tree's common base (pycparser's ``Node``)."""
    top = (cls.__module__ or "").split(".")[0]
    root = cls
    for base in cls.__mro__[1:]:
        same_package = (base.__module__ or "").split(".")[0] == top
        if same_package and any(name in vars(base) for name in CHILD_LISTERS):
            root = base
    return root


@functools.cache
def leaf_classes(cls: Any) -> tuple[type, ...]:
    """The tree's leaf node classes, simplest first: those that carry plain values (an ``ID``
    has a name) before empty ones (a ``Break``), then fewer required constructor arguments,
    then shorter names (the tree's basic kinds: ``ID`` before ``IdentifierType``)."""
    root = node_root(cls)
    leaves = []
    for candidate in _tree_classes(root):
        slots = node_slots(candidate)
        if slots is not None and slots.leaf and _buildable(candidate, slots):
            leaves.append(
                (
                    not slots.plain,
                    _required_count(candidate),
                    len(candidate.__name__),
                    candidate.__name__,
                    candidate,
                )
            )
    return tuple(leaf for *_, leaf in sorted(leaves)[:MAX_LEAVES])


def _tree_classes(root: type) -> list[type]:
    """Every concrete class of the package below ``root`` (the tree's node kinds)."""
    top = (root.__module__ or "").split(".")[0]
    found: list[type] = []
    pending: list[type] = list(type.__subclasses__(root))
    while pending:
        cls = pending.pop(0)
        if cls in found:
            continue
        pending.extend(type.__subclasses__(cls))
        if (cls.__module__ or "").split(".")[0] == top and not inspect.isabstract(cls):
            found.append(cls)
    return found


def _buildable(cls: type, slots: NodeSlots) -> bool:
    """Whether every required constructor parameter of a leaf is one of its plain values."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return False
    return all(
        p.name in slots.plain
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )


def _required_count(cls: type) -> int:
    signature = inspect.signature(cls)
    return sum(1 for p in signature.parameters.values() if p.default is p.empty)


def _iterated_attributes(tree: ast.AST) -> list[str]:
    """``x`` of every ``self.x`` the function loops over (``for c in self.x``, ``enumerate(
    self.x or [])``, ``yield from self.x``, comprehensions): a list of children."""
    iterated: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            iterated.append(node.iter)
        elif isinstance(node, ast.YieldFrom):
            iterated.append(node.value)
    return [name for expression in iterated for name in self_attributes(expression)]
