"""What a synthesised call is made on: the function itself, or for a method, property or
cached property an instance of its class built for the purpose."""

from __future__ import annotations

import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from apiprof.engine.discovery.discover import is_compiled_function, resolve_object
from apiprof.engine.scenarios.building import UNSIZED_LENGTH, BuildContext, CannotSynthesize
from apiprof.engine.scenarios.instances import construct
from apiprof.engine.scenarios.preparers import prepared_receiver
from apiprof.engine.scenarios.results import taken_for, taken_remake, taken_value
from apiprof.engine.scenarios.sizedreceivers import sized_receiver
from apiprof.engine.scenarios.wants import Want
from apiprof.engine.scenarios.warmup import asked_renewal, warm_receiver

RECEIVER = "self"
"""The name pins use for the instance a method is called on (no parameter of its own is)."""


def resolve_target(
    qualname: str, context: BuildContext
) -> tuple[Callable[..., object], tuple[Any, ...]]:
    """The callable to call and leading arguments (the instance, for a property getter)."""
    obj = resolve_object(qualname)
    owner_name, _, member = qualname.rpartition(".")
    owner = resolve_object(owner_name) if owner_name and "." in owner_name else None
    if not inspect.isclass(owner):
        if not callable(obj):
            raise CannotSynthesize(f"{qualname} is not callable")
        if inspect.isclass(obj) and issubclass(obj, enum.Enum) and len(obj):
            members = list(obj)  # looking a member up by value is what calling an enum does
            return obj, (context.pick(members).value,)
        return obj, ()
    context.owner = owner
    context.member = member
    raw = inspect.getattr_static(owner, member)
    if isinstance(raw, (staticmethod, classmethod, types.ClassMethodDescriptorType)):
        return getattr(owner, member), ()
    with context.building_parameter(RECEIVER):  # pinned like a parameter: its own variant
        taken = taken_for(context, RECEIVER)
        if taken is not None:  # an instance a working call of the package made
            instance = context.receiver = taken_value(taken, context)
            context.warmup = asked_renewal(instance, owner, context, remake=taken_remake(taken))
        elif (length := _wanted_length(context)) is not None:  # a call said how long
            instance = context.receiver = sized_receiver(owner, length, context)
            context.warmup = asked_renewal(instance, owner, context)
        else:
            instance = context.receiver = receiver(owner, context)
            context.warmup = (
                prepared_receiver(instance, owner, member, context)
                or warm_receiver(instance, owner, member, context)
                or asked_renewal(instance, owner, context)
            )
    if isinstance(raw, property) and raw.fget is not None:
        return raw.fget, (instance,)
    if isinstance(raw, functools.cached_property) or type(raw).__name__ == "cached_property":
        return raw.func, (instance,)
    if is_compiled_function(raw):  # a Cython method: call the function itself, as measured
        return typing.cast(Callable[..., object], raw), (instance,)
    if inspect.isfunction(raw) and inspect.getattr_static(type(instance), member, None) is not raw:
        return raw, (instance,)  # a subclass overrides it: call the base class's own function
    return getattr(instance, member), ()


def receiver(owner: type, context: BuildContext) -> object:
    """The instance a method is called on, built at the fixed small size: the method's own
    arguments carry the size axis (a thousand-element receiver would make every method of
    the class slow to measure, and its size is not what the method is called with)."""
    member = enum_member(owner, context)
    if member is not None:  # an enum's method is called on one of its members
        return member
    size, sized = context.n, context.sized
    context.n = UNSIZED_LENGTH
    try:
        return construct(owner, context, optional=True)
    finally:
        context.n, context.sized = size, sized


def _wanted_length(context: BuildContext) -> int | None:
    """The receiver's length a rejected call asked for (:mod:`.lengths`), if one did."""
    lesson = next((lesson for lesson in context.lessons if lesson.want is Want.LENGTH), None)
    return int(lesson.names[0]) if lesson is not None and lesson.names else None


def enum_member(owner: type, context: BuildContext) -> object | None:
    """One of the members of an enum class (the variant picks which), else None: calling the
    class looks a member up by its value, which made-up arguments never are."""
    if issubclass(owner, enum.Enum) and len(owner):
        return context.pick(list(owner))
    return None
