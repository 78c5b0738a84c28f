"""Errors that echo one of our own arguments back: the call used it as a key or as an
attribute name, so it was never the value it looked like.

``pluck(key, mappings)`` given a key function raises ``KeyError: <function identity>``: the
``key`` is looked up in the mappings, so it is text (and the next round's ``KeyError`` on that
text makes the mappings hold it). ``invoke(objects, name)`` given a made-up word raises ``'int'
object has no attribute 'loremdolor'``: ``name`` names an attribute, so it becomes one the
object has."""

from __future__ import annotations

import inspect
from collections.abc import Mapping

from apiprof.engine.scenarios.wants import Lesson, Want


def key_from_argument(error: KeyError, bound: Mapping[str, object]) -> Lesson | None:
    """A ``KeyError`` whose key is one of the arguments (itself, not an equal value): that
    parameter is a key, so text. Numbers and text are left alone: they may be equal by chance."""
    key = error.args[0] if error.args else None
    if key is None or isinstance(key, (str, bytes, int, float)):
        return None
    for name, value in bound.items():
        if value is key:
            cause = f"KeyError: the {type(key).__name__} passed as {name} was looked up as a key"
            return Lesson(name, Want.TYPE, ("str",), cause=cause)
    return None


def attribute_named_by_argument(
    error: AttributeError, bound: Mapping[str, object]
) -> Lesson | None:
    """An ``AttributeError`` naming exactly one of the text arguments: that parameter names an
    attribute, so it becomes one the object has (a method it can call without arguments
    first)."""
    attribute, obj = getattr(error, "name", None), getattr(error, "obj", None)
    if not attribute or obj is None:
        return None
    for name, value in bound.items():
        if isinstance(value, str) and value == attribute:
            offered = attribute_names(obj)
            if not offered:
                return None
            cause = f"AttributeError: {name} {attribute!r} named an attribute of the object"
            return Lesson(name, Want.ONE_OF, offered[:1], cause=cause)
    return None


def attribute_names(obj: object) -> tuple[str, ...]:
    """Public attributes of ``obj``'s type: methods that take no arguments first."""
    public = sorted(name for name in dir(type(obj)) if not name.startswith("_"))
    return tuple(sorted(public, key=lambda name: not _callable_bare(obj, name)))


def _callable_bare(obj: object, name: str) -> bool:
    try:
        member = getattr(obj, name)
        if not callable(member):
            return False
        parameters = inspect.signature(member).parameters.values()
    except (AttributeError, TypeError, ValueError):
        return False
    return all(
        p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters
    )
