"""Receivers a sibling method must prepare: a method that reads what only another method sets.

A report's ``error()`` reads ``self.filename``, which its constructor never sets: the package
calls ``init_file(filename, lines, ...)`` on the report first, for every file. On a receiver
just built, such a method fails with an ``AttributeError`` that no argument of its own can
mend. So, when the method's body reads attributes of ``self`` the built receiver lacks (and the
body does not set itself), the sibling method that assigns the most of them — in its own body
or in a base class's definition of the same name — is called first, with arguments built for
its required parameters, before each measured call (outside what is measured, on a receiver
renewed as it was built, like a feeder: :mod:`.warmup`). Only the method's own call counts. A
generator, such as an ``__iter__`` that sets up a tokenizer's queue, is advanced to its first
item: its body runs only then.

Nothing here knows a package: the attributes read and assigned are read off the methods'
source. Switchable (``--no-prepare``); credited as the ``prepared`` source.
"""

from __future__ import annotations

import ast
import collections
import functools
import inspect
import typing
from collections.abc import Callable

from apiprof.engine.scenarios import parameters  # a cycle: see values.py
from apiprof.engine.scenarios.building import UNSIZED_LENGTH, BuildContext, CannotSynthesize
from apiprof.engine.scenarios.signatures import signature_of, type_hints
from apiprof.engine.scenarios.usage import function_tree, self_attributes
from apiprof.engine.scenarios.warmup import Warmup, renewal
from apiprof.model.records import ScenarioSource

SOURCE = "prepare"
"""The switch (``--no-prepare``)."""
_ABSENT = object()


def prepared_receiver(
    instance: object, owner: type, member: str, context: BuildContext
) -> Warmup | None:
    """The warm-up that calls ``instance``'s preparing sibling before each call of
    ``member`` (None when ``member`` reads nothing the receiver lacks, no sibling sets it, or
    the sibling's arguments cannot be built). Prepared first; a later variant calls the plain
    receiver (the attribute may be read only on a path the call does not take)."""
    if SOURCE not in context.sources:
        return None
    name = preparer_of(instance, member)
    if not name or not context.pick([True, False]):
        return None
    method = getattr(instance, name)
    signature = signature_of(method, context.sources)
    if signature is None:
        return None
    hints = type_hints(method)
    inner = BuildContext(
        context.qualname,
        UNSIZED_LENGTH,
        context.seed,
        context.current_variant(),
        owner,
        sources=context.sources,
        member=name,
    )
    inner.depth = context.depth + 1
    try:
        arguments = tuple(
            parameters.build_parameter(method, parameter, signature, hints, inner)
            for parameter in signature.parameters.values()
            if parameter.default is parameter.empty
            and parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        )
    except CannotSynthesize:  # the plain receiver, as without this source
        return None
    context.choices = max(context.choices, inner.choices)
    label = f"{type(instance).__name__}.{name}"
    context.credit(f"<{label} before each call>", ScenarioSource.PREPARED)
    renew, rebuild = renewal(instance, context)
    return Warmup(name, None, label, instance, renew, rebuild, arguments=arguments)


def preparer_of(instance: object, member: str) -> str:
    """The name of the sibling method of ``instance``'s class that assigns the most of the
    attributes ``member`` reads of ``self`` and ``instance`` lacks or holds only as its
    class's ``None`` placeholder (a public one before a private one when as many), or ""."""
    cls: type = type(instance)
    answers_any = hasattr(cls, "__getattr__")  # nothing is known to lack, but placeholders
    read = _read_not_set(cls, member)
    lacking = [
        attribute
        for attribute in read
        if (not answers_any and inspect.getattr_static(instance, attribute, _ABSENT) is _ABSENT)
        or _placeholder(instance, attribute)
    ]
    taken = _taken_from(cls, member)  # an empty container counts only when items are taken
    empty = [
        attribute
        for attribute in read
        if is_empty(instance, attribute)
        and (getattr(instance, attribute) is None or attribute in taken)
    ]
    if not lacking and not empty:
        return ""
    best, most = "", (0, 0)
    for name in sorted(method_names(cls), key=lambda name: name.startswith("_")):
        count = (  # what is absent first: a method reading it fails whatever else is filled
            sum(attribute in assigned_by(cls, name) for attribute in lacking),
            sum(attribute in fills(cls, name) for attribute in empty),
        )
        if count > most:
            best, most = name, count
    return best


def _placeholder(instance: object, attribute: str) -> bool:
    """Whether ``attribute`` is only a class's ``None`` standing in until a method sets it
    (``_currentIdx = None`` in the class body, nothing on the instance)."""
    own = getattr(instance, "__dict__", {})
    return attribute not in own and any(
        attribute in vars(klass) and vars(klass)[attribute] is None
        for klass in type(instance).__mro__[:-1]
    )


def is_empty(instance: object, attribute: str) -> bool:
    """Whether the constructor left ``attribute`` empty on the instance: None or an empty
    builtin container (a tree builder's ``openElements = []``, a tokenizer's ``currentToken =
    None``), which the package's own methods fill as it runs."""
    value = getattr(instance, "__dict__", {}).get(attribute, _ABSENT)
    return value is None or (type(value) in _CONTAINERS and not value)


_CONTAINERS = (list, dict, set, collections.deque, collections.OrderedDict)


def setters_of(cls: type, member: str) -> list[str]:
    """The sibling methods of ``cls`` that set an attribute ``member`` reads of ``self``
    without setting it itself (what :func:`preparer_of` chooses among)."""
    read = set(_read_not_set(cls, member))
    return [name for name in method_names(cls) if name != member and read & assigned_by(cls, name)]


CALLED_DEPTH = 1
"""How many calls on ``self`` deep a method's reads are followed."""


@functools.cache
def _read_not_set(cls: type, member: str, depth: int = CALLED_DEPTH) -> tuple[str, ...]:
    """The attributes ``cls.member``'s body reads of ``self`` without setting them itself,
    and those the methods it calls on ``self`` read (``self.consumeEntity()`` reading
    ``self.tokenQueue``), ``depth`` calls deep."""
    function = _function(inspect.getattr_static(cls, member, None))
    tree = function_tree(function) if function is not None else None
    if tree is None:
        return ()
    stored = set(self_attributes(tree, ast.Store))
    read = list(dict.fromkeys(self_attributes(tree)))
    if depth > 0:
        for name in list(read):
            if name != member and inspect.isfunction(inspect.getattr_static(cls, name, None)):
                read += [n for n in _read_not_set(cls, name, depth - 1) if n not in read]
    return tuple(name for name in read if name not in stored)


@functools.cache
def _taken_from(cls: type, member: str, depth: int = CALLED_DEPTH) -> frozenset[str]:
    """The attributes ``cls.member`` (and the methods it calls on ``self``) take items out of:
    ``self.openElements[-1]``, ``self.stack.pop()`` — what fails on an empty container, where
    a cache read with ``.get()`` or filled by the method itself does not."""
    function = _function(inspect.getattr_static(cls, member, None))
    tree = function_tree(function) if function is not None else None
    if tree is None:
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            found.add(_self_attribute(node.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _TAKING
        ):
            found.add(_self_attribute(node.func.value))
        elif depth > 0 and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            called = _self_attribute(node.func)
            if called and called != member:
                found |= _taken_from(cls, called, depth - 1)
    found.discard("")
    return frozenset(found)


_TAKING = frozenset(("pop", "popleft", "popitem"))


def method_names(cls: type) -> list[str]:
    """The names of the plain methods ``cls`` and its bases define, dunders left out but an
    ``__iter__`` that is a generator: a tokenizer sets its queue where iterating starts."""
    names: dict[str, None] = {}
    for klass in cls.__mro__[:-1]:  # object defines nothing of the package's
        for name, value in vars(klass).items():
            if inspect.isfunction(value) and (
                not name.startswith("__")
                or (name == "__iter__" and inspect.isgeneratorfunction(value))
            ):
                names.setdefault(name)
    return list(names)


@functools.cache
def assigned_by(cls: type, name: str) -> frozenset[str]:
    """What calling ``name`` on an instance of ``cls`` sets on ``self``: every definition of
    it along the class's bases (an override hands on to its base's with ``super()``)."""
    found: set[str] = set()
    for klass in cls.__mro__:
        value = vars(klass).get(name)
        tree = function_tree(value) if inspect.isfunction(value) else None
        if tree is not None:
            found.update(self_attributes(tree, ast.Store))
    return frozenset(found)


@functools.cache
def fills(cls: type, name: str) -> frozenset[str]:
    """What calling ``name`` on an instance of ``cls`` fills on ``self``: attributes it
    assigns a value that is not empty (``self.currentToken = {...}``), puts items in
    (``self.openElements.append(e)``, ``self.table[k] = v``), along the class's bases."""
    found: set[str] = set()
    for klass in cls.__mro__:
        value = vars(klass).get(name)
        tree = function_tree(value) if inspect.isfunction(value) else None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Assign):
                if not _empty_literal(node.value):
                    found.update(_self_attribute(target) for target in node.targets)
                found.update(
                    _self_attribute(target.value)
                    for target in node.targets
                    if isinstance(target, ast.Subscript)
                )
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _FILLING
            ):
                found.add(_self_attribute(node.func.value))
    found.discard("")
    return frozenset(found)


_FILLING = frozenset(
    ("append", "appendleft", "extend", "insert", "add", "update", "setdefault", "push")
)


def _self_attribute(node: ast.expr) -> str:
    """``x`` for ``self.x``, else ""."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return ""


def _empty_literal(node: ast.expr) -> bool:
    """``None``, ``[]``, ``{}``, ``()``, ``set()``, ``list()``...: what leaves it empty."""
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    return isinstance(node, ast.Call) and not node.args and not node.keywords


def _function(raw: object) -> Callable[..., object] | None:
    """The function behind a method, property or cached property (None for anything else)."""
    if isinstance(raw, property):
        return raw.fget
    if isinstance(raw, functools.cached_property):
        return typing.cast(Callable[..., object], raw.func)
    return raw if inspect.isfunction(raw) else None
