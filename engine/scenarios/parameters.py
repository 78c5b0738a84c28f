"""Values for a callable's required parameters, from every source of argument types in turn.

Each parameter's candidate types come from its annotation, then the sources beyond it (each
switchable): stubs, docstring types, the package's inverse functions (``packb``'s output for
``unpackb``), how the body uses the parameter, its name and its siblings' defaults. The first
candidate that builds is used and its source credited.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections import abc
from collections.abc import Callable
from typing import Any

from apiprof.engine.scenarios import (  # optionalfill: a cycle
    optionalfill,
    pysyntax,
    repaired,
    results,
)
from apiprof.engine.scenarios.building import (
    RANK,
    SOURCES,
    BuildContext,
    CannotSynthesize,
    name_of,
    rotated,
)
from apiprof.engine.scenarios.callees import usage_through_callees
from apiprof.engine.scenarios.classnames import classes_named_by
from apiprof.engine.scenarios.doctypes import docstring_types
from apiprof.engine.scenarios.examples import example_values
from apiprof.engine.scenarios.fields import declared_fields, field_candidates, stored_as_is
from apiprof.engine.scenarios.forwarding import forwarded_callee
from apiprof.engine.scenarios.heuristics import guess_from_name, sibling_default
from apiprof.engine.scenarios.inverses import inverse_inputs
from apiprof.engine.scenarios.namesakes import namesake_default
from apiprof.engine.scenarios.namespaces import namespace_candidate
from apiprof.engine.scenarios.narrowing import checked_subclasses, own_class
from apiprof.engine.scenarios.packagedata import with_package_files
from apiprof.engine.scenarios.parsetexts import parser_texts
from apiprof.engine.scenarios.patterns import pattern_candidates
from apiprof.engine.scenarios.registered import RegisteredKey, registered_keys
from apiprof.engine.scenarios.signatures import (
    borrowed_hints,
    package_classes,
    signature_from_stubs,
    signature_of,
    type_hints,
)
from apiprof.engine.scenarios.stubs import stub_signature
from apiprof.engine.scenarios.usage import infer_from_usage, only_formatted, unconstrained
from apiprof.engine.scenarios.values import build
from apiprof.engine.scenarios.visitors import tree_candidates
from apiprof.engine.scenarios.wants import Want
from apiprof.engine.scenarios.wrappers import handed_to
from apiprof.model.records import ScenarioSource


def arguments_for(
    target: Callable[..., object], context: BuildContext, *, skip: int = 0, optional: bool = False
) -> tuple[list[Any], dict[str, Any]]:
    """Arguments for the required parameters (after the first ``skip``, supplied by the caller).

    With ``optional`` (the entry point's own call and its receiver), late variants also pass the
    optional parameters whose annotation names something other than None: a default of None often takes
    the path that cannot work alone ("if no eval context is passed, the node must have an
    environment")."""
    inner = handed_to(target)
    if inner is not None:  # a decorator's wrapper without functools.wraps: what it calls
        return arguments_for(inner, context, skip=skip, optional=optional)
    public = context.qualname if context.depth == 0 else ""  # the entry point's own call
    signature = signature_of(target, context.sources, public)
    if context.depth == 0 and context.lessons:  # the entry point's own call: errors named them
        signature = repaired.learned_signature(context, signature)
    if signature is None:
        raise CannotSynthesize(
            f"{name_of(target)} has no inspectable signature (no __text_signature__, no "
            "signature line in its docstring, no stub); add a scenario file entry"
        )
    if "stubs" in context.sources and signature_from_stubs(target, public):
        context.credit(f"<{name_of(target)} signature>", ScenarioSource.STUBS)
    hints = type_hints(target)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    built: dict[str, Any] = {} if context.receiver is None else {"self": context.receiver}
    fill = optional and any(
        optionalfill.optional_type(p, hints, context.sources, target) is not None
        for p in signature.parameters.values()
    )
    fill = fill and optionalfill.late_variant(context)
    for parameter in list(signature.parameters.values())[skip:]:
        if parameter.kind is parameter.VAR_KEYWORD:
            continue
        if parameter.kind is parameter.VAR_POSITIONAL:
            fields = declared_fields(target, parameter.name)
            lesson = repaired.lesson_for(context, _lesson_name(parameter.name, target, context))
            count, said = KEPT_ITEMS, False
            if lesson is not None and lesson.want is Want.ITEMS:  # a call said how many
                count, lesson, said = int(lesson.names[0]), None, True
                context.credit(f"*{parameter.name}", ScenarioSource.REPAIRED)
            if lesson is not None:  # what a call said its positional items must be
                value = repaired.repaired_value(lesson, context, lesson.parameter)
                args.extend(value if lesson.element else [value])
                continue
            if fields:  # the class lists what its positional arguments are
                args.extend(_build_field(target, name, context) for name in fields)
                continue
            element = _element_annotation(parameter, hints, target)
            before = len(args)
            if element is not None and element not in (
                Any,
                object,
            ):  # `*args: Any` is usually forwarded on: pass none, or what the callee needs
                args.extend(_items(element, count, parameter.name, context))
            elif "heuristics" in context.sources and forwarded_callee(
                target, parameter.name, built
            ):
                args.extend(_forwarded(target, parameter.name, built, context))
            elif optional and optionalfill.late_variant(context):
                # kept, not forwarded (`Cycler(*items)` needs at least one): later variants
                # pass two values
                kept = str if element is None else element  # names, items: words
                args.extend(_items(kept, count, parameter.name, context))
            if said and len(args) - before < count:  # C code it is handed to wants more
                args.extend(_items(str, count - (len(args) - before), parameter.name, context))
            continue
        if parameter.default is not parameter.empty:
            lesson = repaired.lesson_for(context, _lesson_name(parameter.name, target, context))
            if lesson is not None and lesson.want is Want.GIVEN:  # built as if it were required
                with context.building_parameter(parameter.name):
                    required = parameter.replace(default=parameter.empty)
                    kwargs[parameter.name] = build_parameter(
                        target, required, signature, hints, context
                    )
                context.used[parameter.name] = ScenarioSource.REPAIRED
            elif lesson is not None and parameter.kind is not parameter.POSITIONAL_ONLY:
                # its default of None did not do after all
                kwargs[parameter.name] = repaired.repaired_value(lesson, context, lesson.parameter)
            elif fill and parameter.kind is not parameter.POSITIONAL_ONLY:
                optionalfill.fill_optional(target, parameter, hints, context, kwargs)
            continue
        lesson = repaired.lesson_for(context, _lesson_name(parameter.name, target, context))
        if lesson is not None and context.depth:  # the receiver's constructor: a call told
            value = built[parameter.name] = repaired.repaired_value(
                lesson, context, lesson.parameter
            )
        else:
            value = built[parameter.name] = build_parameter(
                target, parameter, signature, hints, context
            )
        if parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = value
        else:
            args.append(value)
    return args, kwargs


KEPT_ITEMS = 2
"""Items passed to a ``*args`` the function keeps (unless a call said how many it takes)."""


def _items(element: Any, count: int, name: str, context: BuildContext) -> list[Any]:
    """``count`` values of ``element`` for ``*name``, each drawn apart from the others."""
    return context.apart(count, lambda i: build(element, context, f"{name}[{i}]"))


def _lesson_name(name: str, target: Callable[..., object], context: BuildContext) -> str:
    """What a lesson about this optional parameter is called: its name for the entry point's
    own call, ``self.<name>`` for the constructor of the receiver it is called on."""
    if context.depth == 0:
        return name
    receiver = context.depth == 1 and context.parameter == "self" and target is context.owner
    return f"self.{name}" if receiver else ""


def _forwarded(
    target: Callable[..., object], name: str, built: dict[str, Any], context: BuildContext
) -> list[Any]:
    """Values for ``*name`` when the body passes it on: the callee's required positional
    parameters after those the forwarding call supplies itself (none when it cannot be read)."""
    found = forwarded_callee(target, name, built)
    signature = signature_of(found[0], context.sources) if found else None
    if found is None or signature is None or found[0] is target:
        return []
    callee, leading = found
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ][leading:]
    hints = type_hints(callee)
    values = [build_parameter(callee, p, signature, hints, context) for p in positional]
    for parameter in positional:  # credited to the name the caller knows
        source = context.used.pop(parameter.name, ScenarioSource.HEURISTICS)
        context.credit(
            f"{name}[{parameter.name}]", max(source, ScenarioSource.HEURISTICS, key=RANK.index)
        )
    return values


def _build_field(cls: Any, name: str, context: BuildContext) -> Any:
    """A value for one field a class lists for its constructor (see :mod:`.fields`)."""
    problems = []
    for annotation, typed in field_candidates(cls, name, "heuristics" in context.sources):
        try:
            with context.attempt():
                value = build(annotation, context, name)
        except CannotSynthesize as error:
            problems.append(str(error))
            continue
        source = ScenarioSource.SYNTHESIZED if typed else ScenarioSource.HEURISTICS
        context.credit(f"{name_of(cls)}.{name}", source)
        return value
    raise CannotSynthesize(f"field {name!r} of {name_of(cls)}: {problems[0]}")


def build_parameter(
    target: Callable[..., object],
    parameter: inspect.Parameter,
    signature: inspect.Signature,
    hints: dict[str, Any],
    context: BuildContext,
) -> Any:
    """A value for one required parameter: each candidate type in turn (the variant decides
    which comes first) until one builds; the source of the one used is credited."""
    if context.depth == 0 and not context.parameter:  # one of the entry point's own
        with context.building_parameter(parameter.name):
            taken = results.taken_for(context, parameter.name)
            if taken is not None:  # what a working call of the package made
                return results.taken_value(taken, context)
            lesson = repaired.lesson_for(context, parameter.name)
            if lesson is not None:  # a rejected call said what it wants
                return repaired.repaired_value(lesson, context, parameter.name)
            return build_parameter(target, parameter, signature, hints, context)
    public = context.qualname if context.depth == 0 else ""  # the entry point's own parameter
    candidates = parameter_candidates(target, parameter, signature, hints, context.sources, public)
    if not candidates:
        raise CannotSynthesize(_why_untyped(parameter, hints, context.sources))
    annotated = candidates[0][1] is ScenarioSource.SYNTHESIZED
    if not annotated:  # guesses disagree: later variants lead with the next guess
        context.choices = max(context.choices, len(candidates))
    if not annotated and context.depth:  # a nested constructor may be called again with it
        context.nested_choices = max(context.nested_choices, len(candidates))
    turn = 0 if annotated else context.nested_turn if context.depth else context.variant
    if context.depth == 0 and context.parameter:  # pins reach every candidate, then flavour
        context.candidates[parameter.name] = len(candidates)
        if context.pinned is not None:
            turn, context.pinned = (
                context.pinned % len(candidates),
                context.pinned // len(candidates),
            )
    problems: list[str] = []
    empty_registries: list[str] = []  # an empty registry says less than what else failed
    for annotation, source in rotated(candidates, turn):
        try:
            with context.attempt():
                value = build(annotation, context, parameter.name)
        except CannotSynthesize as error:
            empty = isinstance(annotation, RegisteredKey)
            (empty_registries if empty else problems).append(str(error))
            continue
        context.credit(parameter.name, source)
        return value
    raise CannotSynthesize([*problems, *empty_registries][0])


def parameter_candidates(
    target: Callable[..., object],
    parameter: inspect.Parameter,
    signature: inspect.Signature,
    hints: dict[str, Any],
    sources: frozenset[str] = frozenset(SOURCES),
    qualname: str = "",
) -> list[tuple[Any, ScenarioSource]]:
    """Candidate annotations for a parameter, most trustworthy first, each with its source:
    the annotation, the stubs (also under the public ``qualname`` of the entry point), the
    docstring, then how it is used, named, and its siblings."""
    found: list[tuple[Any, ScenarioSource]] = []
    annotation = hints.get(parameter.name, parameter.annotation)
    annotated = annotation is not parameter.empty and not isinstance(annotation, str)
    vague = annotated and annotation in (Any, object)  # says nothing: guesses go first
    if annotated and not vague:
        found.append((annotation, ScenarioSource.SYNTHESIZED))
    plain = not annotated or vague or annotation in (str, bytes)
    if "heuristics" in sources and (plain or annotation is int):
        registries = registered_keys(target, parameter.name)  # a key it is looked up by:
        found[:0] = [(registry, ScenarioSource.HEURISTICS) for registry in registries]  # first
    if "subclasses" in sources and _is_first_required(signature, parameter):
        wanted = annotation if annotated and not vague else None  # realistic encoded input
        found += [(made, ScenarioSource.FACTORIES) for made in inverse_inputs(target, wanted)]
    vague_stubs: list[tuple[Any, ScenarioSource]] = []  # `Loader: type[Any]`: after the guesses
    if "stubs" in sources:
        stub = stub_signature(target, qualname)
        for typed in stub.parameters.get(parameter.name, []) if stub else []:
            (vague_stubs if _says_nothing(typed) else found).append((typed, ScenarioSource.STUBS))
    module = sys.modules.get(getattr(target, "__module__", "") or "")
    if "docstring_types" in sources:
        classes = package_classes(getattr(target, "__module__", "") or "")
        for typed in docstring_types(target, classes).parameters.get(parameter.name, []):
            found.append((typed, ScenarioSource.DOCSTRING_TYPES))
    borrowed = annotated and not vague and parameter.name in borrowed_hints(target)
    guessing = "heuristics" in sources and (not (annotated and not vague) or borrowed)
    narrows = "heuristics" in sources and annotated and not vague and own_class(annotation, target)
    read = guessing or narrows or "patterns" in sources  # how the body uses it (read once)
    usage = usage_through_callees(target, parameter.name) if read else None
    if narrows:  # `assert isinstance(key, PrivateKey)` under `key: AbstractKey`
        classes = package_classes(getattr(target, "__module__", "") or "")
        narrowed = checked_subclasses(usage, annotation, module, classes)
        found[:0] = [(checked, ScenarioSource.HEURISTICS) for checked in narrowed]
    if guessing:
        strong: list[Any] = []
        weak: list[Any] = []
        if usage is not None:
            classes = package_classes(getattr(target, "__module__", "") or "")
            strong, weak = infer_from_usage(usage, module, classes)
        guess = guess_from_name(parameter.name)
        if parameter.name in ("key", "k") and _on_mapping(target):
            guess = str  # the key of an item, not a key function
        named = classes_named_by(
            parameter.name,
            package_classes(getattr(target, "__module__", "") or ""),
            abbreviations=guess is None,
        )
        if usage is not None and usage.called:  # `renderer()`: the class, not an instance
            named = [type[c] if inspect.isclass(c) else c for c in named]
        for typed in [*strong[:3], *([guess] if guess is not None else []), *named, *weak[:2]]:
            found.append((typed, ScenarioSource.HEURISTICS))
        sibling = sibling_default(signature, parameter.name) if not found else None
        if sibling is None and not found:  # the same name's default elsewhere in the package
            sibling = namesake_default(target, parameter.name)
        if sibling is not None:  # the weakest hint: only when nothing else says anything
            found.append((sibling, ScenarioSource.HEURISTICS))
        elif not found and (
            unconstrained(usage) or (usage is None and stored_as_is(target, parameter.name))
        ):  # unused, or only stored (a named tuple's field): anything goes
            found.append((Any, ScenarioSource.HEURISTICS))
        elif not found and only_formatted(usage):  # only printed into a message: text does
            found.append((str, ScenarioSource.HEURISTICS))
    elif not found:  # the long-standing, always-on guesses for the most common names
        guess = guess_from_name(parameter.name) if parameter.name in _CLASSIC_NAMES else None
        if guess is not None:
            found.append((guess, ScenarioSource.SYNTHESIZED))
    parsed = (
        namespace_candidate(target, parameter.name, annotation)
        if "subclasses" in sources and (guessing or annotated)
        else None
    )
    if parsed is not None:  # what the package's parser makes for the subcommand it handles
        found.insert(0, (parsed, ScenarioSource.FACTORIES))
    if "nodes" in sources:  # a tree's own shape says more than names and annotated bases
        own = annotation if annotated else parameter.empty
        nodes = tree_candidates(target, parameter, signature, own)
        found[:0] = [(typed, ScenarioSource.NODES) for typed in nodes]
    if "examples" in sources:  # the package's own values: second, after what sizes the call
        examples = example_values(target, parameter.name)
        if examples is not None:
            found.insert(min(1, len(found)), (examples, ScenarioSource.EXAMPLES))
        texts = parser_texts(target, parameter.name)  # snippets of its grammar it accepts
        if texts is not None:
            found.insert(min(1, len(found)), (texts, ScenarioSource.EXAMPLES))
    textual = not annotated or annotation in (str, Any)
    if "nodes" in sources and textual and pysyntax.takes_python_source(target, parameter.name):
        found.insert(0, (pysyntax.PythonSource(), ScenarioSource.NODES))  # a parser of Python
    if "patterns" in sources:  # the package's own regular expressions: what a handler expects
        own = annotation if annotated else parameter.empty
        typed = pattern_candidates(target, parameter, signature, own, usage)
        at = _after_literals(found)
        found[at:at] = [(candidate, ScenarioSource.PATTERNS) for candidate in typed]
    found += vague_stubs
    if vague:
        found.append((annotation, ScenarioSource.SYNTHESIZED))
    if "package_data" in sources:  # the package's own files, beside the made-up ones
        found = with_package_files(target, parameter.name, found, ScenarioSource.PACKAGE_DATA)
    unique: dict[str, tuple[Any, ScenarioSource]] = {}
    for typed, source in found:
        unique.setdefault(repr(typed), (typed, source))
    return list(unique.values())


def _on_mapping(target: Callable[..., object]) -> bool:
    """Whether ``target`` is a method bound to a mapping (``d.setdefault(key)``)."""
    return isinstance(getattr(target, "__self__", None), (dict, abc.Mapping))


def _after_literals(found: list[tuple[Any, ScenarioSource]]) -> int:
    """Where generated text goes: after the package's own literal values (examples) and the
    exact values leading the list (a name's ``Literal``: a namespace URI), which are more
    realistic when they are accepted."""
    given = [i for i, (_, source) in enumerate(found) if source is ScenarioSource.EXAMPLES]
    at = given[-1] + 1 if given else 0
    while at < len(found) and typing.get_origin(found[at][0]) is typing.Literal:
        at += 1
    return at


def _says_nothing(annotation: Any) -> bool:
    """``type[Any]``: a stub that names no class (building it gives ``Any`` itself). A plain
    ``Any`` stays where it is: its flavours are what some calls need."""
    return typing.get_origin(annotation) is type and typing.get_args(annotation)[:1] in (
        (Any,),
        (object,),
    )


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
    typing_sources = sorted(sources - {"repair"})  # the repair types nothing up front
    asked = ["annotation", *(name.replace("_", " ") for name in typing_sources)]
    return (
        f"parameter {parameter.name!r} has no annotation or default, and no source says what it "
        f"is (asked: {', '.join(asked)})"
    )


def _element_annotation(
    parameter: inspect.Parameter, hints: dict[str, Any], target: Callable[..., object]
) -> Any:
    """What to pass twice for ``*iterables``-style parameters, or None to pass nothing: the
    annotation, else the package's class the singular names (``*namedTypes``: ``NamedType``),
    else what the singular's name suggests."""
    annotation = hints.get(parameter.name, parameter.annotation)
    if annotation is not parameter.empty and not isinstance(annotation, str):
        return annotation
    singular = parameter.name[:-1] if parameter.name.endswith("s") else ""
    if not singular:
        return None
    classes = package_classes(getattr(target, "__module__", "") or "")
    named = classes_named_by(singular, classes, abbreviations=False)
    return named[0] if named else guess_from_name(singular)
