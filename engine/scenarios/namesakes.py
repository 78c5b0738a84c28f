"""A parameter without a default typed by a namesake's default elsewhere in the package.

A package that threads one option through its layers gives it a default where users meet it
(``HTMLParser(namespaceHTMLElements=True)``) and none in the inner classes that receive it
(``TreeBuilder.__init__(self, namespaceHTMLElements)``). The name means the same throughout a
package, so the type of the plain default a same-named parameter has in one of its public
functions or methods types the one that has none. The weakest hint: used only when no other
says anything.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from apiprof.engine.scenarios.factories import package_callables

PLAIN = (bool, int, float, str, bytes)
"""Defaults whose type is a value we can make (None, a sentinel or a class say nothing)."""


def namesake_default(target: Callable[..., object], parameter: str) -> type | None:
    """The type of the plain default a parameter named ``parameter`` has in the package's
    functions or methods (the first one found, by module and name), or None."""
    top = (getattr(target, "__module__", "") or "").split(".")[0]
    return _defaults(top).get(parameter) if top else None


@functools.cache
def _defaults(top: str) -> dict[str, type]:
    """Parameter name → the type of its first plain default, over the package's callables."""
    found: dict[str, type] = {}
    for function, _ in package_callables(top, constructors=True):
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            continue
        for parameter in parameters:
            default = parameter.default
            if type(default) in PLAIN and parameter.name not in found:
                found[parameter.name] = type(default)
    return found
