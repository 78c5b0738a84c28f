"""A function argument called with more positional arguments than it takes.

``mapcat(f, *seqs)`` calls ``f`` with one item of each sequence, so two sequences make
``f`` refuse: ``<lambda>() takes 1 positional argument but 2 were given``. When the function
the message names is one of the call's own arguments (or one made inside the call: a nested
function or lambda, which the package makes of an argument) and an argument is a ``*args``
tuple of exactly as many items as it was given, that ``*args`` should pass as many items as
the function takes. When the call itself refuses that many, the signature it shows is not its
own (:func:`fewer_parameters`). A ``*args`` handed on to C code that wants more (``pop(*args)``
calling ``dict.pop``: ``pop expected at least 1 argument, got 0``) passes as many as it wants
(:func:`more_items`)."""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping

from apiprof.engine.scenarios.wants import Lesson, Want

_TAKES = re.compile(
    r"^([\w.<>]+)\(\) takes (?:from \d+ to )?(\d+) positional arguments? but (\d+) (?:were|was) "
    r"given"
)


def fewer_items(message: str, bound: Mapping[str, object]) -> Lesson | None:
    """The ``*args`` lesson of a "takes N positional arguments but M were given" raised by
    calling one of the arguments, or None."""
    found = _TAKES.match(message)
    if found is None:
        return None
    called, takes, given = found.group(1), int(found.group(2)), int(found.group(3))
    made = "<locals>" in called or "<lambda>" in called  # made in the call, from an argument
    if takes >= given or not (
        made
        or any(
            callable(value) and getattr(value, "__qualname__", None) == called
            for value in bound.values()
        )
    ):
        return None
    for name, value in bound.items():
        if isinstance(value, tuple) and len(value) == given:
            return Lesson(name, Want.ITEMS, (str(takes),), cause=f"TypeError {message}")
    return None


_AT_LEAST = re.compile(r"\bexpected at least (\d+) arguments?, got (\d+)")


def more_items(message: str, bound: Mapping[str, object]) -> Lesson | None:
    """The ``*args`` lesson of a "expected at least N arguments, got M" (C code the ``*args``
    tuple was handed to), when exactly one ``*args`` tuple of M items was given, or None."""
    found = _AT_LEAST.search(message)
    if found is None:
        return None
    wants, got = int(found.group(1)), int(found.group(2))
    tuples = [name for name, value in bound.items() if isinstance(value, tuple)]
    matching = [name for name in tuples if len(typing.cast(tuple, bound[name])) == got]
    if wants <= got or len(matching) != 1:
        return None
    return Lesson(matching[0], Want.ITEMS, (str(wants),), cause=f"TypeError {message}")


def fewer_parameters(error: BaseException, bound: Mapping[str, object]) -> Lesson | None:
    """The call itself refused its arguments before any of its code ran (the traceback holds
    only the caller's frame) with "takes N positional arguments but M were given": the
    signature it shows is not the one it has (a decorator's wrapper copies the decorated
    function's, whose leading parameters the decorator supplies), so the call takes the last
    N of the M parameters it was given."""
    found = _TAKES.match(str(error))
    traceback = error.__traceback__
    if found is None or traceback is None or traceback.tb_next is not None:
        return None
    takes, given = int(found.group(2)), int(found.group(3))
    if not takes < given <= len(bound):
        return None
    names = tuple(list(bound)[:given][given - takes :])
    return Lesson("", Want.NAMES, names, cause=f"TypeError {error}")
