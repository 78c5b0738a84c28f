"""Argument synthesis: call an entry point with arguments built from its signature, at size n.

Annotations drive size-aware builders for common types (:mod:`.values`); unannotated parameters
are typed by the other sources (:mod:`.parameters`: stubs, docstring types, the package's
inverse functions, name and usage heuristics); methods are called on an instance built for the
purpose (:mod:`.receivers`, :mod:`.instances`: the class, its concrete subclasses, the
package's factories). The same ``(qualname, n, seed, variant)`` always gives the same
arguments, so a scenario is plain code: ``synthesize_call(...)`` in setup,
``target(*args, **kwargs)`` as the measured call (:mod:`.synthesized` writes it).

This module is the entry point scenarios import (their setup code names it), so it also
re-exports what that code calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from apiprof.engine.scenarios.building import (
    RANK,
    SOURCES,
    UNSIZED_LENGTH,
    BuildContext,
    CannotSynthesize,
)
from apiprof.engine.scenarios.consume import (
    CONSUME_LIMIT,
    UNSIZED_CONSUME_LIMIT,
    consume,
    is_lazy,
    rewind,
)
from apiprof.engine.scenarios.parameters import arguments_for
from apiprof.engine.scenarios.receivers import resolve_target
from apiprof.engine.scenarios.repaired import apply_argv
from apiprof.engine.scenarios.results import Taken
from apiprof.engine.scenarios.wants import Lesson
from apiprof.model.records import ScenarioSource

__all__ = [
    "CONSUME_LIMIT",
    "SOURCES",
    "UNSIZED_CONSUME_LIMIT",
    "CannotSynthesize",
    "Synthesis",
    "consume",
    "is_lazy",
    "rewind",
    "synthesize",
    "synthesize_arguments",
    "synthesize_call",
]


@dataclass(frozen=True)
class Synthesis:
    """A ready call, and what trying it taught: whether it is sized, how many variants exist."""

    target: Callable[..., object]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    sized: bool = False
    choices: int = 1
    files: bool = False  # the measured call must `rewind(args, kwargs)` first
    used: dict[str, ScenarioSource] = field(default_factory=dict)  # parameter -> its source
    heavy: bool = False  # its sized argument holds objects built one by one: sizes capped
    warmup: Callable[..., object] | None = (
        None  # call before each measured call (feeds the receiver)
    )
    # the entry point's own parameters -> how many alternatives each offered (for pins)
    alternatives: dict[str, int] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)  # parameter -> what was built for it
    receiver: object = None  # the instance a method or property is called on, None for others

    @property
    def source(self) -> ScenarioSource:
        """The least trustworthy source any argument came from (annotations: SYNTHESIZED)."""
        return max(self.used.values(), key=RANK.index, default=ScenarioSource.SYNTHESIZED)

    def describe_sources(self) -> str:
        """``"text: stubs, path: heuristics"`` — where each argument's type came from (and what
        was built, where a source noted it: ``m: patterns (a match of ...)``)."""
        return ", ".join(
            f"{name}: {source}" + (f" ({self.notes[name]})" if name in self.notes else "")
            for name, source in self.used.items()
        )


def synthesize_call(
    qualname: str,
    n: int | None,
    seed: int = 0,
    variant: int = 0,
    sources: tuple[str, ...] = SOURCES,
    pins: dict[str, int] | None = None,
    repairs: tuple[tuple[Any, ...], ...] = (),
    taken: tuple[Any, ...] = (),
) -> tuple[Callable[..., object], tuple[Any, ...], dict[str, Any]]:
    """``(target, args, kwargs)`` for one call of ``qualname``; methods get a fresh instance."""
    result = synthesize(qualname, n, seed, variant, sources, pins, repairs, taken)
    return result.target, result.args, result.kwargs


def synthesize_arguments(
    qualname: str,
    n: int | None,
    seed: int = 0,
    variant: int = 0,
    sources: tuple[str, ...] = SOURCES,
    pins: dict[str, int] | None = None,
    repairs: tuple[tuple[Any, ...], ...] = (),
    taken: tuple[Any, ...] = (),
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Just the ``(args, kwargs)`` of ``synthesize_call``."""
    result = synthesize(qualname, n, seed, variant, sources, pins, repairs, taken)
    return result.args, result.kwargs


def synthesize(
    qualname: str,
    n: int | None,
    seed: int = 0,
    variant: int = 0,
    sources: tuple[str, ...] = SOURCES,
    pins: dict[str, int] | None = None,
    repairs: tuple[tuple[Any, ...], ...] = (),
    taken: tuple[Any, ...] = (),
) -> Synthesis:
    """Build the call; raises CannotSynthesize with the reason when it cannot.

    ``pins`` give some of the entry point's own parameters a variant of their own (the others
    follow ``variant``): which candidate type and value flavour that parameter takes.
    ``repairs`` are :class:`~.lessons.Lesson` literals: what rejected calls asked for;
    ``taken`` are :class:`~.results.Taken` values (or their literals): slots filled with what
    the package's own working calls made."""
    context = BuildContext(
        qualname,
        UNSIZED_LENGTH if n is None else n,
        seed,
        variant,
        sources=frozenset(sources),
        pins=dict(pins or {}),
        lessons=tuple(Lesson.from_literal(repair) for repair in repairs),
        taken=tuple(t if isinstance(t, Taken) else Taken.from_literal(t) for t in taken),
    )
    try:
        apply_argv(context)
        target, prefix = resolve_target(qualname, context)
        args, kwargs = arguments_for(target, context, skip=len(prefix), optional=True)
    except CannotSynthesize as error:
        error.choices = context.choices  # flavours met before failing: later variants differ
        error.alternatives = dict(context.alternatives)
        raise
    return Synthesis(
        target,
        (*prefix, *args),
        kwargs,
        context.sized,
        context.choices,
        context.files,
        dict(context.used),
        context.heavy,
        context.warmup,
        dict(context.alternatives),
        dict(context.notes),
        context.receiver,
    )
