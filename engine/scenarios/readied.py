"""An instance of the package's class made ready to have the attributes a call asked of it.

A converter's ``html_spans`` and ``extra_classes`` exist only once its ``reset()`` ran, which
its ``convert()`` does first: the extension handed a fresh ``Markdown()`` fails with
``'Markdown' object has no attribute 'html_spans'``. When the repair builds an object of one
of the package's classes for attributes a call asked for and the instance just built lacks
some, the method of its class that assigns the most of them (fewer required parameters
first) is called on it, with arguments built for them, before it is used.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from apiprof.engine.scenarios import preparers  # a cycle: preparers → parameters → here
from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize

MAX_READYING = 3
"""How many of the class's methods are tried at most."""


def readied(instance: Any, wanted: list[str], context: BuildContext) -> Any:
    """``instance``, with the method that assigns the most of the ``wanted`` attributes it
    lacks called on it first (the first such call that runs and leaves none of them lacking
    fewer than before); as it was when it lacks none or no method sets them."""
    lacking = [name for name in wanted if not hasattr(instance, name)]
    if not lacking:
        return instance
    from apiprof.engine.scenarios.instances import call_with_arguments  # a cycle: see values.py

    cls: type = type(instance)
    for name in _setters(cls, tuple(lacking))[:MAX_READYING]:
        try:
            with context.attempt():
                call_with_arguments(getattr(instance, name), context)
        except CannotSynthesize:
            continue
        if sum(not hasattr(instance, attribute) for attribute in lacking) < len(lacking):
            return instance
    return instance


@functools.cache
def _setters(cls: type, lacking: tuple[str, ...]) -> list[str]:
    """The methods of ``cls`` that assign some of ``lacking``, the most first, then those
    with fewer required parameters, then public ones."""
    scored = []
    for name in preparers.method_names(cls):
        count = sum(attribute in preparers.assigned_by(cls, name) for attribute in lacking)
        if count:
            scored.append((-count, _required(getattr(cls, name)), name.startswith("_"), name))
    return [name for *_, name in sorted(scored)]


def _required(function: Callable[..., Any]) -> int:
    try:
        parameters = list(inspect.signature(function).parameters.values())[1:]
    except (TypeError, ValueError):
        return 99
    return sum(1 for p in parameters if p.default is p.empty and p.kind <= p.KEYWORD_ONLY)
