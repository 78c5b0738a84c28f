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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from apiprof.engine.scenarios.lessons import learn, may_teach
from apiprof.engine.scenarios.producers import Offer, offers, target_and_owner
from apiprof.engine.scenarios.repair import Start, bound_arguments, probe_call, receiver_of
from apiprof.engine.scenarios.results import (
    DISPATCHERS,
    fits_like,
    handled_node,
    node_of_kind,
    visited_kind,
)
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.engine.scenarios.synth import Synthesis, is_lazy, synthesize
from apiprof.engine.scenarios.taken import RECEIVER, Taken
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.engine.scenarios.wants import Lesson, Want
from apiprof.model.records import Coverage

MAX_TRIALS = 6
"""Trial calls of the entry point with taken values, at most."""
MAX_SECONDS = 12.0
"""Time the search may take for one entry point, producers' calls and trials together."""
MAX_OFFERS = 3
"""Fitting objects tried per slot: what a producer returns before what it holds, the nearest
producers' first."""
MAX_GATHERED = 12
"""Fitting objects gathered per slot before they are ranked."""

Build = Callable[[Synthesis, tuple[Taken, ...], bool], ScenarioSpec]
"""Makes the scenario of a synthesis with taken values: ``(synthesis, taken, lazy)``."""


@dataclass(frozen=True)
class Slot:
    name: str
    fits: Callable[[object], bool]
    # what the slot wants, for the reason when no related call made one ("slice node"); ""
    # for another instance of the receiver's class or another value of the class it was
    # given (that none was made says nothing the reason does not)
    wants: str
    # a producer whose plain result is no news here: the receiver's class called as synthesis
    # already calls it
    plain: str = ""

    def takes(self, offer: Offer) -> bool:
        taken = offer.taken
        if taken.producer == self.plain and taken.root == "result" and not taken.path:
            return False
        try:
            return bool(self.fits(offer.value))
        except Exception:  # an object whose comparison or isinstance check raises
            return False


def results_search(
    qualname: str,
    size: int | None,
    *,
    seed: int,
    start: Start,
    sources: tuple[str, ...],
    build: Build,
) -> tuple[ScenarioSpec | None, str, tuple[Taken, ...]]:
    """A working scenario whose receiver or one parameter is a value a related working call
    of the package made, or ``(None, what was tried, taken)`` for the not-profiled reason —
    ``taken``: the first receiver tried whose call's error may say what the arguments should
    be (the error-guided repair mends them around it), else ()."""
    deadline = time.monotonic() + MAX_SECONDS
    variant, pins = start
    slots, built = _slots(qualname, size, seed, start, sources)
    if not slots:
        return None, "", ()
    found: dict[str, list[Offer]] = {slot.name: [] for slot in slots}
    for offer in offers(qualname, frozenset(sources), deadline, siblings=built):
        for slot in slots:
            kept = found[slot.name]
            fresh = all(offer.value is not other.value for other in kept)
            if len(kept) < MAX_GATHERED and fresh and slot.takes(offer):
                found[slot.name].append(offer)
        if all(len(kept) >= MAX_GATHERED for kept in found.values()):
            break
    for name, kept in found.items():
        found[name] = sorted(kept, key=_made_first)[:MAX_OFFERS]
    trials = 0
    last = ""
    mendable: tuple[Taken, ...] = ()
    for slot, offer in _round_robin(slots, found):
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
            return spec, "", ()
        last = f"{taken[0].describe()}: the call {failure.reason}"
        if failure.kind is not Coverage.NO_ARGUMENTS:
            return None, _note(slots, found, last), ()
        if not mendable and slot.name == RECEIVER and may_teach(failure.reason):
            mendable = taken  # the repair mends parameters, never the receiver: one to keep
    return None, _note(slots, found, last), mendable


def _made_first(offer: Offer) -> tuple[int, int, int]:
    """What a call returned outright, then what its result holds, then what its receiver or
    arguments hold; nearer producers and shorter paths first."""
    taken = offer.taken
    where = 0 if taken.root == "result" and not taken.path else 1 if taken.root == "result" else 2
    return where, offer.rank, len(taken.path)


def _round_robin(slots: list[Slot], found: dict[str, list[Offer]]) -> list[tuple[Slot, Offer]]:
    """Each slot's first offer, then each slot's second...: no slot waits for another's
    misfits."""
    order = []
    for turn in range(MAX_OFFERS):
        order += [(slot, found[slot.name][turn]) for slot in slots if turn < len(found[slot.name])]
    return order


def _note(slots: list[Slot], found: dict[str, list[Offer]], last: str) -> str:
    """``; the package's related working calls made no slice node`` and what the last call
    with a value they made raised."""
    wanted = ", ".join(slot.wants for slot in slots if slot.wants and not found[slot.name])
    note = f"; the package's related working calls made no {wanted}" if wanted else ""
    if last:
        note += f"; with a value they made, {last}"
    return note


def _slots(
    qualname: str, size: int | None, seed: int, start: Start, sources: tuple[str, ...]
) -> tuple[list[Slot], bool]:
    """What may be taken from working calls: the receiver (first when it could not be
    built), each required parameter — a ``visit_X`` method's node of kind ``X``, else a value
    of the class the rejected call was given; and whether the rejected call could be built."""
    found = target_and_owner(qualname)
    if found is None:
        return [], False
    target, owner, member = found
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
        slots.append(Slot(RECEIVER, _of_class(owner), "", _defined_as(owner)))
    bound = bound_arguments(rejected, ()) if rejected is not None else {}
    asked = _asked(rejected, bound)
    kind = visited_kind(member)
    for position, name in enumerate(_required(target)):
        if kind and position == 0:
            slots.insert(0, Slot(name, functools.partial(node_of_kind, kind=kind), f"{kind} node"))
        elif member in DISPATCHERS and owner is not None and position == 0:
            handled = functools.partial(handled_node, owner=owner)
            slots.insert(0, Slot(name, handled, f"node {owner.__name__} has a method for"))
        elif asked is not None and asked.parameter == name:  # what its error asked for: first
            slots.insert(0, Slot(name, functools.partial(_answers, asked), asked.what()))
        elif name in bound and fits_like(bound[name], bound[name]):  # not a scalar, not empty
            like = functools.partial(fits_like, like=bound[name])
            slots.append(Slot(name, like, ""))
    if rejected is not None and slots and slots[0].name == RECEIVER:
        slots.append(slots.pop(0))  # the receiver was built: the parameters first
    return slots, rejected is not None


def _asked(rejected: Synthesis | None, bound: dict[str, object]) -> Lesson | None:
    """What the rejected call's error says one parameter wants: keys of a mapping, or
    attributes of an object (None: it says neither)."""
    if rejected is None:
        return None
    error = probe_call(rejected)[0]
    if error is None:
        return None
    try:
        lesson = learn(error, bound, receiver=receiver_of(rejected))
    except Exception:  # an exception whose message or frames cannot be read
        return None
    wanted = lesson is not None and lesson.want in (Want.KEYS, Want.ATTRIBUTES)
    return lesson if wanted and lesson is not None and not lesson.element else None


def _answers(lesson: Lesson, value: object) -> bool:
    """Whether ``value`` has what ``lesson`` asks for (a mapping with the keys, an object
    with the attributes), and is no plain value."""
    if lesson.want is Want.KEYS:
        return isinstance(value, Mapping) and all(key in value for key in lesson.names)
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return False
    return all(hasattr(value, name.removesuffix("()")) for name in lesson.names)


def _defined_as(cls: type) -> str:
    """The class's name where it is defined, as producers are named."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _of_class(cls: type) -> Callable[[object], bool]:
    return lambda value: type(value) is cls


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
