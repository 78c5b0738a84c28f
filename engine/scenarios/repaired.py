"""Values built from what rejected calls taught (:mod:`.lessons`): a dict with the keys asked
for, an object with the attributes asked for, a mapping, an existing file, the call's parameter
names, ``sys.argv`` for a ``main()``.

An object with attributes is, in order: one of the package's own classes whose instances have
the most of them (class body, properties, ``self.x = ...`` in its methods), a standard-library
object that has them (a DOM node, an ElementTree element, a SAX handler), else a namespace
carrying them with values typed by the attributes' names. Keys' values are typed by the keys'
names the same way. Everything is deterministic: the same lessons build the same values.
"""

from __future__ import annotations

import ast
import datetime
import functools
import inspect
import io
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from apiprof.engine.discovery.discover import resolve_object
from apiprof.engine.scenarios import instances, values
from apiprof.engine.scenarios.buffers import fixed_buffer
from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.documents import document
from apiprof.engine.scenarios.factories import Produced, inverse_producers
from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.importedclasses import imported_classes_with
from apiprof.engine.scenarios.lessons import BUILTIN_TYPES
from apiprof.engine.scenarios.modulenames import package_module_name
from apiprof.engine.scenarios.quoted import with_literals
from apiprof.engine.scenarios.readied import readied
from apiprof.engine.scenarios.refusals import BINARY_STREAM
from apiprof.engine.scenarios.resources import inputs_directory, safe_name
from apiprof.engine.scenarios.savedfiles import saved_content
from apiprof.engine.scenarios.texts import random_text, random_word
from apiprof.engine.scenarios.typetext import DirectoryMarker
from apiprof.engine.scenarios.usage import self_attributes
from apiprof.engine.scenarios.wants import Lesson, Want
from apiprof.model.records import ScenarioSource

REPAIRED_ELEMENTS = 3
"""Elements of a list whose elements a lesson is about (tokens, nodes): a few, unsized."""
MAX_CLASSES = 4
"""The package's classes offered for one set of attributes, best first."""


def lesson_for(context: BuildContext, parameter: str) -> Lesson | None:
    """The lesson about one of the entry point's own parameters, if any."""
    return next((lesson for lesson in context.lessons if lesson.parameter == parameter), None)


def repaired_value(lesson: Lesson, context: BuildContext, name: str) -> Any:
    """The value ``lesson`` says parameter ``name`` wants; credited to the repair."""
    if lesson.element:
        value: Any = [_one(lesson, context, f"{name}[{i}]") for i in range(REPAIRED_ELEMENTS)]
    else:
        value = _one(lesson, context, name)
    context.credit(name, ScenarioSource.REPAIRED)
    return value


def learned_signature(
    context: BuildContext, signature: inspect.Signature | None
) -> inspect.Signature | None:
    """The call's own parameters as its errors named them (a C function without a signature),
    else ``signature``."""
    names = next((lesson.names for lesson in context.lessons if lesson.want is Want.NAMES), ())
    if not names:
        return signature
    context.credit("signature", ScenarioSource.REPAIRED)
    kind = inspect.Parameter.POSITIONAL_ONLY  # untyped: the name rules first, then anything
    return inspect.Signature([inspect.Parameter(name, kind, annotation=Any) for name in names])


def apply_argv(context: BuildContext) -> None:
    """Point ``sys.argv`` at what a ``main()``'s usage line asked for (files for inputs), in the
    worker that runs this call only."""
    lesson = next((lesson for lesson in context.lessons if lesson.want is Want.ARGV), None)
    if lesson is None:
        return
    sys.argv = [sys.argv[0] if sys.argv else "main", *argv_words(lesson.names, context)]
    context.credit("sys.argv", ScenarioSource.REPAIRED)


def argv_words(tokens: Sequence[str], context: BuildContext) -> list[str]:
    """The command line a lesson's tokens stand for (files for inputs)."""
    return [_argv_value(token, context) for token in tokens]


def _argv_value(name: str, context: BuildContext) -> str:
    """A command-line word for a lesson's token: a literal (``=3``) or an option as it is,
    else a file named after it (to write to for an output)."""
    if name.startswith("="):
        return name[1:]
    if name.startswith("-"):
        return name
    if "out" in name.lower():  # an output file: a path to write to
        return str(inputs_directory() / f"{safe_name(name)}.out")
    return named_word(name) or written_file(context, name)


def named_word(name: str) -> str:
    """The text a well-known name stands for on a command line (``version1`` → ``1.2.3``,
    ``url`` → a URL), "" for a name that says nothing (an input: a file)."""
    guess = guess_from_name(name) or guess_from_name(name.rstrip("0123456789_"))
    if typing.get_origin(guess) is typing.Literal:
        word = typing.get_args(guess)[0]
        return word if isinstance(word, str) else ""
    return ""


def _one(lesson: Lesson, context: BuildContext, name: str) -> Any:
    if lesson.want is Want.KEYS:
        return {key: _keyed_value(key, context, name, lesson.turn) for key in lesson.names}
    if lesson.want is Want.MAPPING:
        return values.build(dict[str, int], context, name)
    if lesson.want is Want.FILE:
        return written_file(context, name)
    if lesson.want is Want.DIRECTORY:
        return values.build(DirectoryMarker, context, name)
    if lesson.want is Want.STEM:  # a loader adds the suffix: the file with it exists
        stem = inputs_directory() / f"{safe_name(name)}-stem"
        text = random_text(context.rng(name), max(context.n, 40)) + "\n"
        stem.with_name(stem.name + lesson.names[0]).write_text(text)
        return str(stem)
    if lesson.want is Want.FIELDS:  # each field typed by its use or name, as a key's value is
        return tuple(_field(field, context, name, lesson.turn) for field in lesson.names)
    if lesson.want is Want.WRITTEN and lesson.names:  # a stream the package's writer filled
        return written_stream(context, name, binary=lesson.names[0] == BINARY_STREAM)
    if lesson.want is Want.WRITTEN:  # a made-up file was not read: only the package's will do
        return written_file(context, name, required=True)
    if lesson.want is Want.ATTRIBUTES:
        return object_with(lesson.names, context, name, lesson.turn)
    if lesson.want is Want.MODULE:
        try:
            return package_module_name(context.qualname, lesson.names, lesson.turn)
        except LookupError as error:
            raise CannotSynthesize(f"parameter {name!r}: {error}") from None
    if lesson.want is Want.ONE_OF:
        return lesson.names[0]
    if lesson.want is Want.EQUALS:  # a number or truth value the error named
        return ast.literal_eval(lesson.names[0])
    if lesson.want is Want.DOCUMENT:  # a parser's syntax error named the format
        made = document(lesson.names, name)
        context.files |= isinstance(made, io.IOBase)  # a stream: rewound before each call
        return made
    if lesson.want is Want.CONTAINS:
        return with_literals(lesson.names, random_word(context.rng(name)))
    if lesson.want is Want.TYPE and lesson.names[0] in BUILTIN_TYPES:
        return values.build(BUILTIN_TYPES[lesson.names[0]], context, name)
    buffer = fixed_buffer(lesson.names[0], context.rng(name)) if lesson.want is Want.TYPE else None
    if buffer is not None:  # the length struct asked for
        return buffer
    raise CannotSynthesize(f"parameter {name!r}: nothing to build for {lesson.what()}")


def _keyed_value(key: str, context: BuildContext, name: str, turn: int) -> Any:
    """The value under ``key`` of a repaired dict: what a lesson about it says, if one does."""
    path = f"{name}[{key!r}]"
    lesson = lesson_for(context, path)
    if lesson is not None:
        return repaired_value(lesson, context, path)
    return _named_value(key, context, path, turn)


def _field(field: str, context: BuildContext, name: str, turn: int) -> Any:
    """A value for a field ``end`` (typed by its name) or ``end:int`` (by its use)."""
    word, _, kind = field.partition(":")
    if kind in BUILTIN_TYPES:
        return values.build(BUILTIN_TYPES[kind], context, f"{name}.{word}")
    return _named_value(word, context, f"{name}.{word}", turn)


def _named_value(word: str, context: BuildContext, name: str, turn: int = 0) -> Any:
    """A value for a key or attribute called ``word``: typed by the name (turn 0), else a
    nested dict, a word, a number (later turns, when the first was refused)."""
    guess = guess_from_name(word)
    flavours: list[Any] = [guess, dict[str, str], str, int] if guess else [str, dict[str, str], int]
    for annotation in flavours[turn % len(flavours) :]:
        try:
            return values.build(annotation, context, word)
        except CannotSynthesize:
            continue
    return random_word(context.rng(name))


def object_with(names: tuple[str, ...], context: BuildContext, name: str, turn: int = 0) -> Any:
    """An object that has the attributes ``names`` (``x()``: called), the ``turn``-th
    candidate that builds: the package's classes, standard-library objects (a dict first when
    a dict has them all), standard-library classes the module imports, a builtin value that
    has them all (a text for ``upper()``), a namespace."""
    wanted = [attribute.removesuffix("()") for attribute in names]
    top = context.qualname.split(".")[0]
    package: list[Callable[[], Any]] = [  # made ready to have them (:mod:`.readied`)
        functools.partial(_ready_instance, cls, wanted, context)
        for cls in classes_with(top, wanted)
    ]
    standard = [maker for maker in _STANDARD_OBJECTS if _has_all(maker, wanted)]
    # a dict's own methods (items, get, keys) ask for a dict before any class of the package
    candidates = [*standard, *package] if _mapping in standard else [*package, *standard]
    candidates += [  # what the module imports from the standard library (`array.array`)
        functools.partial(values.build, cls, context, name)
        for cls in imported_classes_with(context.qualname, wanted)
    ]
    if _has_all(_empty_stream, wanted) and _READING & set(wanted):  # read(): a stream first
        candidates.insert(0, functools.partial(_stream, context, name))
    candidates += [  # `x.upper()` on a list: a text; `x.append(...)` on a number: a list
        functools.partial(values.build, builtin, context, name)
        for builtin in BUILTIN_OBJECTS
        if all(hasattr(typing.get_origin(builtin) or builtin, a) for a in wanted)
    ]
    candidates.append(functools.partial(_namespace, names, context, name))
    problems: list[str] = []
    for make in candidates[turn:]:
        try:
            with context.attempt():
                return make()
        except CannotSynthesize as error:
            problems.append(str(error))
    raise CannotSynthesize(
        f"parameter {name!r}: no object with {', '.join(wanted)} could be built"
        + (f" ({problems[0]})" if problems else "")
    )


def _ready_instance(cls: type, wanted: list[str], context: BuildContext) -> Any:
    return readied(instances.construct(cls, context), wanted, context)


def classes_with(package: str, wanted: list[str]) -> list[type]:
    """The package's concrete classes whose instances have the most of ``wanted``, best first
    (then by module and name, so the order never changes)."""
    scored: list[tuple[int, str, type]] = []
    for cls in _package_classes(package):
        held = instance_attributes(cls)
        score = sum(attribute in held for attribute in wanted)
        if score:
            scored.append((-score, f"{cls.__module__}.{cls.__qualname__}", cls))
    scored.sort(key=lambda item: item[:2])
    best = scored[0][0] if scored else 0
    return [cls for score, _, cls in scored if score == best][:MAX_CLASSES]


def _package_classes(package: str) -> list[type]:
    """The package's classes imported so far, and their subclasses (those a factory function
    of the package defines when it runs, too)."""
    found: dict[int, type] = {}
    pending: list[type] = []
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == package or module_name.startswith(package + ".")):
            continue
        pending += [value for value in list(vars(module).values()) if isinstance(value, type)]
    while pending:
        cls = pending.pop()
        if id(cls) in found or (cls.__module__ or "").split(".")[0] != package:
            continue
        found[id(cls)] = cls
        pending += type.__subclasses__(cls)
    return [
        cls
        for cls in found.values()
        if not inspect.isabstract(cls) and not issubclass(cls, BaseException)
    ]


@functools.cache
def instance_attributes(cls: type) -> frozenset[str]:
    """What instances of ``cls`` have: names in its classes' bodies (methods, properties,
    class attributes) and every ``self.x = ...`` its methods make."""
    held = set(dir(cls))
    for klass in cls.__mro__:
        if klass is object:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        held.update(self_attributes(tree, ast.Store))
    return frozenset(held)


_READING = frozenset(("read", "readline", "readlines", "readinto"))


def _empty_stream() -> Any:
    return io.BytesIO()


def _stream(context: BuildContext, name: str) -> io.IOBase:
    """A stream to read: of what the package's own writer makes, else of made-up bytes."""
    try:
        return written_stream(context, name, binary=True)
    except CannotSynthesize:
        context.files = True
        return io.BytesIO(random_text(context.rng(name), max(context.n, 40)).encode())


def _dom_element() -> Any:
    from xml.dom import minidom

    document = minidom.parseString('<root id="a"><child>text</child><child/></root>')
    return document.documentElement


def _etree_element() -> Any:
    from xml.etree import ElementTree

    return ElementTree.fromstring('<root id="a"><child>text</child><child/></root>')


def _content_handler() -> Any:
    from xml.sax.handler import ContentHandler

    return ContentHandler()


def _mapping() -> Any:
    return {"id": "a", "name": "root", "class": "first"}


def _moment() -> Any:
    return datetime.datetime(2024, 6, 15, 12, 30, tzinfo=datetime.UTC)


_STANDARD_OBJECTS: list[Callable[[], Any]] = [
    _mapping,
    _dom_element,
    _etree_element,
    _content_handler,
    _moment,
]
"""Standard-library objects offered when the package has no class with the attributes."""
BUILTIN_OBJECTS: tuple[Any, ...] = (str, bytes, list[int], int, float, set[int])
"""Builtin values offered, in this order, when every attribute asked is one of theirs (the
methods of a text, a list, a number): after the package's classes, before a namespace."""


@functools.cache
def _attributes_of(maker: Callable[[], Any]) -> frozenset[str]:
    return frozenset(dir(maker()))


def _has_all(maker: Callable[[], Any], wanted: list[str]) -> bool:
    return all(attribute in _attributes_of(maker) for attribute in wanted)


def _namespace(names: tuple[str, ...], context: BuildContext, name: str) -> Any:
    """A plain object carrying the attributes: callables for those called, values typed by
    the attributes' names for the others."""
    fields = {
        attribute.removesuffix("()"): values.identity
        if attribute.endswith("()")
        else _named_value(attribute, context, f"{name}.{attribute}")
        for attribute in names
    }
    return types.SimpleNamespace(**fields)


def written_file(context: BuildContext, name: str, *, required: bool = False) -> str:
    """The path of a file in the sandbox: what the package's own writer (the inverse of the
    entry point, ``dump`` for ``load``, its top-level ``dumps``, or a class's method that
    saves that format, :mod:`.savedfiles`) makes, else (unless ``required``) plain text."""
    path = inputs_directory() / f"{safe_name(name)}-repaired.txt"
    used = dict(context.used)  # the writer's own arguments are no arguments of this call
    content = _written_by_package(context, name)
    context.used.clear()
    context.used.update(used)
    if content is None and required:
        raise CannotSynthesize(f"parameter {name!r}: no writer of the package makes its file")
    if content is None:
        content = random_text(context.rng(name), max(context.n, 40)) + "\n"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


def written_stream(context: BuildContext, name: str, *, binary: bool) -> io.IOBase:
    """An in-memory stream (rewound before each call) of what the package's own writer
    makes; CannotSynthesize when it has none."""
    used = dict(context.used)  # the writer's own arguments are no arguments of this call
    content = _written_by_package(context, name)
    context.used.clear()
    context.used.update(used)
    if content is None:
        raise CannotSynthesize(f"parameter {name!r}: no writer of the package makes its input")
    context.files = True
    if binary:
        return io.BytesIO(content.encode() if isinstance(content, str) else content)
    return io.StringIO(content if isinstance(content, str) else content.decode(errors="replace"))


WRITER_NAMES = ("dumps", "dump", "serialize", "encode", "render")
"""Top-level functions of a package whose output a reader of its files takes."""


def _written_by_package(context: BuildContext, name: str) -> str | bytes | None:
    try:
        target = resolve_object(context.qualname)
    except Exception:
        return None
    top = sys.modules.get(context.qualname.split(".")[0])
    writers = [*inverse_producers(target)] if callable(target) else []
    writers += [
        writer
        for word in WRITER_NAMES
        if callable(writer := getattr(top, word, None)) and writer not in writers
    ]
    for writer in writers:
        try:
            with context.attempt():
                made = values.build(Produced(writer), context, name)
        except CannotSynthesize:
            made = _given_a_mapping(writer, context, name)  # serialisers take a mapping
        if isinstance(made, (str, bytes)) and made:
            return made
    return saved_content(target, context, name) if callable(target) else None


def _given_a_mapping(writer: Callable[..., Any], context: BuildContext, name: str) -> Any:
    try:
        return writer(values.build(dict[str, int], context, name))
    except Exception:
        return None
