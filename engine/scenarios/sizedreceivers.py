"""A receiver built as long as a rejected call said it must be (:mod:`.lengths`).

By the class's own alternative constructor that takes just a length (``from_zeros(16)``),
else by its constructor at the size that makes an instance that long — the unit of that size
read from one built at the length itself (bytes of which each counts as 8 bits: 2 bytes for
16).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.instances import construct, credited
from apiprof.engine.scenarios.lengths import length_of
from apiprof.model.records import ScenarioSource


def sized_receiver(owner: type, length: int, context: BuildContext) -> object:
    """An instance of ``owner`` exactly ``length`` long (see the module's docstring); raises
    CannotSynthesize when neither way makes one."""
    for maker in _length_makers(owner):
        try:
            made = maker(length)
        except Exception:
            continue
        if isinstance(made, owner) and length_of(made) == length:
            note = f"{maker.__name__}({length}), {length} long as a call asked"
            return credited(made, owner, context, ScenarioSource.REPAIRED, note)
    made = _at_size(owner, length, context)
    if made is not None:
        return made
    raise CannotSynthesize(f"could not build a {owner.__qualname__} {length} long")


def _at_size(owner: type, length: int, context: BuildContext) -> object | None:
    """The class built by its constructor at the size ``length``, or at the size its unit
    says (an instance ``c`` times as long as its size wants ``length / c``), when that makes
    one ``length`` long."""
    size = context.n
    try:
        n = length
        for _ in range(2):
            context.n = n
            try:
                made = construct(owner, context, optional=False)
            except CannotSynthesize:
                return None
            had = length_of(made)
            if had == length:
                note = f"built at size {n}, {length} long as a call asked"
                return credited(made, owner, context, ScenarioSource.REPAIRED, note)
            if not had:
                return None
            n, rest = divmod(length * length, had)
            if rest or not n:
                return None
    finally:
        context.n = size
    return None


def _length_makers(owner: type) -> list[Callable[[int], Any]]:
    """The class's own class methods (its bases' too) whose one required parameter is a number
    (its annotation says ``int``, or it is unannotated and named like a length): what each
    makes is checked, so what they declare to return does not matter."""
    inherited: dict[str, object] = {}
    for klass in reversed(owner.__mro__):
        inherited.update(vars(klass))
    makers = []
    for name, raw in sorted(inherited.items()):
        if name.startswith("_") or not isinstance(raw, classmethod):
            continue
        maker = getattr(owner, name)
        try:
            parameters = list(inspect.signature(maker).parameters.values())
        except (TypeError, ValueError):
            continue
        required = [
            p
            for p in parameters
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        if (
            len(required) == 1
            and required[0].kind < required[0].KEYWORD_ONLY
            and (_a_length(required[0]))
        ):
            makers.append(maker)
    return makers


LENGTH_NAMES = ("length", "len", "n", "size", "count", "width", "nbits", "nbytes", "bits")


def _a_length(parameter: inspect.Parameter) -> bool:
    annotation = parameter.annotation
    if annotation in (int, "int"):
        return True
    return annotation is parameter.empty and parameter.name.lower() in LENGTH_NAMES
