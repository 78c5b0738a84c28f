"""Captured calls replayed as ordinary scenarios: the entry point called anew with unpickled
arguments (sized variants stretch the longest list or string to ``n``), or — for arguments that
cannot be copied — the docstring example that produced them, measuring only that entry point.
"""

from __future__ import annotations

import base64
import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from apiprof.engine.discovery.discover import measurable, resolve_object
from apiprof.engine.scenarios import temppaths
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.consume import CONSUME_LIMIT, UNSIZED_CONSUME_LIMIT
from apiprof.engine.scenarios.doctests import docstring_scenarios
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.model.records import EntryKind, EntryPoint, ScenarioSource


def replay_call(
    qualname: str, payload: str, n: int | None = None
) -> tuple[Callable[..., object], tuple[Any, ...], dict[str, Any]]:
    """``(target, args, kwargs)`` of a captured call; with ``n``, its largest list or string
    argument repeated or cut to length ``n``."""
    args, kwargs = temppaths.loads(base64.b64decode(payload))
    obj = resolve_object(qualname)
    target: Callable[..., object]
    owner_name, _, member = qualname.rpartition(".")
    owner = _quiet_resolve(owner_name)
    static = inspect.getattr_static(owner, member, None) if inspect.isclass(owner) else None
    if isinstance(static, property) and static.fget is not None:
        target = static.fget
    elif static is not None and not isinstance(static, (classmethod, staticmethod)):
        target = _callable(measurable(static))
    else:
        target = _callable(obj)
    if n is not None:
        args, kwargs = resized(args, kwargs, n)
    return target, args, kwargs


def _callable(obj: object) -> Callable[..., object]:
    if not callable(obj):
        raise TypeError(f"{obj!r} is not callable")
    return obj


def _quiet_resolve(name: str) -> object:
    try:
        return resolve_object(name) if "." in name else None
    except Exception:
        return None


def sized_index(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int | str, int] | None:
    """Which argument (position or keyword) is the longest list, tuple or string, and its length."""
    best: tuple[int | str, int] | None = None
    keyed: list[tuple[int | str, Any]] = [*enumerate(args), *kwargs.items()]
    for key, value in keyed:
        sized = isinstance(value, (list, tuple, str, bytes)) and len(value) > 0
        sized = sized and not names_a_path(value)
        if sized and (best is None or len(value) > best[1]):
            best = (key, len(value))
    return best


def names_a_path(value: object) -> bool:
    """Whether a text names a file or folder — one that exists, or a file to be made in a folder
    that does (a captured temporary path rebuilt for the replay, an output path): cut or
    stretched to a size, it would name some other place, outside the sandbox as likely as not
    (polib's ``POFile.save`` cut to ``/tmp/apipr`` was refused, and so read "blocked")."""
    if isinstance(value, bytes):
        value = os.fsdecode(value) if len(value) <= temppaths.MAX_PATH else ""
    if not isinstance(value, str) or len(value) > temppaths.MAX_PATH or "\0" in value:
        return False
    if os.path.isabs(value):
        return os.path.lexists(value) or os.path.isdir(os.path.dirname(value))
    return os.sep in value and os.path.lexists(value)


def resized(
    args: tuple[Any, ...], kwargs: dict[str, Any], n: int
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments with the longest sequence argument repeated (or cut) to length ``n``."""
    found = sized_index(args, kwargs)
    if found is None:
        return args, kwargs
    key, length = found
    value = args[key] if isinstance(key, int) else kwargs[key]
    grown = (value * (n // length + 1))[:n]
    if isinstance(key, int):
        return (*args[:key], grown, *args[key + 1 :]), kwargs
    return args, {**kwargs, key: grown}


def captured_spec(call: CapturedCall, index: int, sizes: Sequence[int] = ()) -> ScenarioSpec:
    """The scenario replaying a captured call: with ``sizes``, its longest list or string
    argument resized to each size (see :func:`resized`), else exactly as captured."""
    sized = bool(sizes)
    size = "n" if sized else "None"
    return ScenarioSpec(
        id=f"captured:{call.qualname}#{index}",
        qualname=call.qualname,
        source=ScenarioSource.CAPTURED,
        description=f"arguments captured from {call.origin}: {call.shown}"
        + (", longest argument resized to n" if sized else ""),
        setup=(
            "from apiprof.engine.scenarios.replayed import replay_call\n"
            "from apiprof.engine.scenarios.consume import drain_lazy\n"
            f"target, args, kwargs = replay_call({call.qualname!r}, {call.payload!r}, {size})\n"
        ),
        # a generator's work (and its first call) happens while it is iterated
        call=f"drain_lazy(target(*args, **kwargs), {CONSUME_LIMIT if sized else UNSIZED_CONSUME_LIMIT})",
        size_axis="n" if sized else "",
        sizes=tuple(sizes) if sized else (),
        inputs=f"{call.qualname}{call.shown}",
    )


def can_resize(call: CapturedCall) -> bool:
    """Whether a captured call has a list or string argument a size axis could stretch."""
    args, kwargs = temppaths.loads(base64.b64decode(call.payload))
    return sized_index(args, kwargs) is not None


def capture_problems(calls: Sequence[CapturedCall]) -> str:
    """Why captured calls of an entry point cannot be replayed, for the coverage report."""
    broken = [call for call in calls if call.problem]
    if not broken:
        return ""
    call = broken[0]
    return (
        f"{call.origin} calls it with {call.shown}, but those arguments cannot be copied "
        f"({call.problem}); write a scenario that builds them in its setup"
    )


def through_example_specs(calls: Sequence[CapturedCall], limit: int = 1) -> list[ScenarioSpec]:
    """Scenarios that run the docstring examples which called an entry point and measure that
    entry point's calls inside them: for arguments that cannot be copied (a parser, a frame of
    a code generator) or whose copies do not replay, the example that produced them does.
    Suite origins need none: the ``--tests`` scenario already measures whatever the suite calls."""
    specs: list[ScenarioSpec] = []
    for origin in dict.fromkeys(call.origin for call in calls):
        spec = _example_spec(origin)
        if spec is None:
            continue
        qualname = calls[0].qualname
        specs.append(
            replace(
                spec,
                id=f"through:{qualname}#{origin}",
                qualname=qualname,
                source=ScenarioSource.CAPTURED,
                description=f"its calls inside {origin} (the example of {spec.qualname}), "
                "which builds arguments that cannot be copied",
                targets=(qualname,),
                inputs=next((c.shown for c in calls if c.origin == origin), ""),
            )
        )
        if len(specs) >= limit:
            break
    return specs


def _example_spec(origin: str) -> ScenarioSpec | None:
    """The docstring scenario ``doc:QUALNAME#K`` rebuilt from its entry point, or None."""
    if not origin.startswith("doc:"):
        return None
    qualname = origin.removeprefix("doc:").rpartition("#")[0]
    try:
        obj = resolve_object(qualname)
    except Exception:
        return None
    module = getattr(obj.fget if isinstance(obj, property) else obj, "__module__", None)
    entry = EntryPoint(qualname, qualname.split(".")[0], module or "", EntryKind.FUNCTION)
    found, _ = docstring_scenarios(entry, obj, {})
    return next((spec for spec in found if spec.id == origin), None)
