"""Argument synthesis: call an entry point with arguments built from its signature, at size n.

Annotations drive size-aware builders for common types (``str`` of length n, ``list[T]`` of n
items, ``dict[K, V]`` of n entries ...), falling back to hypothesis' ``from_type`` drawn
deterministically. Unannotated required parameters are guessed from well-worn names (``text``,
``data``, ``n``, ``func``) only; anything else is reported, never invented. The same
``(qualname, n, seed, variant)`` always gives the same arguments, so a scenario is plain code:
``synthesize_call(...)`` in setup, ``target(*args, **kwargs)`` as the measured call.

Some types have several *flavours* (a ``str`` may be prose, a JSON array or digits): ``variant``
picks one, so a caller can retry with another flavour when a function rejects the first
(:mod:`apiprof.engine.scenarios.synthesized` does that, turning the arguments into scenario specs).
"""

from __future__ import annotations

import asyncio
import collections
import collections.abc as abc
import datetime
import decimal
import enum
import fractions
import functools
import inspect
import io
import itertools
import os
import pathlib
import random
import re
import socket
import sys
import tempfile
import types
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from apiprof.engine.discovery.discover import (
    describe_exception,
    is_compiled_function,
    resolve_object,
)
from apiprof.engine.scenarios.doctypes import docstring_types
from apiprof.engine.scenarios.factories import (
    Produced,
    concrete_subclasses,
    factories_for,
    inverse_producers,
)
from apiprof.engine.scenarios.heuristics import (
    CharMarker,
    SameClassMarker,
    SocketMarker,
    TracebackMarker,
    Usage,
    guess_from_name,
    infer_from_usage,
    sibling_default,
    usage_of,
)
from apiprof.engine.scenarios.stubs import stub_signature
from apiprof.engine.scenarios.typetext import (
    STDLIB_NAMES,
    BinaryFileMarker,
    DirectoryMarker,
    PathMarker,
    TextFileMarker,
    evaluate_type,
    module_namespace,
)
from apiprof.model.records import ScenarioSource

UNSIZED_LENGTH = 10
"""Collection length used when a scenario has no size axis."""

CONSUME_LIMIT = "10 * n + 100"
"""At most this many items are drawn from an iterator a synthesised call returns (an expression
in the size ``n``): all of a linear-size result, while combinatorial ones (permutations,
powersets) stay polynomial instead of running for hours."""
UNSIZED_CONSUME_LIMIT = 1000

MAX_DEPTH = 5
"""How deep building may nest: each object built for a parameter counts twice (the parameter and
the call that builds it), so 5 reaches an argument of an argument of an argument (a code
generator's frame, its evaluation context, that context's environment). Plain values at the
bottom do not count."""

_LEAVES = (int, float, complex, str, bytes, bool, type(None))

SOURCES = ("stubs", "docstring_types", "subclasses", "heuristics")
"""Switchable sources of argument types beyond the annotations (``--no-stubs`` etc.)."""

_RANK = [
    ScenarioSource.SYNTHESIZED,
    ScenarioSource.STUBS,
    ScenarioSource.DOCSTRING_TYPES,
    ScenarioSource.FACTORIES,
    ScenarioSource.HEURISTICS,
]
"""From most to least trustworthy: a scenario is credited to the least trustworthy source any
of its arguments came from."""


class CannotSynthesize(Exception):
    """No arguments can be built for this entry point; ``str(error)`` says which parameter and why."""


@dataclass
class _Context:
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

    def inner(self, variant: int) -> _Context:
        """A context for one member of a union: its own variant, the same everything else."""
        return _Context(
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
        )

    def credit(self, parameter: str, source: ScenarioSource) -> None:
        self.used.setdefault(parameter, source)

    def rng(self, parameter: str) -> random.Random:
        return random.Random(f"{self.seed}/{self.qualname}/{parameter}")

    def pick(self, options: list[Any]) -> Any:
        self.choices = max(self.choices, len(options))
        return options[self.variant % len(options)]


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

    @property
    def source(self) -> ScenarioSource:
        """The least trustworthy source any argument came from (annotations: SYNTHESIZED)."""
        return max(self.used.values(), key=_RANK.index, default=ScenarioSource.SYNTHESIZED)

    def describe_sources(self) -> str:
        """``"text: stubs, path: heuristics"`` — where each argument's type came from."""
        return ", ".join(f"{name}: {source}" for name, source in self.used.items())


def synthesize_call(
    qualname: str,
    n: int | None,
    seed: int = 0,
    variant: int = 0,
    sources: tuple[str, ...] = SOURCES,
) -> tuple[Callable[..., object], tuple[Any, ...], dict[str, Any]]:
    """``(target, args, kwargs)`` for one call of ``qualname``; methods get a fresh instance."""
    result = synthesize(qualname, n, seed, variant, sources)
    return result.target, result.args, result.kwargs


def synthesize_arguments(
    qualname: str,
    n: int | None,
    seed: int = 0,
    variant: int = 0,
    sources: tuple[str, ...] = SOURCES,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Just the ``(args, kwargs)`` of ``synthesize_call``."""
    result = synthesize(qualname, n, seed, variant, sources)
    return result.args, result.kwargs


def synthesize(
    qualname: str,
    n: int | None,
    seed: int = 0,
    variant: int = 0,
    sources: tuple[str, ...] = SOURCES,
) -> Synthesis:
    """Build the call; raises CannotSynthesize with the reason when it cannot."""
    context = _Context(
        qualname, UNSIZED_LENGTH if n is None else n, seed, variant, sources=frozenset(sources)
    )
    target, prefix = _resolve_target(qualname, context)
    args, kwargs = _arguments_for(target, context, skip=len(prefix))
    return Synthesis(
        target,
        (*prefix, *args),
        kwargs,
        context.sized,
        context.choices,
        context.files,
        dict(context.used),
        context.heavy,
    )


def rewind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Seek in-memory file arguments back to the start, so every call reads the same input."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, io.IOBase):
            value.seek(0)


def consume(result: object, limit: int = UNSIZED_CONSUME_LIMIT) -> object:
    """Drain an iterator result (at most ``limit`` items) so a lazy API's real work is measured;
    run a coroutine to its end, and drain an async iterator the same way."""
    if isinstance(result, abc.Iterator):
        collections.deque(itertools.islice(result, limit), maxlen=0)
    elif isinstance(result, abc.Awaitable):
        return _event_loop().run_until_complete(_awaited(result))
    elif isinstance(result, abc.AsyncIterator):
        _event_loop().run_until_complete(_drained(result, limit))
    return result


async def _awaited(result: abc.Awaitable[object]) -> object:
    return await result


async def _drained(result: abc.AsyncIterator[object], limit: int) -> None:
    for _ in range(limit):
        try:
            await anext(result)
        except StopAsyncIteration:
            return


_LOOP: list[asyncio.AbstractEventLoop] = []


def _event_loop() -> asyncio.AbstractEventLoop:
    """One event loop per worker for async APIs: a new loop per call would cost more than most
    of the calls measured."""
    if not _LOOP or _LOOP[0].is_closed():
        _LOOP[:] = [asyncio.new_event_loop()]
    return _LOOP[0]


def is_lazy(result: object) -> bool:
    """True for iterators a call returns (whose cost is paid while iterating), and for
    coroutines and async iterators (whose work starts only when awaited)."""
    if isinstance(result, (abc.Awaitable, abc.AsyncIterator)):
        return True
    return isinstance(result, abc.Iterator) and not isinstance(result, (str, bytes, io.IOBase))


def _resolve_target(
    qualname: str, context: _Context
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
    instance = _receiver(owner, context)
    if isinstance(raw, property) and raw.fget is not None:
        return raw.fget, (instance,)
    if isinstance(raw, functools.cached_property) or type(raw).__name__ == "cached_property":
        return raw.func, (instance,)
    if is_compiled_function(raw):  # a Cython method: call the function itself, as measured
        return typing.cast(Callable[..., object], raw), (instance,)
    if inspect.isfunction(raw) and inspect.getattr_static(type(instance), member, None) is not raw:
        return raw, (instance,)  # a subclass overrides it: call the base class's own function
    return getattr(instance, member), ()


def _receiver(owner: type, context: _Context) -> object:
    """The instance a method is called on, built at the fixed small size: the method's own
    arguments carry the size axis (a thousand-element receiver would make every method of
    the class slow to measure, and its size is not what the method is called with)."""
    size, sized = context.n, context.sized
    context.n = UNSIZED_LENGTH
    try:
        return _construct(owner, context)
    finally:
        context.n, context.sized = size, sized


def _construct(cls: type, context: _Context) -> object:
    """An instance of ``cls``: the class called with synthesised arguments, else (with the
    ``subclasses`` source) one of the package's concrete subclasses or factories."""
    problems: list[str] = []
    if inspect.isabstract(cls):
        problems.append(f"{cls.__qualname__} is abstract")
    else:
        try:
            return _call_with_arguments(cls, context)
        except CannotSynthesize as error:
            problems.append(str(error))
    if "subclasses" in context.sources and context.depth <= MAX_DEPTH:
        member = context.member if cls is context.owner else ""
        alternatives: list[Callable[..., Any]] = [
            *concrete_subclasses(cls, member),
            *factories_for(cls, declared_returns),
        ]
        for alternative in _rotated(alternatives, context.variant):
            try:
                instance = _call_with_arguments(alternative, context)
            except CannotSynthesize:
                continue
            if _is_instance(instance, cls):
                context.credit(f"<{cls.__qualname__} instance>", ScenarioSource.FACTORIES)
                return instance
        if alternatives:
            problems.append(
                f"none of its {len(alternatives)} concrete subclasses and factories "
                f"({', '.join(_name_of(a) for a in alternatives[:4])}) could be built either"
            )
        else:
            problems.append("the package has no concrete subclass or factory for it")
    elif inspect.isabstract(cls):
        problems.append("a scenario file must choose a subclass")
    raise CannotSynthesize("; ".join(problems))


def _is_instance(value: object, cls: type) -> bool:
    try:
        return isinstance(value, cls)
    except TypeError:  # a protocol that is not runtime-checkable: trust the factory
        return True


def _rotated(items: list[Any], variant: int) -> list[Any]:
    if not items:
        return items
    shift = variant % len(items)
    return items[shift:] + items[:shift]


def _name_of(obj: object) -> str:
    return getattr(obj, "__qualname__", None) or type(obj).__name__


def _call_with_arguments(factory: Callable[..., Any], context: _Context) -> object:
    context.depth += 1
    try:
        args, kwargs = _arguments_for(factory, context)
    finally:
        context.depth -= 1
    try:
        return factory(*args, **kwargs)
    except Exception as error:
        raise CannotSynthesize(
            f"constructing {_name_of(factory)} with synthesised arguments raised "
            f"{describe_exception(error)}"
        ) from error


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


# -- parameters ------------------------------------------------------------------------------


def _arguments_for(
    target: Callable[..., object], context: _Context, *, skip: int = 0
) -> tuple[list[Any], dict[str, Any]]:
    """Arguments for the required parameters (after the first ``skip``, supplied by the caller)."""
    signature = _signature_of(target, context)
    if signature is None:
        raise CannotSynthesize(
            f"{_name_of(target)} has no inspectable signature (no __text_signature__, no "
            "signature line in its docstring, no stub); add a scenario file entry"
        )
    hints = _type_hints(target)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in list(signature.parameters.values())[skip:]:
        if parameter.kind is parameter.VAR_KEYWORD:
            continue
        if parameter.kind is parameter.VAR_POSITIONAL:
            element = _element_annotation(parameter, hints)
            if element is not None and element not in (
                Any,
                object,
            ):  # `*args: Any` is forwarded on: pass none
                args.extend(_build(element, context, f"{parameter.name}[{i}]") for i in range(2))
            continue
        if parameter.default is not parameter.empty:
            continue
        value = _build_parameter(target, parameter, signature, hints, context)
        if parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = value
        else:
            args.append(value)
    return args, kwargs


def _build_parameter(
    target: Callable[..., object],
    parameter: inspect.Parameter,
    signature: inspect.Signature,
    hints: dict[str, Any],
    context: _Context,
) -> Any:
    """A value for one required parameter: each candidate type in turn (the variant decides
    which comes first) until one builds; the source of the one used is credited."""
    candidates = parameter_candidates(target, parameter, signature, hints, context.sources)
    if not candidates:
        raise CannotSynthesize(_why_untyped(parameter, hints, context.sources))
    annotated = candidates[0][1] is ScenarioSource.SYNTHESIZED
    if not annotated:  # guesses disagree: later variants lead with the next guess
        context.choices = max(context.choices, len(candidates))
    turn = 0 if annotated or context.depth else context.variant
    problems = []
    for annotation, source in _rotated(candidates, turn):
        try:
            value = _build(annotation, context, parameter.name)
        except CannotSynthesize as error:
            problems.append(str(error))
            continue
        context.credit(parameter.name, source)
        return value
    raise CannotSynthesize(problems[0])


def parameter_candidates(
    target: Callable[..., object],
    parameter: inspect.Parameter,
    signature: inspect.Signature,
    hints: dict[str, Any],
    sources: frozenset[str] = frozenset(SOURCES),
) -> list[tuple[Any, ScenarioSource]]:
    """Candidate annotations for a parameter, most trustworthy first, each with its source:
    the annotation, the stubs, the docstring, then how it is used, named, and its siblings."""
    found: list[tuple[Any, ScenarioSource]] = []
    annotation = hints.get(parameter.name, parameter.annotation)
    annotated = annotation is not parameter.empty and not isinstance(annotation, str)
    vague = annotated and annotation in (Any, object)  # says nothing: guesses go first
    if annotated and not vague:
        found.append((annotation, ScenarioSource.SYNTHESIZED))
    plain = not annotated or vague or annotation in (str, bytes)
    if "subclasses" in sources and plain and _is_first_required(signature, parameter):
        for producer in inverse_producers(target):  # realistic encoded input comes first
            found.append((Produced(producer), ScenarioSource.FACTORIES))
    if "stubs" in sources:
        stub = stub_signature(target)
        for typed in stub.parameters.get(parameter.name, []) if stub else []:
            found.append((typed, ScenarioSource.STUBS))
    module = sys.modules.get(getattr(target, "__module__", "") or "")
    if "docstring_types" in sources:
        classes = package_classes(getattr(target, "__module__", "") or "")
        for typed in docstring_types(target, classes).parameters.get(parameter.name, []):
            found.append((typed, ScenarioSource.DOCSTRING_TYPES))
    if "heuristics" in sources and not (annotated and not vague):
        usage = usage_of(target, parameter.name)
        strong: list[Any] = []
        weak: list[Any] = []
        if usage is not None:
            classes = package_classes(getattr(target, "__module__", "") or "")
            strong, weak = infer_from_usage(usage, module, classes)
        guess = guess_from_name(parameter.name)
        for typed in [*strong[:3], *([guess] if guess is not None else []), *weak[:2]]:
            found.append((typed, ScenarioSource.HEURISTICS))
        sibling = sibling_default(signature, parameter.name) if not found else None
        if sibling is not None:  # the weakest hint: only when nothing else says anything
            found.append((sibling, ScenarioSource.HEURISTICS))
    elif not found:  # the long-standing, always-on guesses for the most common names
        guess = guess_from_name(parameter.name) if parameter.name in _CLASSIC_NAMES else None
        if guess is not None:
            found.append((guess, ScenarioSource.SYNTHESIZED))
    if vague:
        found.append((annotation, ScenarioSource.SYNTHESIZED))
    unique: dict[str, tuple[Any, ScenarioSource]] = {}
    for typed, source in found:
        unique.setdefault(repr(typed), (typed, source))
    return list(unique.values())


def _is_first_required(signature: inspect.Signature, parameter: inspect.Parameter) -> bool:
    required = [
        p
        for p in signature.parameters.values()
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.name not in ("self", "cls")
    ]
    return bool(required) and required[0].name == parameter.name


_CLASSIC_NAMES = frozenset(
    [
        "text",
        "s",
        "string",
        "name",
        "word",
        "n",
        "k",
        "i",
        "count",
        "size",
        "width",
        "length",
        "data",
        "iterable",
        "items",
        "values",
        "func",
        "function",
        "fn",
        "f",
        "key",
        "predicate",
        "obj",
        "item",
        "value",
        "other",
    ]
)
"""Names guessed even with ``--no-heuristics`` (what argument synthesis always understood)."""


def _why_untyped(
    parameter: inspect.Parameter, hints: dict[str, Any], sources: frozenset[str]
) -> str:
    annotation = hints.get(parameter.name, parameter.annotation)
    if isinstance(annotation, str):
        return (
            f"parameter {parameter.name!r}: annotation {annotation!r} cannot be resolved "
            "at run time and no other source types it"
        )
    asked = ["annotation", *(name.replace("_", " ") for name in sorted(sources))]
    return (
        f"parameter {parameter.name!r} has no annotation or default, and no source says what it "
        f"is (asked: {', '.join(asked)})"
    )


def _signature_of(
    target: Callable[..., object], context: _Context | None = None
) -> inspect.Signature | None:
    """inspect.signature (``__text_signature__`` included), else the ``name(a, b)`` first
    docstring line C functions carry, else the stub's parameter list."""
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        pass
    if inspect.isclass(target) and issubclass(target, BaseException):
        return inspect.Signature()  # exceptions take any arguments; none is a valid call
    from_doc = _docstring_signature(target)
    if from_doc is not None:
        return from_doc
    if context is None or "stubs" in context.sources:
        stub = stub_signature(target)
        if stub is not None and stub.signature is not None:
            return stub.signature
    if inspect.isclass(target):  # a C class that documents nothing: try it without arguments
        return inspect.Signature()
    return None


def _docstring_signature(target: Callable[..., object]) -> inspect.Signature | None:
    first_line = (getattr(target, "__doc__", None) or "").strip().split("\n", 1)[0]
    match = re.match(r"^(\w+)\(([^()]*)\)", first_line)
    if not match or match.group(1) != getattr(target, "__name__", None):
        return None
    parameters = []
    for text in filter(None, (part.strip() for part in match.group(2).split(","))):
        name, has_default, _ = text.partition("=")
        name = name.strip().strip("[]").strip()
        if name in ("/", "*"):
            continue
        if not name.isidentifier():
            return None
        parameters.append(
            inspect.Parameter(
                name,
                inspect.Parameter.POSITIONAL_ONLY,
                default=None if has_default or "[" in text else inspect.Parameter.empty,
            )
        )
    try:
        return inspect.Signature(parameters)
    except ValueError:  # defaults before required parameters
        return None


def _type_hints(target: Callable[..., object]) -> dict[str, Any]:
    """Resolved annotations; string ones that fail alone are evaluated one by one."""
    function = target.__init__ if inspect.isclass(target) else target
    try:
        return typing.get_type_hints(function)
    except Exception:
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(inspect.unwrap(function), "__globals__", {})
    widened: dict[str, Any] | None = None
    for name, annotation in getattr(function, "__annotations__", {}).items():
        if not isinstance(annotation, str):
            hints[name] = annotation
            continue
        try:
            hints[name] = eval(annotation, namespace, vars(typing))
            continue
        except Exception:
            pass
        # names imported only under `if TYPE_CHECKING:`: the package's classes, common stdlib ones
        if widened is None:
            widened = {
                **WELL_KNOWN_NAMES,
                **package_classes(getattr(function, "__module__", "") or ""),
                **namespace,
            }
        try:
            hints[name] = eval(annotation, widened, vars(typing))
        except Exception:
            continue
    return hints


WELL_KNOWN_NAMES: dict[str, Any] = {**STDLIB_NAMES, "Enum": enum.Enum, "abc": abc}
"""Standard-library names annotations often import only for type checking."""


def package_classes(module: str) -> dict[str, type]:
    """The classes defined in ``module``'s top-level package and imported so far, by their names
    (a name two classes share is left out: it would be a guess)."""
    package = module.split(".")[0]
    if not package:
        return {}
    found: dict[str, type | None] = {}
    for name, loaded in list(sys.modules.items()):
        if loaded is None or not (name == package or name.startswith(package + ".")):
            continue
        for value in list(vars(loaded).values()):
            if (
                isinstance(value, type)
                and (getattr(value, "__module__", "") or "").split(".")[0] == package
            ):
                seen = found.setdefault(value.__name__, value)
                if seen is not value:
                    found[value.__name__] = None
    return {name: cls for name, cls in found.items() if cls is not None}


def _element_annotation(parameter: inspect.Parameter, hints: dict[str, Any]) -> Any:
    """What to pass twice for ``*iterables``-style parameters, or None to pass nothing."""
    annotation = hints.get(parameter.name, parameter.annotation)
    if annotation is not parameter.empty and not isinstance(annotation, str):
        return annotation
    singular = parameter.name[:-1] if parameter.name.endswith("s") else ""
    return guess_from_name(singular) if singular else None


def _identity(*args: Any, **kwargs: Any) -> Any:
    """Stands in for a required callable: returns its first argument."""
    return args[0] if args else None


# -- values ----------------------------------------------------------------------------------

_WORDS = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
]
_SEQUENCE_ORIGINS = {
    list,
    abc.Sequence,
    abc.MutableSequence,
    abc.Collection,
    abc.Iterable,
    abc.Reversible,
    abc.Container,
    abc.Sized,
}
_SET_ORIGINS = {set, frozenset, abc.Set, abc.MutableSet}
_MAPPING_ORIGINS = {
    dict,
    abc.Mapping,
    abc.MutableMapping,
    collections.OrderedDict,
    collections.defaultdict,
}


def _text(rng: random.Random, n: int) -> str:
    words: list[str] = []
    length = 0
    while length < n:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:n]


def _word(rng: random.Random) -> str:
    """An identifier-like word (``loremdolor``): not sized, since names do not grow with n."""
    return rng.choice(_WORDS) + rng.choice(_WORDS)


def _json_text(rng: random.Random, n: int) -> str:
    return "[" + ", ".join(str(rng.randint(0, 999)) for _ in range(n)) + "]"


def _digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(max(n - 1, 0)))


def _build(annotation: Any, context: _Context, name: str) -> Any:
    if context.depth > MAX_DEPTH and annotation not in _LEAVES:
        raise CannotSynthesize(f"parameter {name!r}: type {annotation!r} nests too deeply")
    context.depth += 1
    try:
        return _build_value(annotation, context, name, context.rng(name))
    finally:
        context.depth -= 1


def _build_value(tp: Any, context: _Context, name: str, rng: random.Random) -> Any:
    n = context.n
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(tp, (str, typing.ForwardRef)):  # a forward reference left unresolved
        resolved = _resolve_forward(tp, context)
        if resolved is None:
            raise CannotSynthesize(f"parameter {name!r}: cannot resolve the type {tp!r}")
        return _build_value(resolved, context, name, rng)
    if isinstance(tp, Produced):
        value = _call_with_arguments(tp.producer, context)
        if value is None:
            raise CannotSynthesize(f"parameter {name!r}: {_name_of(tp.producer)} returned None")
        context.sized |= isinstance(value, (str, bytes))
        return value
    if tp in _TYPING_PROTOCOLS:
        return _build_value(_TYPING_PROTOCOLS[tp], context, name, rng)
    if _is_protocol(tp):
        return _build_protocol(tp, context, name, rng)
    if tp is Any or tp is object or tp is inspect.Parameter.empty:
        return _build_value(context.pick([list[int], str, int]), context, name, rng)
    if isinstance(tp, typing.TypeVar):
        constraints = tp.__constraints__ or ((tp.__bound__,) if tp.__bound__ else (Any,))
        return _build_value(constraints[0], context, name, rng)
    if isinstance(tp, typing.NewType):
        return _build_value(tp.__supertype__, context, name, rng)
    if tp is type(None) or tp is None:
        return None
    if tp is bool:
        return context.pick([False, True])
    if tp is int:
        return context.pick([rng.randint(8, 16), 2, 0])
    if tp is float:
        return context.pick([rng.uniform(0.05, 0.95), rng.uniform(1.0, 100.0), 0.0])
    if tp is complex:
        return complex(rng.uniform(-1, 1), rng.uniform(-1, 1))
    if tp is str:  # prose, one word (names, labels and keys reject spaces), a JSON array, digits
        named = _named_string(name)  # a format the parameter's name asks for comes first
        options = [_text(rng, n), None, _json_text(rng, n), _digits(rng, n), _ISO_TIME, "x"]
        text = context.pick([named, *options] if named else options)
        if text is None:
            return _word(rng)
        context.sized |= text not in (named, _ISO_TIME, "x")
        return text
    if tp in (bytes, bytearray):
        context.sized = True
        return tp(rng.randbytes(n))
    if tp is SameClassMarker:
        if context.owner is None:
            return _build_value(Any, context, name, rng)
        return _construct(context.owner, context)
    if tp in _SPECIAL_VALUES:
        return _SPECIAL_VALUES[tp](context, name, rng)
    if (
        tp is TextFileMarker
        or tp in (typing.TextIO, io.StringIO, io.TextIOBase)
        or (origin is typing.IO and args == (str,))
    ):
        context.sized = context.files = True
        return io.StringIO(_json_text(rng, n))
    if tp in (BinaryFileMarker, typing.BinaryIO, io.BytesIO, io.BufferedIOBase) or (
        origin is typing.IO and args == (bytes,)
    ):
        context.sized = context.files = True
        return io.BytesIO(_json_text(rng, n).encode())
    if origin in (typing.Union, types.UnionType):
        members = [member for member in args if member is not type(None)] or [type(None)]
        member = members[context.variant % len(members)]
        context.choices = max(context.choices, len(members))
        inner = context.inner(context.variant // len(members))
        value = _build_value(member, inner, name, rng)
        context.sized |= inner.sized
        context.files |= inner.files
        context.choices = max(context.choices, inner.choices * len(members))
        return value
    if origin is typing.Literal:
        return context.pick(list(args))
    if origin is type or tp is type:
        chosen = args[0] if args and inspect.isclass(args[0]) else object
        return ValueError if chosen in (BaseException, Exception) else chosen
    if origin is abc.Callable or tp is abc.Callable or tp is typing.Callable:
        return _identity
    if tp in _SEQUENCE_ORIGINS or origin in _SEQUENCE_ORIGINS:
        context.sized = True
        return _elements(args[0] if args else int, context, name, rng)
    if tp is tuple or origin is tuple:
        if (len(args) == 2 and args[1] is Ellipsis) or not args:
            context.sized = True
            element = args[0] if args else int
            return tuple(_elements(element, context, name, rng))
        return tuple(_build(arg, context, f"{name}[{i}]") for i, arg in enumerate(args))
    if tp in _SET_ORIGINS or origin in _SET_ORIGINS:
        context.sized = True
        element = args[0] if args else int
        values = _distinct(element, context, name, rng)
        return frozenset(values) if (origin or tp) is frozenset else set(values)
    if tp in _MAPPING_ORIGINS or origin in _MAPPING_ORIGINS:
        context.sized = True
        key, value = args if len(args) == 2 else (str, int)
        keys = _distinct(key, context, name, rng)
        return {k: _build(value, context, f"{name}[{i}]") for i, k in enumerate(keys)}
    if origin in (abc.Iterator, abc.Generator) or tp in (abc.Iterator, abc.Generator):
        raise CannotSynthesize(
            f"parameter {name!r} wants an iterator, which one call would use up; "
            "write a scenario that creates it in `call`"
        )
    if inspect.isclass(tp):
        return _build_instance(tp, context, name, rng)
    return _draw_with_hypothesis(tp, context, name)


def _sandbox_file(context: _Context, name: str, rng: random.Random) -> str:
    """A file in the temporary directory (the worker's sandbox) holding text that grows with n;
    its path."""
    context.sized = True
    path = _inputs_directory() / f"{_safe(name)}-{context.n}.txt"
    path.write_text("\n".join(_text(rng, 40) for _ in range(max(context.n // 10, 1))) + "\n")
    return str(path)


def _sandbox_directory(context: _Context, name: str, rng: random.Random) -> str:
    """A directory in the sandbox with a few small files; its path."""
    directory = _inputs_directory() / f"{_safe(name)}-dir"
    directory.mkdir(exist_ok=True)
    for index in range(3):
        (directory / f"file{index}.txt").write_text(_text(rng, 80) + "\n")
    return str(directory)


def _inputs_directory() -> pathlib.Path:
    directory = pathlib.Path(tempfile.gettempdir()) / "apiprof-inputs"
    directory.mkdir(exist_ok=True)
    return directory


def _safe(name: str) -> str:
    return re.sub(r"\W", "_", name)


_SOCKETS: list[socket.socket] = []
"""Both ends of every socket pair handed out, so the peer stays open while the call runs."""


def _loopback_socket(context: _Context, name: str, rng: random.Random) -> socket.socket:
    """One end of a connected socket pair, its peer holding n bytes ready to be read."""
    ours, theirs = socket.socketpair()
    theirs.sendall(rng.randbytes(min(context.n, 4096)))
    _SOCKETS.extend((ours, theirs))
    return ours


def _traceback(context: _Context, name: str, rng: random.Random) -> types.TracebackType | None:
    try:
        raise ValueError("synthesised")
    except ValueError as error:
        return error.__traceback__


_SPECIAL_VALUES: dict[Any, Callable[[_Context, str, random.Random], Any]] = {
    PathMarker: _sandbox_file,
    DirectoryMarker: _sandbox_directory,
    SocketMarker: _loopback_socket,
    TracebackMarker: _traceback,
    CharMarker: lambda context, name, rng: context.pick(["a", "Z", "7", " "]),
}


_ISO_TIME = "2024-06-15T12:30:00"
"""A string flavour many parsers accept (dates, times, ISO 8601)."""


def _named_string(name: str) -> str | None:
    """The string a parameter's name asks for (``url`` → a URL, ``dt_str`` → an ISO date)."""
    guess = guess_from_name(name)
    if typing.get_origin(guess) is typing.Literal and isinstance(typing.get_args(guess)[0], str):
        return typing.get_args(guess)[0]
    lowered = name.lower()
    if any(word in lowered for word in ("date", "time", "dt", "iso", "when")):
        return _ISO_TIME
    return None


def _resolve_forward(tp: str | typing.ForwardRef, context: _Context) -> Any:
    text = tp.__forward_arg__ if isinstance(tp, typing.ForwardRef) else tp
    module = sys.modules.get(context.qualname.split(".")[0])
    names = {**module_namespace(module), **package_classes(context.qualname)}
    return evaluate_type(text, names)


def _is_protocol(tp: Any) -> bool:
    return (
        inspect.isclass(tp)
        and bool(getattr(tp, "_is_protocol", False))
        and tp is not typing.Protocol
    )


def _build_protocol(tp: type, context: _Context, name: str, rng: random.Random) -> Any:
    """A value for a structural type: a callable for a call protocol, else the first builtin
    or package class that has every method the protocol declares."""
    members = {
        attribute
        for klass in tp.__mro__
        if klass not in (object, typing.Protocol, typing.Generic)
        for attribute in vars(klass)
        if not attribute.startswith("_abc") and attribute not in _PROTOCOL_NOISE
    }
    if members <= {"__call__"} or "__call__" in members:
        return _identity
    strong, _ = infer_from_usage(Usage(attributes=members), None, package_classes(context.qualname))
    for candidate in strong:
        try:
            return _build(candidate, context, name)
        except CannotSynthesize:
            continue
    raise CannotSynthesize(
        f"parameter {name!r}: nothing apiprof can build has all of {tp.__qualname__}'s "
        f"members ({', '.join(sorted(members))})"
    )


_TYPING_PROTOCOLS: dict[Any, Any] = {
    typing.SupportsIndex: int,
    typing.SupportsInt: int,
    typing.SupportsAbs: int,
    typing.SupportsFloat: float,
    typing.SupportsRound: float,
    typing.SupportsComplex: complex,
    typing.SupportsBytes: bytes,
}
"""The standard library's one-method protocols, and the plain type that satisfies each."""

_PROTOCOL_NOISE = frozenset(
    {
        "__module__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__parameters__",
        "__orig_bases__",
        "__protocol_attrs__",
        "__non_callable_proto_members__",
        "__subclasshook__",
        "__init__",
        "__annotations__",
        "__qualname__",
        "__abstractmethods__",
        "__slots__",
        "_is_protocol",
        "_is_runtime_protocol",
        "__type_params__",
        "__static_attributes__",
        "__firstlineno__",
        "__callable_proto_members_only__",
    }
)


def _elements(element: Any, context: _Context, name: str, rng: random.Random) -> list[Any]:
    """n items: plain numbers and words drawn from one stream, anything else built one by one."""
    if element is int or element is Any:
        return [rng.randint(1, 1000) for _ in range(context.n)]
    if element is float:
        return [rng.uniform(0.0, 1000.0) for _ in range(context.n)]
    if element is str:
        return [rng.choice(_WORDS) for _ in range(context.n)]
    context.heavy = True  # n objects built one by one: keep the sizes small
    return [_build(element, context, f"{name}[{i}]") for i in range(context.n)]


def _distinct(element: Any, context: _Context, name: str, rng: random.Random) -> list[Any]:
    """n distinct keys: numbers and strings made unique by index, others as drawn. Keys and set
    members must be hashable, so an unconstrained type (``Any``, a bare TypeVar) gets words."""
    if (
        element is Any
        or element is object
        or (
            isinstance(element, typing.TypeVar)
            and not element.__constraints__
            and element.__bound__ is None
        )
    ):
        element = str
    if element is int:
        return rng.sample(range(context.n * 10), context.n)
    if element is str:
        return [f"{rng.choice(_WORDS)}{i}" for i in range(context.n)]
    return [_build(element, context, f"{name}[{i}]") for i in range(context.n)]


def _build_instance(cls: type, context: _Context, name: str, rng: random.Random) -> Any:
    if issubclass(cls, enum.Enum):
        return context.pick(list(cls))
    if issubclass(cls, (os.PathLike, pathlib.PurePath)):
        concrete = cls if issubclass(cls, pathlib.PurePath) else pathlib.Path
        return concrete(_sandbox_file(context, name, rng))
    if issubclass(cls, datetime.datetime):
        return datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=rng.randint(0, 10**7))
    if issubclass(cls, datetime.date):
        return datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(0, 1000))
    if issubclass(cls, datetime.timezone) or cls is datetime.tzinfo:
        return context.pick([datetime.UTC, datetime.timezone(datetime.timedelta(hours=2))])
    if issubclass(cls, datetime.timedelta):
        return datetime.timedelta(seconds=context.pick([rng.randint(1, 10**6), rng.uniform(0, 60)]))
    if cls in (decimal.Decimal, fractions.Fraction):
        return cls(str(rng.randint(1, 10**6))) / 7
    if issubclass(cls, BaseException):  # the base classes: a plain error any handler expects
        return (ValueError if cls in (BaseException, Exception) else cls)("synthesised")
    module = getattr(cls, "__module__", "")
    if module.split(".")[0] == context.qualname.split(".")[0]:  # the package's own classes
        return _construct(cls, context)
    return _draw_with_hypothesis(cls, context, name)


def _draw_with_hypothesis(tp: Any, context: _Context, name: str) -> Any:
    """One value hypothesis' ``from_type`` builds for the type, drawn reproducibly (seeded)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded
    from hypothesis import strategies as st

    drawn: list[Any] = []

    @seeded(context.seed)
    @settings(
        max_examples=1,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.from_type(tp))
    def draw(value: Any) -> None:
        drawn.append(value)

    try:
        with warnings.catch_warnings():
            # e.g. SmallSearchSpaceWarning: one value is all we want
            warnings.simplefilter("ignore")
            draw()
    except Exception as error:  # ResolutionFailed, Unsatisfiable, or the type's own constructor
        raise CannotSynthesize(
            f"parameter {name!r}: cannot build a value of type {tp!r} ({describe_exception(error)})"
        ) from None
    if not drawn:
        raise CannotSynthesize(f"parameter {name!r}: hypothesis drew no value of type {tp!r}")
    return drawn[0]


# -- partial arguments, for scaffolds ----------------------------------------------------------


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
    context = _Context(qualname, n, 0, 0, sources=frozenset(sources))
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
                instance = _construct(owner, context)
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
    signature = _signature_of(target, context)
    if signature is None:
        return found
    hints = _type_hints(target)
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
            value = _build_parameter(target, parameter, signature, hints, context)
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
