"""Values an inverse function of the package makes (``decode`` for what ``encode`` takes): the
producer is called with its own arguments' flavours in turn until it returns a value the
parameter can take."""

from __future__ import annotations

from typing import Any

# instances builds objects from values, which asks this module: a cycle closed at call time
from apiprof.engine.scenarios import instances
from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize, name_of
from apiprof.engine.scenarios.factories import Produced
from apiprof.engine.scenarios.inverses import as_stream

PRODUCER_TRIES = 6
"""Argument flavours a producer (an inverse function) is called with until one returns a
value: ``encode`` refuses prose with spaces, where a word or other bytes encode."""


def produced(tp: Produced, context: BuildContext, name: str) -> Any:
    """What an inverse function of the package returns: its own arguments' flavours are
    tried in turn (from the current one) until it makes a value the parameter can take."""
    problems: list[str] = []
    start = context.current_variant()
    flavours = 1  # the most any try met
    for turn in range(start, start + PRODUCER_TRIES):
        inner = context.inner(turn)
        try:
            with context.attempt():
                value = produce_once(tp, inner, name)
        except CannotSynthesize as error:
            problems.append(str(error))
            flavours = max(flavours, inner.choices)
            if turn - start + 1 >= flavours:  # no flavour left to try
                break
            continue
        context.sized |= inner.sized or isinstance(value, (str, bytes))
        context.files |= inner.files
        return value
    raise CannotSynthesize(problems[0])


def produce_once(tp: Produced, context: BuildContext, name: str) -> Any:
    producer = tp.producer
    if tp.owner is not None:  # a method: made on an instance of its class
        maker = instances.construct(tp.owner, context)
        producer = getattr(maker, getattr(producer, "__name__", ""))
    given: list[object] = []
    used = dict(context.used)  # the producer's own arguments (its `f` too) are not the call's
    try:
        value = instances.call_with_arguments(producer, context, given=given)
    finally:
        context.used.clear()
        context.used.update(used)
    if tp.stream:
        stream = as_stream(value, given)
        if stream is None:
            raise CannotSynthesize(f"parameter {name!r}: {name_of(tp.producer)} made no content")
        context.files = True
        return stream
    if value is None:
        raise CannotSynthesize(f"parameter {name!r}: {name_of(tp.producer)} returned None")
    if tp.fits is not None and not isinstance(value, tp.fits):
        raise CannotSynthesize(
            f"parameter {name!r}: {name_of(tp.producer)} returned a "
            f"{type(value).__name__}, not the {_names(tp.fits)} it is annotated with"
        )
    return value


def _names(fits: type | tuple[type, ...]) -> str:
    members = fits if isinstance(fits, tuple) else (fits,)
    return " or ".join(member.__name__ for member in members)
