"""The best partial arguments for an entry point argument synthesis could not call, for the
scaffold ``apiprof scenarios init`` writes: what was found for each parameter, as code, and what
is still missing."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apiprof.engine.discovery.discover import describe_exception, resolve_object
from apiprof.engine.scenarios.building import (
    SOURCES,
    UNSIZED_LENGTH,
    BuildContext,
    CannotSynthesize,
)
from apiprof.engine.scenarios.instances import construct
from apiprof.engine.scenarios.parameters import build_parameter
from apiprof.engine.scenarios.signatures import signature_of, type_hints
from apiprof.model.records import ScenarioSource


@dataclass(frozen=True)
class PartialArgument:
    """What argument synthesis managed for one parameter of an entry point it could not call:
    a value as code (``"'lorem'"``, ``"[1, 2]"``) or ``"..."``, and a note saying what it is or
    what is missing."""

    name: str
    code: str  # Python source for the value, "..." when none could be made
    note: str
    keyword: bool = False  # keyword-only


def partial_arguments(
    qualname: str, sources: tuple[str, ...] = SOURCES, n: int = UNSIZED_LENGTH
) -> list[PartialArgument]:
    """The best value found for each required parameter of ``qualname`` (the receiver of a
    method first, as ``obj``), whether or not the whole call could be made."""
    context = BuildContext(qualname, n, 0, 0, sources=frozenset(sources))
    found: list[PartialArgument] = []
    try:
        target = resolve_object(qualname)
    except Exception as error:
        return [PartialArgument("obj", "...", f"cannot import it: {describe_exception(error)}")]
    owner_name, _, member = qualname.rpartition(".")
    owner = _quiet(lambda: resolve_object(owner_name)) if "." in owner_name else None
    if inspect.isclass(owner):
        raw = inspect.getattr_static(owner, member, None)
        if not isinstance(raw, (staticmethod, classmethod)):
            context.owner, context.member = owner, member
            try:
                instance = construct(owner, context)
                found.append(PartialArgument("obj", "...", f"built as {_repr(instance)}"))
            except CannotSynthesize as error:
                found.append(
                    PartialArgument("obj", "...", f"an instance of {owner.__qualname__}: {error}")
                )
            target = getattr(owner, member, target)
            if isinstance(raw, property):
                return found
    if not callable(target):
        return found
    signature = signature_of(target, context.sources)
    if signature is None:
        return found
    hints = type_hints(target)
    parameters = list(signature.parameters.values())
    skip = 1 if found and parameters and parameters[0].name in ("self", "cls") else 0
    for parameter in parameters[skip:]:
        if parameter.default is not parameter.empty or parameter.kind in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
        ):
            continue
        keyword = parameter.kind is parameter.KEYWORD_ONLY
        try:
            value = build_parameter(target, parameter, signature, hints, context)
        except CannotSynthesize as error:
            found.append(PartialArgument(parameter.name, "...", str(error), keyword))
            continue
        source = context.used.get(parameter.name, ScenarioSource.SYNTHESIZED)
        code = _literal(value)
        note = f"{type(value).__name__} from {source}" + (
            "" if code != "..." else f": {_repr(value)}"
        )
        found.append(PartialArgument(parameter.name, code, note, keyword))
    return found


def _quiet(make: Callable[[], Any]) -> Any:
    try:
        return make()
    except Exception:
        return None


def _repr(value: object, limit: int = 80) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _literal(value: object) -> str:
    """Python source that rebuilds ``value`` when its repr is a plain literal, else "..."."""
    import ast

    try:
        text = repr(value)
        if len(text) <= 200 and ast.literal_eval(text) == value:
            return text
    except Exception:
        pass
    return "..."
