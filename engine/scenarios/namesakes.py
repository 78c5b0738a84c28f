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
import sys
from collections.abc import Callable, Iterator
from typing import Any

from apiprof.engine.scenarios.factories import import_package

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
    for function in _callables(top):
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            continue
        for parameter in parameters:
            default = parameter.default
            if type(default) in PLAIN and parameter.name not in found:
                found[parameter.name] = type(default)
    return found


def _callables(top: str) -> Iterator[Callable[..., Any]]:
    """The package's public functions and its classes' functions, by module and name."""
    seen: set[int] = set()
    for module_name in import_package(top):
        module = sys.modules.get(module_name)
        for name, value in sorted(vars(module).items()) if module is not None else ():
            if name.startswith("_") or id(value) in seen:
                continue
            seen.add(id(value))
            if (getattr(value, "__module__", "") or "").split(".")[0] != top:
                continue
            if inspect.isfunction(value):
                yield value
            elif inspect.isclass(value):
                yield from (member for member in vars(value).values() if inspect.isfunction(member))
