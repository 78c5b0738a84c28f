"""Optional parameters, filled in late variants: a default of None (or of a package's own
"no value" sentinel) often takes the path that cannot work alone, so odd variants from
:data:`FILL_FROM` on pass a value of the type the annotation, the name or the package's classes
suggest, each such variant the next flavour of it."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.classnames import classes_named_by
from apiprof.engine.scenarios.factories import import_package
from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.signatures import package_classes
from apiprof.model.records import ScenarioSource

FILL_FROM = 3
"""The first variant that fills optional parameters and kept ``*args``: variants 1 and 2 keep
their flavours of the other arguments (a word instead of prose) with the plain call."""


def late_variant(context: BuildContext) -> bool:
    """Whether this variant fills optional parameters (odd variants from ``FILL_FROM`` on);
    makes sure that many variants are tried."""
    context.choices = max(context.choices, FILL_FROM + 1)
    context.note_flavours(FILL_FROM + 1)
    variant = context.current_variant()  # a pinned receiver fills its own optional ones
    return variant >= FILL_FROM and variant % 2 == 1


def optional_type(
    parameter: inspect.Parameter,
    hints: dict[str, Any],
    sources: frozenset[str],
    target: Callable[..., object],
) -> Any:
    """What an optional parameter's annotation names besides None, or for an unannotated one
    defaulting to None (or to a sentinel: :func:`is_sentinel`) what its name suggests (with
    heuristics: a well-known name, else the package class it names, ``lexer=None`` a
    ``Lexer``; ``value=noValue`` any value); None: no usable type."""
    if parameter.default is parameter.empty or parameter.kind in (
        parameter.VAR_POSITIONAL,
        parameter.VAR_KEYWORD,
    ):
        return None
    annotation = hints.get(parameter.name, parameter.annotation)
    module = getattr(target, "__module__", "") or ""
    sentinel = is_sentinel(parameter.default, module)
    unset = parameter.default is None or sentinel
    if annotation is parameter.empty and unset and "heuristics" in sources:
        import_package(module.split(".")[0])  # the class may live in a module not yet imported
        named = classes_named_by(parameter.name, package_classes(module), abbreviations=False)
        annotation = guess_from_name(parameter.name) or (named or [parameter.empty])[0]
    if sentinel and annotation in (Any, object):
        return Any  # `value=noValue`: a value object holding nothing; any flavour, in turn
    if annotation is parameter.empty or isinstance(annotation, str) or annotation in (Any, object):
        return None
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(annotation) if m is not type(None)]
        annotation = members[0] if len(members) == 1 else None
    return None if annotation in (None, type(None), bool) else annotation


def fill_optional(
    target: Callable[..., object],
    parameter: inspect.Parameter,
    hints: dict[str, Any],
    context: BuildContext,
    kwargs: dict[str, Any],
) -> None:
    """Pass ``parameter`` a value of its annotated type, when one builds (else its default)."""
    from apiprof.engine.scenarios import values  # a cycle: values → parameters → here

    annotation = optional_type(parameter, hints, context.sources, target)
    if annotation is None:
        return
    # the late variants that fill (FILL_FROM, FILL_FROM + 2, ...) take its flavours in order
    inner = context.inner((context.current_variant() - FILL_FROM) // 2)
    try:
        with inner.attempt():
            kwargs[parameter.name] = values.build(annotation, inner, parameter.name)
    except CannotSynthesize:
        return
    finally:
        context.sized |= inner.sized
        context.files |= inner.files
        context.choices = max(context.choices, FILL_FROM + 2 * inner.choices)
        context.note_flavours(FILL_FROM + 2 * inner.choices)
    annotated = hints.get(parameter.name, parameter.annotation) is not parameter.empty
    guessed = ScenarioSource.SYNTHESIZED if annotated else ScenarioSource.HEURISTICS
    context.credit(parameter.name, guessed)


def is_sentinel(default: object, module: str) -> bool:
    """Whether ``default`` is a "nothing given" marker: a bare ``object()``, or an instance of
    a plain class of the package itself (``noValue = NoValue()``), not a value in its own
    right (a number, a text, a container, a function, a class)."""
    if type(default) is object:
        return True
    cls = type(default)
    own = cls.__module__.split(".")[0] == module.split(".")[0] and bool(module)
    plain = not (callable(default) or inspect.isclass(default) or inspect.ismodule(default))
    return own and plain and not isinstance(default, (int, float, str, bytes, tuple, list, dict))
