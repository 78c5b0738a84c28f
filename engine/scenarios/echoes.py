"""Errors that echo one of our own arguments back: the call used it as a key or as an
attribute name, so it was never the value it looked like.

``pluck(key, mappings)`` given a key function raises ``KeyError: <function identity>``: the
``key`` is looked up in the mappings, so it is text (and the next round's ``KeyError`` on that
text makes the mappings hold it). ``invoke(objects, name)`` given a made-up word raises ``'int'
object has no attribute 'loremdolor'``: ``name`` names an attribute, so it becomes one the
object has."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping

from apiprof.engine import timeouts
from apiprof.engine.scenarios.heldnames import held_names
from apiprof.engine.scenarios.trial import TRIAL_SECONDS, quiet_stdio
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


def name_the_receiver_lists(
    error: BaseException, bound: Mapping[str, object], receiver: object
) -> Lesson | None:
    """A method whose error echoes one of its text arguments (``TemplateNotFound: lorem``,
    ``Name lorem not found``) looked it up in its receiver and found nothing: the receiver's
    own listing (``list_templates()``, ``keys()``, ``names()``), else the names of what it
    holds (:mod:`.heldnames`), says what it has, and the parameter takes the first name. An
    echoed item of ``*names`` makes the call pass that one name."""
    message = str(error)
    echoed = [name for name, value in bound.items() if _echoed(value, message)]
    listed = (receiver_listing(receiver) or held_names(receiver)) if echoed else ()
    if not listed or receiver is None:
        return None
    cause = f"{type(error).__name__} {message}: {echoed[0]} was not among what the receiver lists"
    return Lesson(echoed[0], Want.ONE_OF, listed[:1], cause=cause)


def _echoed(value: object, message: str) -> bool:
    """Whether the message repeats ``value`` (text), or an item of it (``*names``)."""
    if isinstance(value, str):
        return len(value) >= MIN_ECHO and value in message
    return isinstance(value, tuple) and any(_echoed(item, message) for item in value if item)


MIN_ECHO = 3
"""Shortest argument taken as echoed by a message (a letter may be in any message)."""
LISTING = re.compile(r"list(_\w+)?|(\w+_)?(keys|names)")
"""Names of methods that list what a receiver holds by name."""


def receiver_listing(receiver: object) -> tuple[str, ...]:
    """The names the first of ``receiver``'s listing methods that takes no argument returns."""
    for name in sorted(dir(type(receiver))):
        if (
            name.startswith("_")
            or not LISTING.fullmatch(name)
            or not _callable_bare(receiver, name)
        ):
            continue
        try:
            with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
                listed = [item for item in getattr(receiver, name)() if isinstance(item, str)]
        except (Exception, timeouts.CallTimeout):  # it cannot list here: another may
            continue
        if listed:
            return tuple(sorted(listed)[:MAX_LISTED])
    return ()


MAX_LISTED = 8
"""Names kept from a listing (sorted, so the same receiver always gives the same first)."""


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
