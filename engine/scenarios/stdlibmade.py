"""Instances of standard-library classes a package's API takes, made the library's own way.

``webencodings.Encoding(name, codec_info)`` wants a ``codecs.CodecInfo``; nothing draws one
from the type alone, but the library makes them: ``codecs.lookup("utf-8")``. The typeshed
stubs of the class's module say which of its public callables return the class; those are the
factories tried (after hypothesis), their arguments built as any others are (``encoding``: a
codec name).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

from apiprof.engine.scenarios import instances  # a cycle: see values.py
from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize, name_of
from apiprof.engine.scenarios.stubs import stub_signature
from apiprof.model.records import ScenarioSource

MAX_FACTORIES = 4
"""Factories of one class tried at most."""


def stdlib_factories(cls: type) -> list[Callable[..., Any]]:
    """Public callables of ``cls``'s standard-library module whose stub returns ``cls``."""
    top = (cls.__module__ or "").split(".")[0]
    if top not in sys.stdlib_module_names:
        return []
    return list(_factories(cls))


@functools.cache
def _factories(cls: type) -> tuple[Callable[..., Any], ...]:
    module = sys.modules.get(cls.__module__ or "")
    found: list[Callable[..., Any]] = []
    for name in sorted(vars(module) if module is not None else ()):
        value = getattr(module, name, None)
        if name.startswith("_") or inspect.isclass(value) or not callable(value):
            continue
        stub = stub_signature(value)
        returns = stub.returns if stub is not None else []
        if any(inspect.isclass(r) and issubclass(r, cls) for r in returns):
            found.append(value)
    return tuple(found[:MAX_FACTORIES])


def stdlib_instance(cls: type, context: BuildContext, name: str) -> Any:
    """An instance from the standard library's own factory of ``cls`` (``codecs.lookup`` for
    a ``CodecInfo``), credited to the stubs that named it."""
    problems: list[str] = []
    for factory in stdlib_factories(cls):
        try:
            with context.attempt():
                made = instances.call_with_arguments(factory, context)
        except CannotSynthesize as error:
            problems.append(str(error))
            continue
        if isinstance(made, cls):
            context.credit(f"<{cls.__qualname__} from {name_of(factory)}>", ScenarioSource.STUBS)
            return made
    raise CannotSynthesize(
        f"parameter {name!r}: no factory of {cls.__qualname__} the stubs name built one"
        + (f" ({problems[0]})" if problems else "")
    )
