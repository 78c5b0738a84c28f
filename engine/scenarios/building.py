"""The state of building one call's arguments, shared by every step of argument synthesis.

A :class:`BuildContext` travels through the builders (:mod:`.values`), the parameter sources
(:mod:`.parameters`) and instance construction (:mod:`.instances`): it holds the size, the
seed and variant that make every value reproducible, how deep building has nested, and which
source each argument's type came from.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from apiprof.model.records import ScenarioSource

if TYPE_CHECKING:
    from apiprof.engine.scenarios.results import Taken
    from apiprof.engine.scenarios.wants import Lesson

UNSIZED_LENGTH = 10
"""Collection length used when a scenario has no size axis."""

MAX_DEPTH = 5
"""How deep building may nest: each object built for a parameter counts twice (the parameter and
the call that builds it), so 5 reaches an argument of an argument of an argument (a code
generator's frame, its evaluation context, that context's environment). Plain values at the
bottom do not count."""

SOURCES = (
    "stubs",
    "docstring_types",
    "examples",
    "subclasses",
    "observed",
    "nodes",
    "patterns",
    "package_data",
    "heuristics",
    "prepare",
    "repair",
    "results",
)
"""Switchable sources of argument types beyond the annotations (``--no-stubs`` etc.)."""

RANK = [
    ScenarioSource.SYNTHESIZED,
    ScenarioSource.STUBS,
    ScenarioSource.DOCSTRING_TYPES,
    ScenarioSource.EXAMPLES,
    ScenarioSource.FACTORIES,
    ScenarioSource.OBSERVED,
    ScenarioSource.NODES,
    ScenarioSource.PATTERNS,
    ScenarioSource.PACKAGE_DATA,
    ScenarioSource.HEURISTICS,
    ScenarioSource.PREPARED,
    ScenarioSource.RESULTS,  # the last resorts: what made the call work at all
    ScenarioSource.REPAIRED,
]
"""From most to least trustworthy: a scenario is credited to the least trustworthy source any
of its arguments came from."""


class CannotSynthesize(Exception):
    """No arguments can be built for this entry point; ``str(error)`` says which parameter and why."""

    choices: int = 1  # the argument flavours met before it failed (another variant may build)
    # per parameter, the alternatives met before it failed (set on the raised error)
    alternatives: Mapping[str, int] = MappingProxyType({})


@dataclass
class BuildContext:
    qualname: str
    n: int
    seed: int
    variant: int
    owner: type | None = None  # the class whose method is called (for a parameter named `other`)
    sized: bool = False  # did any argument depend on n?
    files: bool = False  # is any argument an in-memory file (to rewind before each call)?
    choices: int = 1  # the most flavours any argument offered: variants worth trying
    depth: int = 0
    sources: frozenset[str] = frozenset(SOURCES)  # the enabled sources beyond annotations
    member: str = ""  # the method or property called on an instance of ``owner``
    heavy: bool = False  # a sized argument holds n objects built one by one (not plain values)
    # where each argument's type came from: "parameter" -> source (for the description)
    used: dict[str, ScenarioSource] = field(default_factory=dict)
    # a sibling call giving the receiver its input, made before each measured call (warmup.py)
    warmup: Callable[..., object] | None = None
    receiver: object = None  # the instance a method is called on, once built (receivers.py)
    # id(instance) -> (instance, the arguments its class was called with): to renew a receiver
    # (warmup.py); the instance is held so that its id stays its own
    made: dict[int, tuple[object, tuple[Any, ...], dict[str, Any]]] = field(default_factory=dict)
    feeding: bool = False  # building a receiver's input: anything may also be a mapping
    building: list[type] = field(default_factory=list)  # classes being constructed, outermost first
    # per-parameter variants overriding ``variant`` for some of the entry point's own
    # parameters (which candidate type, then which value flavour), so each alternative of
    # each parameter can be tried with the others at their first choice (:mod:`.synthesized`)
    pins: dict[str, int] = field(default_factory=dict)
    parameter: str = ""  # the entry point's own parameter being built now ("" between them)
    pinned: int | None = None  # while building a pinned parameter: the variant its values take
    # the entry point's own parameters -> candidate types, and most flavours at one choice
    candidates: dict[str, int] = field(default_factory=dict)
    flavours: dict[str, int] = field(default_factory=dict)
    # what rejected calls taught about the entry point's own parameters (:mod:`.repair`)
    lessons: tuple[Lesson, ...] = ()
    # values taken from the package's own working calls, per slot (:mod:`.results`)
    taken: tuple[Taken, ...] = ()
    matched: Any = None  # the text the last match built was taken from (:mod:`.patterns`)
    # what a source built for a parameter, when its type alone does not say ("a match of ...")
    notes: dict[str, str] = field(default_factory=dict)
    # which sibling is being built ("1/", "1/2/" nested): see :meth:`apart`
    sibling: str = ""
    # a nested constructor called again with its parameters' next guesses (:mod:`.instances`):
    # which guess leads, and the most guesses a nested parameter offered
    nested_turn: int = 0
    nested_choices: int = 1

    @property
    def alternatives(self) -> dict[str, int]:
        """For each of the entry point's own parameters, how many pins tell apart."""
        return {name: count * self.flavours.get(name, 1) for name, count in self.candidates.items()}

    def inner(self, variant: int) -> BuildContext:
        """A context for one member of a union: its own variant, the same everything else."""
        return BuildContext(
            self.qualname,
            self.n,
            self.seed,
            variant,
            self.owner,
            depth=self.depth,
            sources=self.sources,
            member=self.member,
            used=self.used,
            heavy=self.heavy,
            receiver=self.receiver,
            made=self.made,
            building=self.building,
            feeding=self.feeding,
            warmup=self.warmup,
            parameter=self.parameter,
            candidates=self.candidates,
            flavours=self.flavours,
            matched=self.matched,
            notes=self.notes,
            sibling=self.sibling,
        )

    def credit(self, parameter: str, source: ScenarioSource) -> None:
        self.used.setdefault(parameter, source)

    @contextlib.contextmanager
    def attempt(self) -> Iterator[None]:
        """Building one candidate: the credits it gave are withdrawn when it fails, so the
        description names the sources of what was used, not of what was tried."""
        before = set(self.used)
        try:
            yield
        except CannotSynthesize:
            for name in set(self.used) - before:
                del self.used[name]
            raise

    def rng(self, parameter: str) -> random.Random:
        return random.Random(f"{self.seed}/{self.qualname}/{self.sibling}{parameter}")

    def apart(self, count: int, make: Callable[[int], Any]) -> list[Any]:
        """``make(i)`` for ``count`` siblings built alike (the items of a list, of ``*args``),
        each drawing its own values: everything nested in an item is drawn by parameter name,
        so without this two items get the same name, which a container of named items refuses
        as a duplicate. The first item draws what it always drew."""
        made = []
        outer = self.sibling
        try:
            for index in range(count):
                self.sibling = f"{outer}{index}/" if index else outer
                made.append(make(index))
        finally:
            self.sibling = outer
        return made

    def pick(self, options: list[Any]) -> Any:
        self.choices = max(self.choices, len(options))
        self.note_flavours(len(options))
        return options[self.current_variant() % len(options)]

    def current_variant(self) -> int:
        """The variant values take: the pinned parameter's own, else the call's."""
        return self.variant if self.pinned is None else self.pinned

    def note_flavours(self, count: int) -> None:
        """A choice among ``count`` flavours, met building one of the entry point's own
        parameters."""
        if self.parameter:
            self.flavours[self.parameter] = max(self.flavours.get(self.parameter, 1), count)

    @contextlib.contextmanager
    def building_parameter(self, name: str) -> Iterator[None]:
        """Building the entry point's own parameter ``name``: its pin, if any, applies."""
        self.parameter, self.pinned = name, self.pins.get(name)
        self.candidates.setdefault(name, 1)
        try:
            yield
        finally:
            self.parameter, self.pinned = "", None


def rotated(items: list[Any], variant: int) -> list[Any]:
    """``items`` starting at position ``variant`` (wrapping): later variants lead with later items."""
    if not items:
        return items
    shift = variant % len(items)
    return items[shift:] + items[:shift]


def name_of(obj: object) -> str:
    return getattr(obj, "__qualname__", None) or type(obj).__name__
