"""Constructors that take their fields positionally, as a class attribute lists them.

Syntax-tree and record classes often have ``__init__(self, *fields, **attributes)`` and a class
attribute naming what the positional arguments are (``fields = ("target", "iter", "body")``,
``_fields`` on named tuples), with class-level annotations giving each one's type. Called with
no arguments such an object lacks its fields and every method of it fails, so a constructor's
``*fields`` gets one value per listed name, typed by the class's annotation for that name, else
guessed from the name.
"""

from __future__ import annotations

import inspect
import sys
import typing
from typing import Any

from apiprof.engine.scenarios.heuristics import guess_from_name

MAX_FIELDS = 12
"""A longer list is not a constructor's argument list."""


def declared_fields(cls: object, parameter: str) -> tuple[str, ...]:
    """The names ``cls`` lists for its constructor's ``*parameter`` (() when it lists none): a
    class attribute of the same name, with or without leading underscores, holding names."""
    if not inspect.isclass(cls):
        return ()
    bare = parameter.lstrip("_")
    for attribute in (bare, f"_{bare}", f"__{bare}__"):
        names = getattr(cls, attribute, None)
        if (
            isinstance(names, (tuple, list))
            and len(names) <= MAX_FIELDS
            and all(isinstance(name, str) and name.isidentifier() for name in names)
        ):
            return tuple(names)
    return ()


def field_candidates(cls: type, name: str, guess: bool = True) -> list[tuple[Any, bool]]:
    """Candidate types for one field: ``(type, typed)``, the class's annotation first, then
    (with ``guess``: the heuristics source) what the name suggests (not ``typed``), else
    anything (as for a field annotated ``Any``)."""
    found: list[tuple[Any, bool]] = []
    hint = class_hints(cls).get(name)
    if hint is not None and hint not in (Any, object):
        found.append((hint, True))
    guessed = guess_from_name(name) if guess else None
    if guessed is not None:
        found.append((guessed, False))
    return found or [(Any, True)]


def stored_as_is(target: object, parameter: str) -> bool:
    """Whether ``parameter`` is a field of the named tuple ``target``: its generated
    ``__new__`` (no source to read how it is used) stores each field as given, so any value
    will do (a cache's statistics ``CacheInfo(hits, misses, ...)``)."""
    return (
        inspect.isclass(target)
        and issubclass(target, tuple)
        and parameter in (getattr(target, "_fields", None) or ())
    )


def class_hints(cls: type) -> dict[str, Any]:
    """The class-level annotations of ``cls`` and its bases, resolved where they can be."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # a name only imported for type checking: keep the ones that resolve
        hints: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            namespace = vars(sys.modules.get(klass.__module__) or typing)
            for name, annotation in vars(klass).get("__annotations__", {}).items():
                if isinstance(annotation, str):  # `target: "Expr"`: one name of its module
                    try:
                        annotation = eval(annotation, dict(namespace), vars(typing))
                    except Exception:
                        continue
                hints[name] = annotation
        return hints


def fields_required(cls: type) -> int:
    """How many fields a constructor of this kind needs (0 for other classes)."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return 0
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_POSITIONAL:
            return len(declared_fields(cls, parameter.name))
    return 0
