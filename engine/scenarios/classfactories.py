"""Subclasses the package makes only when asked: a function that returns a class.

A tree builder's base class leaves its node classes empty (``elementClass = None``) and its
constructor calls them, so it cannot be built; its concrete subclasses do not exist until the
package's ``getTreeBuilder("etree")`` defines one inside a function and returns it (or a
namespace holding it). No subclass is there to find by walking ``__subclasses__`` at first,
and no function is declared to return an instance. So, when a class cannot be built
otherwise, the package's public functions whose name holds the class's name
(``getTreeBuilder`` for ``TreeBuilder``) are called with arguments built for them (the
package's own examples first: ``getTreeBuilder('etree')`` in a docstring), and a subclass of
the class they return — itself, or a value of the mapping or module they return — is built.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Mapping
from typing import Any

from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.examples import ExampleCall, example_calls
from apiprof.engine.scenarios.factories import package_functions

MAX_CLASS_FACTORIES = 3
"""How many functions named after the class are called at most, per instance built."""


def class_factories(cls: type) -> list[Callable[..., Any]]:
    """The package's public functions whose name holds ``cls``'s name (case-insensitive),
    the shortest name first: ``getTreeBuilder`` before ``getETreeBuilder``."""
    wanted = cls.__name__.lower().lstrip("_")
    top = (cls.__module__ or "").split(".")[0]
    if len(wanted) < 4:  # a short name (``Op``) is part of too many others
        return []
    found = [
        function
        for function in package_functions(top)
        if wanted in function.__name__.lower() and function.__name__.lower() != wanted
    ]
    found.sort(key=lambda function: (len(function.__name__), function.__name__))
    return found[:MAX_CLASS_FACTORIES]


def subclass_made(made: object, cls: type) -> type | None:
    """The proper, concrete subclass of ``cls`` that ``made`` is or holds (a value of a mapping
    or module: ``return locals()`` of a function that defines the classes), else None."""
    candidates: list[object] = [made]
    if isinstance(made, Mapping):
        candidates += list(made.values())
    elif isinstance(made, types.ModuleType):
        candidates += list(vars(made).values())
    for candidate in candidates:
        if (
            inspect.isclass(candidate)
            and candidate is not cls
            and issubclass(candidate, cls)
            and not inspect.isabstract(candidate)
        ):
            return candidate
    return None


MAX_EXAMPLES = 2
"""How many of the package's own literal calls of a class factory are tried."""


def example_makers(factory: Callable[..., Any]) -> list[Callable[[BuildContext], object]]:
    """Calls of ``factory`` as the package writes them with literal arguments
    (``getTreeBuilder('etree')``), each raising :class:`CannotSynthesize` when it fails."""

    def maker(call: ExampleCall) -> Callable[[BuildContext], object]:
        def make(context: BuildContext) -> object:
            args, kwargs = call.arguments()
            try:
                return factory(*args, **kwargs)
            except Exception as error:  # an example of the error it raises
                raise CannotSynthesize(f"{factory.__name__}{args!r}: {error!r}") from error

        return make

    return [maker(call) for call in example_calls(factory)[:MAX_EXAMPLES]]
