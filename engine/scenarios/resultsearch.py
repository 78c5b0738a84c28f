"""The search that gives an entry point nothing else could call the values the package's own
working calls make (:mod:`.results`): after every argument variant was rejected or could not
be built, each slot — the receiver, each required parameter — is offered the fitting objects
the related producers made, one slot at a time, in a few trial calls.

Bounded per entry point: :data:`MAX_TRIALS` trial calls of the entry point and
:data:`MAX_SECONDS` for everything, producer calls included, all inside the sandboxed worker
that searches this entry point's scenarios.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from apiprof.engine.discovery.discover import resolve_object
from apiprof.engine.scenarios.repair import Start, bound_arguments
from apiprof.engine.scenarios.results import (
    RECEIVER,
    Offer,
    Taken,
    fits_like,
    node_of_kind,
    offers,
    visited_kind,
)
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.engine.scenarios.synth import Synthesis, is_lazy, synthesize
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import Coverage

MAX_TRIALS = 6
"""Trial calls of the entry point with taken values, at most."""
MAX_SECONDS = 12.0
"""Time the search may take for one entry point, producers' calls and trials together."""
MAX_OFFERS = 3
"""Fitting objects kept per slot (the nearest producers' first)."""

Build = Callable[[Synthesis, tuple[Taken, ...], bool], ScenarioSpec]
"""Makes the scenario of a synthesis with taken values: ``(synthesis, taken, lazy)``."""


@dataclass(frozen=True)
class Slot:
    name: str
    fits: Callable[[object], bool]
    wants: str  # what it was offered for, for the reason ("a TocTreeprocessor")


def results_search(
    qualname: str,
    size: int | None,
    *,
    seed: int,
    start: Start,
    sources: tuple[str, ...],
    build: Build,
) -> tuple[ScenarioSpec | None, str]:
    """A working scenario whose receiver or one parameter is a value a related working call
    of the package made, or ``(None, what was tried)`` for the not-profiled reason."""
    deadline = time.monotonic() + MAX_SECONDS
    variant, pins = start
    slots = _slots(qualname, size, seed, start, sources)
    if not slots:
        return None, ""
    found: dict[str, list[Offer]] = {slot.name: [] for slot in slots}
    for offer in offers(qualname, frozenset(sources), deadline):
        for slot in slots:
            if len(found[slot.name]) < MAX_OFFERS and _fits(slot, offer.value):
                found[slot.name].append(offer)
        if all(len(kept) >= MAX_OFFERS for kept in found.values()):
            break
    trials = 0
    last = ""
    for slot in slots:
        for offer in found[slot.name]:
            if trials >= MAX_TRIALS or time.monotonic() > deadline:
                break
            taken = (replace(offer.taken, slot=slot.name),)
            try:
                synthesis = synthesize(qualname, size, seed, variant, sources, pins, taken=taken)
            except Exception:  # the rest of the arguments cannot be built around it
                continue
            trials += 1
            spec = build(synthesis, taken, False)
            failure, result = try_scenario(spec)
            if failure is None and is_lazy(result):
                spec = build(synthesis, taken, True)
                failure, result = try_scenario(spec)
            if failure is None:
                return spec, ""
            last = f"{taken[0].describe()}: the call {failure.reason}"
            if failure.kind is not Coverage.NO_ARGUMENTS:
                return None, _note(slots, found, last)
    return None, _note(slots, found, last)


def _note(slots: list[Slot], found: dict[str, list[Offer]], last: str) -> str:
    """``; the package's working calls made no TocTreeprocessor`` (or what the last one did)."""
    if last:
        return f"; with a value the package's working calls made, {last}"
    wanted = ", ".join(slot.wants for slot in slots if not found[slot.name])
    return f"; the package's related working calls made no {wanted}" if wanted else ""


def _fits(slot: Slot, value: object) -> bool:
    try:
        return bool(slot.fits(value))
    except Exception:  # an object whose comparison or isinstance check raises
        return False


def _slots(
    qualname: str, size: int | None, seed: int, start: Start, sources: tuple[str, ...]
) -> list[Slot]:
    """What may be taken from working calls: the receiver (first when it could not be
    built), each required parameter — a ``visit_X`` method's node of kind ``X``, else a value
    of the class the rejected call was given."""
    try:
        target = resolve_object(qualname)
    except Exception:
        return []
    owner_name, _, member = qualname.rpartition(".")
    owner = _class_or_none(owner_name)
    variant, pins = start
    try:
        rejected = synthesize(qualname, size, seed, variant, sources, pins)
    except Exception:
        rejected = None
    slots: list[Slot] = []
    receiver = owner is not None and not isinstance(
        inspect.getattr_static(owner, member, None), (staticmethod, classmethod)
    )
    if receiver and owner is not None:
        slots.append(Slot(RECEIVER, _of_class(owner), f"{owner.__name__} instance"))
    bound = bound_arguments(rejected, ()) if rejected is not None else {}
    kind = visited_kind(member)
    for position, name in enumerate(_required(target)):
        if kind and position == 0:
            slots.insert(0, Slot(name, functools.partial(node_of_kind, kind=kind), f"{kind} node"))
        elif name in bound and fits_like(bound[name], bound[name]):  # not a scalar, not empty
            like = functools.partial(fits_like, like=bound[name])
            slots.append(Slot(name, like, type(bound[name]).__name__))
    if rejected is not None and slots and slots[0].name == RECEIVER:
        slots.append(slots.pop(0))  # the receiver was built: the parameters first
    return slots


def _of_class(cls: type) -> Callable[[object], bool]:
    return lambda value: type(value) is cls


def _class_or_none(qualname: str) -> type | None:
    try:
        found = resolve_object(qualname) if "." in qualname else None
    except Exception:
        return None
    return found if inspect.isclass(found) else None


def _required(target: object) -> list[str]:
    """The names of ``target``'s required parameters, ``self`` left out."""
    try:
        signature = inspect.signature(target)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name not in ("self", "cls")
    ]
