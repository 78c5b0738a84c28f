"""Observed values: what the package's own entry points return, offered where a value of that
type is wanted and cannot be built directly.

A type-directed search across the package's API: the methods of its classes (on a receiver
built for the purpose) and its functions whose declared return type (annotation, stub,
docstring) or name fits the wanted type are called with synthesised arguments, inside the
sandboxed worker, and the first value that really is of that type is used —
``Template.generate()``'s iterator for a ``TemplateStream``, ``Environment.parse()``'s tree where
a template node is wanted. The check is on the value returned, not on what was declared. The
producer is called again in each scenario's setup (the same arguments: the value is rebuilt,
not copied), so a value consumed by one call is fresh for the next. Switchable
(``--no-observed``); credited as the ``observed`` source.
"""

from __future__ import annotations

import collections.abc as abc
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from apiprof.engine.scenarios import instances  # a cycle: see values.py
from apiprof.engine.scenarios.building import MAX_DEPTH, BuildContext, CannotSynthesize
from apiprof.engine.scenarios.classnames import snake_case
from apiprof.engine.scenarios.factories import package_callables
from apiprof.model.records import ScenarioSource

MAX_PRODUCERS = 4
"""Producers called at most per wanted type (each call builds a receiver and arguments)."""

_ITERATORS = (abc.Iterator, abc.Generator, abc.Iterable)


def observed_value(wanted: Any, context: BuildContext, name: str) -> Any:
    """A value of ``wanted`` returned by one of the package's entry points; raises
    CannotSynthesize saying which producers were tried."""
    if "observed" not in context.sources or context.depth > MAX_DEPTH:
        raise CannotSynthesize(f"parameter {name!r}: no observed value (source off or too deep)")
    top = context.qualname.split(".")[0]
    producers = [p for p in producers_of(wanted, top) if p.qualname != context.qualname]
    tried: list[str] = []
    for producer in producers[:MAX_PRODUCERS]:
        tried.append(producer.qualname)
        try:
            with context.attempt():
                value = producer.call(context)
        except CannotSynthesize:
            continue
        if fits(value, wanted):
            context.credit(f"<{name} from {producer.qualname}>", ScenarioSource.OBSERVED)
            return value
    said = f"tried {', '.join(tried)}" if tried else "no entry point of the package returns one"
    raise CannotSynthesize(f"parameter {name!r}: no observed value of {_shown(wanted)} ({said})")


class Producer:
    """An entry point of the package that may return the wanted type: a function, or a method
    called on an instance of ``owner`` built for the purpose."""

    def __init__(self, function: Callable[..., Any], owner: type | None) -> None:
        self.function = function
        self.owner = owner
        prefix = f"{owner.__module__}.{owner.__qualname__}" if owner else function.__module__
        self.qualname = f"{prefix}.{function.__name__}"

    def call(self, context: BuildContext) -> Any:
        """The producer's result; a producer is one level deeper, and a method of a class
        being built further up is a cycle (a date built from a method of the date class)."""
        target = self.function
        if self.owner is not None and self.owner in context.building:
            raise CannotSynthesize(f"{self.qualname}: its class is being built further up")
        context.depth += 1
        try:
            if self.owner is not None:
                receiver = instances.construct(self.owner, context)
                target = getattr(receiver, self.function.__name__)
            return instances.call_with_arguments(target, context)
        finally:
            context.depth -= 1


def fits(value: object, wanted: Any) -> bool:
    if value is None:
        return False
    if inspect.isclass(wanted):
        return isinstance(value, wanted)
    origin = typing.get_origin(wanted) or wanted
    if origin in _ITERATORS:
        return isinstance(value, abc.Iterator)
    return False


def producers_of(wanted: Any, top: str) -> list[Producer]:
    """The package's entry points whose declared return type or name says they make
    ``wanted``, declared ones first."""
    try:
        return list(_producers_of(wanted, top))
    except TypeError:  # an unhashable annotation
        return []


@functools.cache
def _producers_of(wanted: Any, top: str) -> tuple[Producer, ...]:
    declared: list[Producer] = []
    named: list[Producer] = []
    words = _words_for(wanted)
    for function, owner in package_callables(top):
        returns = instances.declared_returns(function)
        if any(_declares(annotation, wanted) for annotation in returns):
            declared.append(Producer(function, owner))
        elif not returns and function.__name__.lower() in words:
            named.append(Producer(function, owner))
    return tuple(declared + named)


def _declares(annotation: Any, wanted: Any) -> bool:
    if inspect.isclass(wanted):
        if inspect.isclass(annotation):
            return issubclass(annotation, wanted)
        members = typing.get_args(annotation) if typing.get_origin(annotation) else ()
        return any(inspect.isclass(m) and issubclass(m, wanted) for m in members)
    wanted_origin = typing.get_origin(wanted) or wanted
    if wanted_origin not in _ITERATORS:
        return False
    if (typing.get_origin(annotation) or annotation) not in (abc.Iterator, abc.Generator):
        return False
    items, made = typing.get_args(wanted)[:1], typing.get_args(annotation)[:1]
    return not (items and made) or items == made  # Iterator[str] is not Iterator[tuple]


def _words_for(wanted: Any) -> frozenset[str]:
    """Method names that promise a ``wanted`` (``Template``: ``template``, ``get_template``,
    ``make_template``...; an iterator: ``generate``, ``iterate``...)."""
    if not inspect.isclass(wanted):
        return frozenset({"generate", "iterate", "stream", "tokenize", "walk"})
    snake = snake_case(wanted.__name__)
    return frozenset(
        {snake, *(f"{verb}_{snake}" for verb in ("get", "make", "create", "new", "build", "to"))}
    )


def _shown(wanted: Any) -> str:
    return getattr(wanted, "__qualname__", None) or repr(wanted)
