"""Values for a type at size n: ``str`` of length n, ``list[T]`` of n items, ``dict[K, V]`` of n
entries, files and sockets in the sandbox, the package's own classes (through
:mod:`.instances`), else hypothesis' ``from_type`` drawn deterministically.

Some types have several *flavours* (a ``str`` may be prose, a JSON array or digits): the
context's variant picks one, so a caller can retry with another flavour when a function rejects
the first.
"""

from __future__ import annotations

import array
import collections
import collections.abc as abc
import contextlib
import copy
import datetime
import decimal
import enum
import fractions
import inspect
import io
import os
import pathlib
import random
import socket
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

from apiprof.engine.discovery.discover import describe_exception

# instances and parameters build objects and arguments from values built here: a cycle, so
# their modules (not names) are imported where the cycle closes, and used only at call time
from apiprof.engine.scenarios import (
    distinct,
    instances,
    namespaces,
    observed,
    packagedata,
    parsetexts,
    patterns,
    produced,
    pysyntax,
    registered,
    stdlibmade,
    typetext,
)
from apiprof.engine.scenarios.building import MAX_DEPTH, BuildContext, CannotSynthesize
from apiprof.engine.scenarios.drawn import draw_one
from apiprof.engine.scenarios.examples import ExampleValues
from apiprof.engine.scenarios.factories import Produced
from apiprof.engine.scenarios.heuristics import (
    CharMarker,
    ContextManagerMarker,
    CursorMarker,
    IteratorMarker,
    LoggerMarker,
    ModuleMarker,
    SameClassMarker,
    SocketMarker,
    TracebackMarker,
    guess_from_name,
)
from apiprof.engine.scenarios.resources import (
    ReusableText,
    lines_iterator,
    loopback_socket,
    package_module,
    query_cursor,
    quiet_logger,
    sandbox_directory,
    sandbox_file,
    traceback_value,
)
from apiprof.engine.scenarios.signatures import package_classes, signature_from_stubs
from apiprof.engine.scenarios.texts import (
    WORDS,
    json_list_text,
    random_digits,
    random_text,
    random_word,
)
from apiprof.engine.scenarios.usage import Usage, infer_from_usage

_LEAVES = (int, float, complex, str, bytes, bool, type(None))


def identity(*args: Any, **kwargs: Any) -> Any:
    """Stands in for a required callable: returns its first argument."""
    return args[0] if args else None


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


def build(annotation: Any, context: BuildContext, name: str) -> Any:
    if context.depth > MAX_DEPTH and annotation not in _LEAVES:
        raise CannotSynthesize(f"parameter {name!r}: type {annotation!r} nests too deeply")
    context.depth += 1
    try:
        return _build_value(annotation, context, name, context.rng(name))
    finally:
        context.depth -= 1


def _build_value(tp: Any, context: BuildContext, name: str, rng: random.Random) -> Any:
    n = context.n
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(tp, (str, typing.ForwardRef)):  # a forward reference left unresolved
        resolved = _resolve_forward(tp, context)
        if resolved is None:
            raise CannotSynthesize(f"parameter {name!r}: cannot resolve the type {tp!r}")
        return _build_value(resolved, context, name, rng)
    if isinstance(tp, Produced):
        return produced.produced(tp, context, name)
    if isinstance(tp, (patterns.MatchOf, patterns.MatchingText, patterns.MatchedText)):
        return patterns.build_pattern_value(tp, context, name)
    if isinstance(tp, packagedata.PackageFile):
        return packagedata.build_package_file(tp, context, name)
    if isinstance(tp, pysyntax.PythonSource):
        return pysyntax.python_source(context)
    if isinstance(tp, namespaces.ParsedArguments):
        return namespaces.parsed_arguments(tp, context, name)
    if isinstance(tp, ExampleValues):
        return copy.deepcopy(context.pick(list(tp.values)))
    if isinstance(tp, parsetexts.SnippetFiles):
        return tp.path(context.pick(list(tp.texts)), name)
    if isinstance(tp, registered.RegisteredKey):
        keys = registered.keys_of(tp, context.receiver)
        if not keys and (context.feeding or bool(getattr(context.warmup, "own_arguments", 0))):
            return random_word(rng)  # what is fed in becomes a key: any name will do
        if not keys:
            raise CannotSynthesize(tp.empty_reason(name))
        return context.pick(keys)
    if tp in _TYPING_PROTOCOLS:
        return _build_value(_TYPING_PROTOCOLS[tp], context, name, rng)
    if (origin or tp) in (contextlib.AbstractContextManager, typing.ContextManager):
        # an in-memory file: a context manager that gives itself, lines to iterate, to read
        context.sized = context.files = True
        return ReusableText(json_list_text(rng, context.n).replace(", ", ",\n"))
    if _is_protocol(tp):
        return _build_protocol(tp, context, name, rng)
    if tp is Any or tp is object or tp is inspect.Parameter.empty:
        flavours = (
            [list[int], dict[str, int], str, int] if context.feeding else [list[int], str, int]
        )
        return _build_value(context.pick(flavours), context, name, rng)
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
        prose = random_text(rng, n)
        options = [
            prose,
            None,
            json_list_text(rng, n),
            random_digits(rng, n),
            _ISO_TIME,
            "x",
        ]
        text = context.pick([named, *options] if named else options)
        if text is None:
            return _apart(random_word(rng), context)
        context.sized |= text not in (named, _ISO_TIME, "x")
        return _apart(prose, context) if text is prose else text  # names of siblings differ
    if tp in (bytes, bytearray):
        context.sized = True
        return tp(rng.randbytes(n))
    if tp is SameClassMarker:
        if context.owner is None:
            return _build_value(Any, context, name, rng)
        return instances.construct(context.owner, context)
    if tp in _SPECIAL_VALUES:
        return _SPECIAL_VALUES[tp](context, name, rng)
    if (
        tp is typetext.TextFileMarker
        or tp in (typing.TextIO, io.StringIO, io.TextIOBase)
        or (origin is typing.IO and args == (str,))
    ):
        context.sized = context.files = True
        return io.StringIO(json_list_text(rng, n))
    if tp in (typetext.BinaryFileMarker, typing.BinaryIO, io.BytesIO, io.BufferedIOBase) or (
        origin is typing.IO and args == (bytes,)
    ):
        context.sized = context.files = True
        return io.BytesIO(json_list_text(rng, n).encode())
    if tp is typing.IO or origin is typing.IO:  # IO[Any]: text first, bytes in a variant
        context.sized = context.files = True
        text = json_list_text(rng, n)
        return context.pick([io.StringIO(text), io.BytesIO(text.encode())])
    if origin in (typing.Union, types.UnionType):
        members = [member for member in args if member is not type(None)] or [type(None)]
        members.sort(key=lambda member: member is not guess_from_name(name))  # dt_str: str first
        turn = context.current_variant()
        member = members[turn % len(members)]
        context.choices = max(context.choices, len(members))
        context.note_flavours(len(members))
        inner = context.inner(turn // len(members))
        value = _build_value(member, inner, name, rng)
        context.sized |= inner.sized
        context.files |= inner.files
        context.choices = max(context.choices, inner.choices * len(members))
        context.note_flavours(inner.choices * len(members))
        return value
    if origin is typing.Literal:
        return context.pick(list(args))
    if origin is type or tp is type:
        chosen = args[0] if args and inspect.isclass(args[0]) else object
        return ValueError if chosen in (BaseException, Exception) else chosen
    if origin is abc.Callable or tp is abc.Callable or tp is typing.Callable:
        return identity
    if tp in _SEQUENCE_ORIGINS or origin in _SEQUENCE_ORIGINS:
        context.sized = True
        return _elements(args[0] if args else int, context, name, rng)
    if tp is tuple or origin is tuple:
        if (len(args) == 2 and args[1] is Ellipsis) or not args:
            context.sized = True
            element = args[0] if args else int
            return tuple(_elements(element, context, name, rng))
        return tuple(build(arg, context, f"{name}[{i}]") for i, arg in enumerate(args))
    if tp in _SET_ORIGINS or origin in _SET_ORIGINS:
        context.sized = True
        element = args[0] if args else int
        values = _distinct(element, context, name, rng)
        return frozenset(values) if (origin or tp) is frozenset else set(values)
    if tp in _MAPPING_ORIGINS or origin in _MAPPING_ORIGINS:
        context.sized = True
        key, value = args if len(args) == 2 else (str, int)
        keys = _distinct(key, context, name, rng)
        return {k: build(value, context, f"{name}[{i}]") for i, k in enumerate(keys)}
    if origin in (abc.Iterator, abc.Generator) or tp in (abc.Iterator, abc.Generator):
        with contextlib.suppress(CannotSynthesize):  # one an entry point of the package makes
            return observed.observed_value(tp, context, name)
        raise CannotSynthesize(
            f"parameter {name!r} wants an iterator, which one call would use up; "
            "write a scenario that creates it in `call`"
        )
    if inspect.isclass(tp):
        return _build_instance(tp, context, name, rng)
    return _draw_with_hypothesis(tp, context, name)


_SPECIAL_VALUES: dict[Any, Callable[[BuildContext, str, random.Random], Any]] = {
    typetext.PathMarker: sandbox_file,
    typetext.DirectoryMarker: sandbox_directory,
    SocketMarker: loopback_socket,
    CursorMarker: query_cursor,
    IteratorMarker: lines_iterator,
    TracebackMarker: traceback_value,
    CharMarker: lambda context, name, rng: context.pick(["a", "Z", "7", " "]),
    ContextManagerMarker: lambda context, name, rng: contextlib.nullcontext(),
    LoggerMarker: quiet_logger,
    ModuleMarker: package_module,
    types.ModuleType: package_module,
    distinct.DistinctTexts: distinct.distinct_texts,
    distinct.DistinctNumbers: distinct.distinct_numbers,
}


_ISO_TIME = "2024-06-15T12:30:00"
"""A string flavour many parsers accept (dates, times, ISO 8601)."""


def _named_string(name: str) -> str | None:
    """The string a parameter's name asks for (``url`` → a URL, ``dt_str`` → an ISO date)."""
    literal = _literal_named(name)
    if literal is not None:
        return literal
    lowered = name.lower()
    if any(word in lowered for word in ("date", "time", "dt", "iso", "when")):
        return _ISO_TIME
    return None


def _literal_named(name: str) -> str | None:
    """The string value the name heuristics give ``name`` outright (``encoding``: utf-8)."""
    guess = guess_from_name(name)
    if typing.get_origin(guess) is typing.Literal and isinstance(typing.get_args(guess)[0], str):
        return str(typing.get_args(guess)[0])
    return None


def _resolve_forward(tp: str | typing.ForwardRef, context: BuildContext) -> Any:
    text = tp.__forward_arg__ if isinstance(tp, typing.ForwardRef) else tp
    module = sys.modules.get(context.qualname.split(".")[0])
    names = {**typetext.module_namespace(module), **package_classes(context.qualname)}
    return typetext.evaluate_type(text, names)


def _is_protocol(tp: Any) -> bool:
    return (
        inspect.isclass(tp)
        and bool(getattr(tp, "_is_protocol", False))
        and tp is not typing.Protocol
    )


def _build_protocol(tp: type, context: BuildContext, name: str, rng: random.Random) -> Any:
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
        return identity
    strong, _ = infer_from_usage(Usage(attributes=members), None, package_classes(context.qualname))
    for candidate in strong:
        try:
            return build(candidate, context, name)
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


def _apart(text: str, context: BuildContext) -> str:
    """``text`` ending in the sibling's mark (same length): drawn words repeat, and short
    prefixes of them often do (``lor``), yet two names of one collection must differ."""
    mark = context.sibling.replace("/", "")
    return f"{text[: max(len(text) - len(mark), 0)]}{mark}" if mark else text


def _elements(element: Any, context: BuildContext, name: str, rng: random.Random) -> list[Any]:
    """n items: plain numbers and words drawn from one stream, anything else built one by one."""
    if element is int or element is Any:
        return [rng.randint(1, 1000) for _ in range(context.n)]
    if element is float:
        return [rng.uniform(0.0, 1000.0) for _ in range(context.n)]
    if element is str:
        named = _literal_named(name.removesuffix("s"))  # `encodings`: names of encodings
        return [named or rng.choice(WORDS) for _ in range(context.n)]
    if instances.under_construction(element, context):  # `elif_: list[If]` inside an If
        return []  # a tree's own kind nested in itself: a leaf holds none
    context.heavy = True  # n objects built one by one: keep the sizes small
    return context.apart(context.n, lambda i: build(element, context, f"{name}[{i}]"))


def _distinct(element: Any, context: BuildContext, name: str, rng: random.Random) -> list[Any]:
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
        return [f"{rng.choice(WORDS)}{i}" for i in range(context.n)]
    return context.apart(context.n, lambda i: build(element, context, f"{name}[{i}]"))


def _build_instance(cls: type, context: BuildContext, name: str, rng: random.Random) -> Any:
    if issubclass(cls, enum.Enum):
        return context.pick(list(cls))
    if issubclass(cls, (os.PathLike, pathlib.PurePath)):
        concrete = cls if issubclass(cls, pathlib.PurePath) else pathlib.Path
        return concrete(sandbox_file(context, name, rng))
    if issubclass(cls, datetime.datetime):  # aware where a method of a time zone is called
        when = datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=rng.randint(0, 10**7))
        zone = context.receiver
        if isinstance(zone, datetime.tzinfo):  # then naive: what `localize(dt)` attaches it to
            zone = context.pick([zone, None])
        else:
            zone = context.pick([None, datetime.UTC])  # naive, else aware
        return when.replace(tzinfo=zone)
    if issubclass(cls, datetime.date):
        return datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(0, 1000))
    if issubclass(cls, datetime.timezone) or cls is datetime.tzinfo:
        return context.pick([datetime.UTC, datetime.timezone(datetime.timedelta(hours=2))])
    if issubclass(cls, datetime.timedelta):
        return datetime.timedelta(seconds=context.pick([rng.randint(1, 10**6), rng.uniform(0, 60)]))
    if cls is array.array:  # n small non-negative ints ('i'): they also index a sized buffer
        context.sized = True
        return array.array("i", (rng.randrange(context.n) for _ in range(context.n)))
    if issubclass(cls, socket.socket):  # annotated or stubbed: a connected one, not a bare one
        return loopback_socket(context, name, rng)
    if cls in (decimal.Decimal, fractions.Fraction):
        return cls(str(rng.randint(1, 10**6))) / 7
    if pysyntax.is_syntax_class(cls):  # a parsed tree, not a bare node no tool accepts
        return pysyntax.syntax_node(cls, context, name)
    if issubclass(cls, BaseException):  # the base classes: a plain error any handler expects
        return (ValueError if cls in (BaseException, Exception) else cls)("synthesised")
    module = getattr(cls, "__module__", "")
    if module.split(".")[0] == context.qualname.split(".")[0]:  # the package's own classes
        return instances.construct(cls, context)
    try:
        return _draw_with_hypothesis(cls, context, name)
    except CannotSynthesize:
        if "stubs" not in context.sources:
            raise
        if signature_from_stubs(cls):  # a compiled class only its stub describes: call it so
            with context.attempt():
                return instances.call_with_arguments(cls, context)
        if not stdlibmade.stdlib_factories(cls):
            raise
    return stdlibmade.stdlib_instance(cls, context, name)


def _draw_with_hypothesis(tp: Any, context: BuildContext, name: str) -> Any:
    """One value hypothesis' ``from_type`` builds for the type, drawn reproducibly (seeded)."""
    from hypothesis import strategies as st

    try:
        drawn = draw_one(st.from_type(tp), context.seed)
    except LookupError:
        raise CannotSynthesize(
            f"parameter {name!r}: hypothesis drew no value of type {tp!r}"
        ) from None
    except Exception as error:  # ResolutionFailed, Unsatisfiable, or the type's own constructor
        raise CannotSynthesize(
            f"parameter {name!r}: cannot build a value of type {tp!r} ({describe_exception(error)})"
        ) from None
    return drawn
