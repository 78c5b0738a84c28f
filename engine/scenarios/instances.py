"""Instances of the package's classes: the class called with synthesised arguments, else one of
its concrete subclasses or a factory of the package that returns one (:mod:`.factories`)."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from apiprof.engine.discovery.discover import describe_exception
from apiprof.engine.scenarios import observed, parameters, warmup  # a cycle: see values.py
from apiprof.engine.scenarios.building import (
    MAX_DEPTH,
    BuildContext,
    CannotSynthesize,
    name_of,
    rotated,
)
from apiprof.engine.scenarios.classfactories import class_factories, example_makers, subclass_made
from apiprof.engine.scenarios.docsubclasses import documented_for
from apiprof.engine.scenarios.doctypes import docstring_types
from apiprof.engine.scenarios.examples import example_calls
from apiprof.engine.scenarios.factories import (
    concrete_subclasses,
    factories_for,
    named_factories,
)
from apiprof.engine.scenarios.hooks import missing_hooks
from apiprof.engine.scenarios.stubs import stub_signature
from apiprof.engine.scenarios.unimplemented import implementing_subclasses, left_to_subclasses
from apiprof.model.records import ScenarioSource


def construct(cls: type, context: BuildContext, *, optional: bool = False) -> object:
    """An instance of ``cls``: the class called with synthesised arguments, else (with the
    ``subclasses`` source) one of the package's concrete subclasses or factories. ``optional``
    (a receiver): later variants also fill optional parameters and ``*args`` (see
    :func:`.parameters.arguments_for`)."""
    context.building.append(cls)
    try:
        return _construct(cls, context, optional)
    finally:
        context.building.pop()


def under_construction(element: Any, context: BuildContext) -> bool:
    """Whether ``element`` (a class or a forward reference to one) is being built further up:
    a list of them inside one of them would nest without end."""
    if isinstance(element, typing.ForwardRef):
        element = element.__forward_arg__
    if isinstance(element, str):
        return any(cls.__name__ == element for cls in context.building)
    return inspect.isclass(element) and element in context.building


FACTORY_TURN = 3
"""Every third variant from the third (2, 5) builds the receiver with the class's own factory
first: a class that can be called plainly may still need its factory to be usable (a lexer
whose ``get_default_instance()`` loads its rules, a client whose ``from_config()`` sets it up,
a map whose constructor takes its buckets and whose module's ``pmap()`` fills them)."""


def _construct(cls: type, context: BuildContext, optional: bool) -> object:
    problems: list[str] = []
    refused: CannotSynthesize | None = None
    if cls is context.owner and "subclasses" in context.sources:
        own = [f for f in factories_for(cls, declared_returns) if getattr(f, "__self__", 0) is cls]
        own += [f for f in named_factories(cls) if f not in own]  # `pmap()` for a `PMap`
        if own:
            context.choices = max(context.choices, FACTORY_TURN)
            context.note_flavours(FACTORY_TURN)
        if own and context.current_variant() % FACTORY_TURN == FACTORY_TURN - 1:
            made = _first_instance(cls, own, context)
            if made is not None:
                return made
    if cls is context.owner and "examples" in context.sources:
        made = _documented_subclass(cls, context)
        if made is not None:
            return made
    hooks = missing_hooks(cls, context.member) if cls is context.owner else ()
    left = left_to_subclasses(cls) if cls is not context.owner else ()
    if inspect.isabstract(cls):
        problems.append(f"{cls.__qualname__} is abstract")
    elif left and "subclasses" in context.sources:  # its methods say `raise NotImplementedError`
        problems.append(f"{cls.__qualname__} leaves {left[0]}() to its subclasses")
    elif hooks and "subclasses" in context.sources:  # abstract for this method in all but name
        problems.append(
            f"{cls.__qualname__}.{context.member} calls self.{hooks[0]}(), which only "
            "subclasses define"
        )
    else:
        try:
            return _called(cls, context, optional)
        except CannotSynthesize as error:
            problems.append(str(error))
            if cls is context.owner:  # the repair may learn from the receiver's constructor
                refused = error
        if "examples" in context.sources:
            made = _from_examples(cls, context)
            if made is not None:
                return made
    if "subclasses" in context.sources and context.depth <= MAX_DEPTH:
        member = context.member if cls is context.owner else ""
        overriding = context.member if cls is not context.owner else ""
        wanted = left or hooks  # what the subclass must implement: those first
        subclasses = implementing_subclasses(cls, wanted) if wanted else []
        alternatives: list[Callable[..., Any]] = [
            *subclasses,
            *(sub for sub in concrete_subclasses(cls, member, overriding) if sub not in subclasses),
            *factories_for(cls, declared_returns),
        ]
        instance = _first_instance(cls, rotated(alternatives, context.current_variant()), context)
        if instance is None and not subclasses:
            instance = _from_class_factories(cls, context)
        if instance is not None:
            return instance
        if alternatives:
            problems.append(
                f"none of its {len(alternatives)} concrete subclasses and factories "
                f"({', '.join(name_of(a) for a in alternatives[:4])}) could be built either"
            )
        else:
            problems.append("the package has no concrete subclass or factory for it")
    elif inspect.isabstract(cls):
        problems.append("a scenario file must choose a subclass")
    if "observed" in context.sources:  # what an entry point of the package returns
        try:
            with context.attempt():
                return observed.observed_value(cls, context, f"<{cls.__qualname__} instance>")
        except CannotSynthesize as error:
            problems.append(str(error).partition(": ")[2])
    raise CannotSynthesize("; ".join(problems)) from refused


NESTED_TURNS = 2
"""How many more times a nested class is called, each time with its parameters' next guesses."""


def _called(cls: type, context: BuildContext, optional: bool) -> object:
    """``cls`` called with synthesised arguments; a class built for another's argument is
    called again with the next guesses where its parameters' guesses disagree (a buffer's
    items guessed as callables from one use, when the package's own buffer class will do):
    the receiver is not, its variants do that."""
    outer, context.nested_choices = context.nested_choices, 1
    try:
        with context.attempt():
            return call_with_arguments(cls, context, optional=optional)
    except CannotSynthesize as error:
        if cls is context.owner or context.nested_turn or context.nested_choices < 2:
            raise
        first, turns = error, min(NESTED_TURNS, context.nested_choices - 1)
    finally:
        context.nested_choices = max(outer, context.nested_choices)
    for turn in range(1, turns + 1):
        context.nested_turn = turn
        try:
            with context.attempt():
                return call_with_arguments(cls, context, optional=optional)
        except CannotSynthesize:
            continue
        finally:
            context.nested_turn = 0
    raise first  # what the first guesses met says the most


def _first_instance(
    cls: type, alternatives: list[Callable[..., Any]], context: BuildContext
) -> object | None:
    """The first instance of ``cls`` one of ``alternatives`` builds (credited), or None."""
    for alternative in alternatives:
        try:
            with context.attempt():
                instance = call_with_arguments(alternative, context)
        except CannotSynthesize:
            continue
        if is_instance(instance, cls):
            context.credit(f"<{cls.__qualname__} instance>", ScenarioSource.FACTORIES)
            return instance
    return None


def _from_class_factories(cls: type, context: BuildContext) -> object | None:
    """An instance of a subclass of ``cls`` that one of the package's functions named after it
    returns (:mod:`.classfactories`: ``getTreeBuilder('etree')``, the package's own literal
    calls of it first), or None."""
    for factory in class_factories(cls):
        makers: list[Callable[[BuildContext], object]] = [
            *example_makers(factory),
            functools.partial(call_with_arguments, factory),
        ]
        for make in makers:
            try:
                with context.attempt():
                    subclass = subclass_made(make(context), cls)
                    if subclass is None:
                        raise CannotSynthesize(f"{name_of(factory)}() made no subclass")
                    instance = call_with_arguments(subclass, context)
            except CannotSynthesize:
                continue
            note = f"the subclass {name_of(factory)}() returns"
            return credited(instance, cls, context, ScenarioSource.FACTORIES, note)
    return None


DOCUMENTED_TURN = 2
"""Every second variant (1, 3...) builds the receiver of a method that reads what a schema
leaves to its users from the class itself (:func:`_documented_subclass`)."""


def _documented_subclass(cls: type, context: BuildContext) -> object | None:
    """For a method that reads a class attribute ``cls`` leaves empty (or whose receiver is
    fed or prepared through a method that does), an instance of one of
    the subclasses that set it as the package's documentation shows (:mod:`.docsubclasses`;
    the variant chooses which), except on every second variant, which keeps the class itself.
    None then, and when none builds."""
    from apiprof.engine.scenarios import preparers  # a cycle: preparers → warmup → here

    readers = [  # what feeds or prepares the receiver may read it instead
        context.member,
        warmup.feeder_of(cls, context.member),
        *(preparers.setters_of(cls, context.member) if preparers.SOURCE in context.sources else ()),
    ]
    documented = next(
        (found for name in readers if name and (found := documented_for(cls, name))), ()
    )
    if not documented:
        return None
    context.choices = max(context.choices, DOCUMENTED_TURN)
    context.note_flavours(DOCUMENTED_TURN)
    turn = context.current_variant()
    if turn % DOCUMENTED_TURN == 1:
        return None
    for subclass in rotated(list(documented), turn // DOCUMENTED_TURN):
        try:
            with context.attempt():
                instance = call_with_arguments(subclass, context, optional=False)
        except CannotSynthesize:
            continue
        note = f"its subclass {subclass.__name__} as the documentation writes it"
        return credited(instance, cls, context, ScenarioSource.EXAMPLES, note)
    return None


def credited(
    instance: object, cls: type, context: BuildContext, source: ScenarioSource, note: str
) -> object:
    """``instance``, with the source that made it and how credited to ``cls``'s slot."""
    slot = f"<{cls.__qualname__} instance>"
    context.credit(slot, source)
    context.notes[slot] = note
    return instance


def _from_examples(cls: type, context: BuildContext) -> object | None:
    """An instance from one of the package's own literal calls of ``cls`` (``Marker('"Foo"
    in extras')``), from the current variant's on; None when none runs."""
    calls = example_calls(cls)
    for call in rotated(calls, context.current_variant()):
        args, kwargs = call.arguments()
        try:
            made = cls(*args, **kwargs)
        except Exception:  # an example of the error it raises, or of another class's call
            continue
        if type(made) is cls:
            context.made[id(made)] = (made, args, kwargs)
        context.credit(f"<{cls.__qualname__} instance>", ScenarioSource.EXAMPLES)
        return made
    return None


def is_instance(value: object, cls: type) -> bool:
    try:
        return isinstance(value, cls)
    except TypeError:  # a protocol that is not runtime-checkable: trust the factory
        return True


def call_with_arguments(
    factory: Callable[..., Any],
    context: BuildContext,
    *,
    optional: bool = False,
    given: list[object] | None = None,
) -> object:
    """``factory`` called with synthesised arguments (added to ``given`` when one is passed:
    what a writer wrote into is among them)."""
    context.depth += 1
    try:
        args, kwargs = parameters.arguments_for(factory, context, optional=optional)
    finally:
        context.depth -= 1
    if given is not None:
        given += [*args, *kwargs.values()]
    try:
        made = factory(*args, **kwargs)
    except (Exception, SystemExit) as error:  # a factory that exits (a command's main) made none
        raise CannotSynthesize(
            f"constructing {name_of(factory)} with synthesised arguments raised "
            f"{describe_exception(error)}"
        ) from error
    if inspect.isclass(factory) and type(made) is factory:
        context.made[id(made)] = (made, tuple(args), dict(kwargs))
    return made


def declared_returns(function: object) -> list[Any]:
    """Return types a callable declares: annotation, stub, docstring."""
    declared: list[Any] = []
    try:
        hint = typing.get_type_hints(function).get("return")
    except Exception:
        hint = None
    if hint is not None:
        declared.append(hint)
    stub = stub_signature(function)
    if stub is not None:
        declared += stub.returns
    declared += docstring_types(function).returns
    return declared
