"""The package's working calls related to an entry point, and what they make (:mod:`.results`).

A producer is one of the package's public callables: related to the entry point by name
(``parse`` for ``unparse``), by module (an extension beside the processor it registers), or
part of the package's top-level API. It is called the ways the package itself shows — its
docstring examples — then with synthesised arguments, and a parser also with texts of its
grammar grown from the package's own tokens (:mod:`.grown`); what it returns, and what its
receiver and arguments hold afterwards, is walked (:mod:`.reachable`) and offered.
"""

from __future__ import annotations

import ast
import inspect
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from apiprof.engine import timeouts
from apiprof.engine.discovery.discover import resolve_object
from apiprof.engine.scenarios.classnames import snake_case
from apiprof.engine.scenarios.doctests import docstring_of, example_blocks, example_globals
from apiprof.engine.scenarios.factories import public_values
from apiprof.engine.scenarios.grown import grown_texts
from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.parsetexts import PARSE_WORDS
from apiprof.engine.scenarios.reachable import reachable
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.engine.scenarios.stops import WATCH
from apiprof.engine.scenarios.taken import Taken
from apiprof.engine.scenarios.trial import TRIAL_SECONDS, quiet_stdio
from apiprof.model.records import NO_SIZE, Phase, ScenarioSource

SOURCE = "results"
"""The switch (``--no-results``): a producer's own arguments are built without it."""
MAX_PRODUCERS = 12
"""Related callables of the package called for one entry point at most."""
PRODUCER_VARIANTS = 2
"""Argument variants a producer is called with until one call returns."""
MAX_EXAMPLES = 3
"""Docstring examples of a producer run at most."""
MAX_PARSERS = 2
"""The package's parsers offered early (those nearest its top level: ``sqlparse.parse``,
``jmespath.compile``), whatever the entry point."""

Call = tuple[Callable[..., object], tuple[Any, ...], dict[str, Any]]


def example_roots(qualname: str, index: int) -> dict[str, object] | None:
    """The names the producer's ``index``-th docstring example (and those before it, as a
    doctest runs them) bound, by root name ``name:<variable>``, and the value of its last
    expression as ``result``; None when it raised or is not runnable."""
    try:
        obj = resolve_object(qualname)
    except Exception:
        return None
    blocks = [block for block in example_blocks(docstring_of(obj)) if block.index <= index]
    if not blocks or blocks[-1].index != index or any(block.skipped for block in blocks):
        return None
    module = getattr(obj, "__module__", None) or qualname.rpartition(".")[0]
    namespace: dict[str, Any] = dict(example_globals(module))
    before = dict(namespace)
    code = "".join(block.code for block in blocks)
    try:
        tree = ast.parse(code)
        last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        if last is not None:
            tree.body.pop()
        with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
            exec(compile(tree, f"<example {index} of {qualname}>", "exec"), namespace)
            result = (
                eval(compile(ast.Expression(last.value), "<last>", "eval"), namespace)
                if last is not None
                else None
            )
    except KeyboardInterrupt:
        raise
    except BaseException:  # the example fails here (it needs what the sandbox withholds)
        return None
    roots: dict[str, object] = {"result": result} if result is not None else {}
    roots.update(
        {
            f"name:{name}": value
            for name, value in namespace.items()
            if not name.startswith("_") and before.get(name, _UNSET) is not value
        }
    )
    return roots


_UNSET = object()


def producer_call(
    qualname: str, variant: int, sources: frozenset[str], text: str = ""
) -> Call | None:
    """The producer's synthesised call (without this source: no value is taken to make one),
    given ``text`` as its first argument when one is given."""
    from apiprof.engine.scenarios import synth  # synth builds what this module is asked for

    try:
        made = synth.synthesize(
            qualname, None, 0, variant, tuple(sorted(sources - {SOURCE}, key=_order))
        )
    except Exception:  # its arguments cannot be built, or building them raised
        return None
    call = made.target, made.args, made.kwargs
    return _given(call, text) if text and made.args else call


def _order(source: str) -> int:
    from apiprof.engine.scenarios.building import SOURCES

    return SOURCES.index(source) if source in SOURCES else len(SOURCES)


def run_call(call: Call) -> dict[str, object] | None:
    """Call once, quietly, within the trial time: the result, the receiver and the arguments
    afterwards, by root name; None when it raised or returned None with nothing else held."""
    target, args, kwargs = call
    try:
        with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
            result = target(*args, **kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException:  # the producer refused these arguments (or exited): not a working call
        return None
    roots: dict[str, object] = {"result": result}
    receiver = getattr(target, "__self__", None)
    if receiver is not None and not inspect.ismodule(receiver) and not inspect.isclass(receiver):
        roots["self"] = receiver
    roots.update({f"arg{index}": value for index, value in enumerate(args)})
    return roots


@dataclass(frozen=True)
class Offer:
    """An object a working call made: where it came from, and the object itself."""

    taken: Taken  # its slot left empty
    value: object
    rank: int  # the producer's place (lower: more closely related to the entry point)


def offers(
    qualname: str, sources: frozenset[str], deadline: float, *, siblings: bool = True
) -> Iterator[Offer]:
    """What the related producers' working calls make, nearest producer and object first,
    until ``deadline`` (``time.monotonic()``); ``siblings``: the entry point's sibling methods
    are producers too (not when its receiver cannot be built: they would need one)."""

    package = qualname.split(".")[0]
    for rank, producer in enumerate(producers(qualname, siblings=siblings)[:MAX_PRODUCERS]):
        if _stopped(qualname, producer):  # it ended an earlier worker: not called again
            continue
        try:  # all of its calls now, while they are announced as running
            made = list(_made_by(producer, rank, package, sources, deadline))
        finally:
            WATCH.idle()
        yield from made
        if time.monotonic() > deadline:
            return


def _stopped(qualname: str, producer: str) -> bool:
    """Announce the producer's calls as this entry point's (a call stuck in C or crashing
    ends the worker: the next one skips it); whether an earlier worker ended in them."""
    spec = ScenarioSpec(
        f"results:{qualname} <- {producer}", qualname, ScenarioSource.RESULTS, "", "", producer
    )
    return WATCH.stop_for(spec, NO_SIZE, Phase.COLLECT) is not None


def _made_by(
    producer: str, rank: int, package: str, sources: frozenset[str], deadline: float
) -> Iterator[Offer]:
    """What one producer's calls make: its docstring examples, its first working variant of
    synthesised arguments and, for a parser, texts of its grammar."""
    for index in _example_indexes(producer):  # the package's own calls of it first
        if time.monotonic() > deadline:
            return
        shown = example_roots(producer, index) or {}
        yield from _offered(Taken("", producer, -index, ""), shown, package, rank)
    for variant in range(PRODUCER_VARIANTS):
        if time.monotonic() > deadline:
            return
        call = producer_call(producer, variant, sources)
        roots = run_call(call) if call is not None else None
        if call is None or roots is None:
            continue
        yield from _offered(Taken("", producer, variant, ""), roots, package, rank)
        for text in _grammar_texts(producer, call, package):
            if time.monotonic() > deadline:
                return
            parsed = run_call(_given(call, text)) or {}
            yield from _offered(Taken("", producer, variant, "", text=text), parsed, package, rank)
        return


def _offered(made: Taken, roots: dict[str, object], package: str, rank: int) -> Iterator[Offer]:
    """Every object the roots hold, as offers taken from ``made``'s call."""
    for root, value in roots.items():
        for path, held in reachable(value, package):
            yield Offer(replace(made, root=root, path=path, kind=type(held).__name__), held, rank)


def _grammar_texts(producer: str, call: Call, package: str) -> list[str]:
    """For a parser whose working call was given a text first: texts of its grammar whose
    results show other kinds of nodes (:mod:`.grown`), the one it was given left out."""
    target, args, kwargs = call
    if not args or not isinstance(args[0], str) or not _parses(producer):
        return []
    grown = grown_texts(lambda text: target(text, *args[1:], **kwargs), (args[0],), package)
    return [text for text in grown if text != args[0]]


def _given(call: Call, text: str) -> Call:
    target, args, kwargs = call
    return target, (text, *args[1:]), kwargs


def _parses(qualname: str) -> bool:
    words = set(snake_case(qualname.rpartition(".")[2]).split("_"))
    return bool(words & PARSE_WORDS)


def _parser_rank(
    name: str, callable_: object, in_class: type | None, package: str
) -> tuple[bool, bool, bool, int]:
    """How surely a parser is the package's own, lowest first: what its top level exports
    (a function, or a method of a class it exports: ``Markdown.parse``) before its steps in
    submodules, a call that parses before a class named for parsing (calling ``BlockParser``
    makes a parser, not a tree), one that reads text before a step of a parse, then the
    shallower."""
    exported = in_class if in_class is not None else callable_
    top = sys.modules.get(package)
    at_top = getattr(top, getattr(exported, "__name__", ""), None) is exported
    return not at_top, inspect.isclass(callable_), not _reads_text(callable_), name.count(".")


def _reads_text(callable_: object) -> bool:
    """Whether a callable's one required parameter is text (annotated ``str`` or named so):
    ``parse(s)`` reads a document where ``parse(state)`` is a step of one."""
    try:
        signature = inspect.signature(callable_)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    required = [
        p
        for p in signature.parameters.values()
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.name != "self"
    ]
    if len(required) != 1:
        return False
    annotation = required[0].annotation
    return annotation in (str, "str") or guess_from_name(required[0].name) in (str, str | float)


def _example_indexes(qualname: str) -> list[int]:
    try:
        blocks = example_blocks(docstring_of(resolve_object(qualname)))
    except Exception:
        return []
    return [block.index for block in blocks if not block.skipped][:MAX_EXAMPLES]


def producers(qualname: str, *, siblings: bool = True) -> list[str]:
    """The package's public callables most likely to make what ``qualname`` takes, best first:
    those whose name is part of its name or holds it (``parse`` for ``unparse``), then those
    of its module or of its class's module (an extension that registers the processor), then
    the package's top-level ones. The entry point's sibling methods count as its module's:
    what one leaves in its receiver may be what the entry point needs (``extendMarkdown``)."""
    found = target_and_owner(qualname)
    if found is None:
        return []
    target, own_class, member = found
    module = getattr(own_class or target, "__module__", "") or qualname.rpartition(".")[0]
    package = qualname.split(".")[0]
    bare = member.lstrip("_").lower()
    ranked: list[tuple[bool, int, int, str, int]] = []
    callables = _package_callables(package)
    parsers = sorted(
        (_parser_rank(name, callable_, in_class, package), name)
        for name, callable_, in_class in callables
        if _parses(name)
    )
    leading = {name for _, name in parsers[:MAX_PARSERS]}  # the package's own, not its steps
    for position, (name, callable_, in_class) in enumerate(callables):
        own = own_class is not None and in_class is own_class
        if own and (not siblings or name.rpartition(".")[2] == member):
            continue  # the entry point itself, or methods of a receiver that cannot be built
        word = name.rpartition(".")[2].lstrip("_").lower()
        related = len(word) >= 4 and word != bare and (word in bare or bare in word)
        defined = getattr(in_class or callable_, "__module__", "") or ""
        if related:
            score = 0
        elif name in leading:
            score = 1  # a parser of the package: its trees hold every kind of node
        elif defined == module:  # sibling methods too: one may leave the receiver ready
            score = 2
        elif name.count(".") == 1 or defined.count(".") == 0:
            score = 3  # the package's top-level API
        else:
            continue
        ranked.append((defined != module, score, position, name, id(callable_)))
    chosen: dict[int, tuple[int, int, str]] = {}  # an inherited method once: its best class
    for _, score, position, name, function in sorted(ranked):
        chosen.setdefault(function, (score, position, name))
    ordered = [name for *_, name in sorted(chosen.values())]
    late = [name for name in ordered[MAX_PRODUCERS:] if name in leading]
    if late:  # many related names (`list` is in a dozen): the package's parser still gets its turn
        kept = [name for name in ordered if name not in late]
        ordered = [*kept[: MAX_PRODUCERS - len(late)], *late, *kept[MAX_PRODUCERS - len(late) :]]
    return ordered


def target_and_owner(qualname: str) -> tuple[object, type | None, str] | None:
    """The entry point, the class it is a member of (None for a function) and its member
    name; None when it cannot be imported."""
    owner_name, _, member = qualname.rpartition(".")
    try:
        target = resolve_object(qualname)
        owner = resolve_object(owner_name) if "." in owner_name else None
    except Exception:
        return None
    return target, owner if inspect.isclass(owner) else None, member


def _package_callables(package: str) -> list[tuple[str, object, type | None]]:
    """``(qualified name, callable, its class or None)`` of the package's public functions,
    concrete classes and the methods they define, in module order (each once, where it is
    defined)."""
    found: list[tuple[str, object, type | None]] = []
    for module_name, name, value in public_values(package, own_module=True):
        if inspect.isfunction(value):
            found.append((f"{module_name}.{name}", value, None))
        elif inspect.isclass(value) and _may_make(value):
            found.append((f"{module_name}.{name}", value, None))
            found += [
                (f"{module_name}.{name}.{attribute}", member, value)
                for attribute, member in _methods(value, package)
            ]
    return found


def _methods(cls: type, package: str) -> list[tuple[str, object]]:
    """The public methods ``cls`` has that the package defines, its own or inherited (an
    extension's ``getConfigs`` from its base class), by name."""
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        if (klass.__module__ or "").split(".")[0] != package:
            continue
        found.update(
            {
                name: member
                for name, member in vars(klass).items()
                if not name.startswith("_") and inspect.isfunction(member)
            }
        )
    return sorted(found.items())


def _may_make(cls: type) -> bool:
    return not inspect.isabstract(cls) and not issubclass(cls, BaseException)
