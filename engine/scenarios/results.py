"""Values the package's own working calls make, for the entry points nothing else could call.

An entry point whose arguments or receiver cannot be made up often takes what another entry
point of the same package returns, or builds along the way: ``unparse`` wants a dict with one
root, which ``parse`` returns; a tree interpreter's ``visit_comparator`` wants the syntax-tree
node a parser makes for a comparison; a document converter's tree processor works only inside
a converter configured with its extension, which the extension's ``extendMarkdown(md)``
registers in ``md``. So the package's callables related to the entry point (:func:`producers`:
by name, module, then the top-level API) are called with synthesised arguments inside the
sandboxed worker; what each returns, and what its receiver and arguments hold afterwards, is
walked (:mod:`.reachable`), and an object that fits the slot is used — of the receiver's class,
of the type the rejected call was given, or a node whose type the visitor method names.

A value taken is plain data (:class:`Taken`): the producer's qualified name and argument
variant, where the value sits (its result, receiver or an argument) and the path to it. The
scenario's setup rebuilds it the same way (:func:`taken_value`), so the measuring worker
calls the entry point on the same kind of object. Switchable (``--no-results``); credited as
the ``results`` source.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from apiprof.engine import timeouts
from apiprof.engine.discovery.discover import resolve_object
from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize, name_of
from apiprof.engine.scenarios.doctests import docstring_of, example_blocks, example_globals
from apiprof.engine.scenarios.factories import import_package
from apiprof.engine.scenarios.reachable import Path, follow, reachable, shown_path
from apiprof.engine.scenarios.trial import TRIAL_SECONDS, quiet_stdio
from apiprof.model.records import ScenarioSource

SOURCE = "results"
"""The switch (``--no-results``) and the source credited."""
MAX_PRODUCERS = 10
"""Related callables of the package called for one entry point at most."""
PRODUCER_VARIANTS = 2
"""Argument variants a producer is called with until one call returns."""
MAX_EXAMPLES = 3
"""Docstring examples of a producer run at most."""

RECEIVER = "self"
"""The slot name of the instance a method is called on (as pins name it)."""


@dataclass(frozen=True)
class Taken:
    """One slot's value, taken from a working call of the package: rebuilt from this alone."""

    slot: str  # the entry point's parameter, or "self" for its receiver
    producer: str  # the qualified name of the callable that made it
    variant: int  # the producer's synthesised argument variant
    root: str  # "result", "self" (its receiver afterwards) or "arg<K>" (its K-th argument)
    path: Path = ()
    kind: str = ""  # the class of the value, as shown

    def literal(self) -> tuple[Any, ...]:
        return (self.slot, self.producer, self.variant, self.root, self.path, self.kind)

    @classmethod
    def from_literal(cls, data: tuple[Any, ...]) -> Taken:
        slot, producer, variant, root, path, kind = data
        steps = tuple((str(step), key) for step, key in path)
        return cls(str(slot), str(producer), int(variant), str(root), steps, str(kind))

    def describe(self) -> str:
        """``receiver: the TocTreeprocessor that TocExtension.extendMarkdown() leaves in its
        receiver, at self.md.treeprocessors[2]`` (what a scenario's description says)."""
        subject = "receiver" if self.slot == RECEIVER else self.slot
        made = _short(self.producer)
        call = f"docstring example {-self.variant} of {made}" if self.variant < 0 else f"{made}()"
        if self.root == "result":
            origin = f"{call} returns"
        elif self.root == "self":
            origin = f"{call} leaves in its receiver"
        elif self.root.startswith("name:"):
            origin = f"{call} binds to {self.root[5:]}"
        else:
            origin = f"{call} leaves in its argument {self.root[3:]}"
        where = f"{self.root.removeprefix('name:')}{shown_path(self.path)}"
        return f"{subject}: the {self.kind} that {origin}" + (f", at {where}" if self.path else "")


def _short(qualname: str) -> str:
    """``TocExtension.extendMarkdown`` for ``markdown.extensions.toc.TocExtension.extend...``."""
    parts = qualname.split(".")
    classes = [part for part in parts[:-1] if part[:1].isupper()]
    return ".".join([*classes[-1:], parts[-1]]) if classes else qualname


def taken_for(context: BuildContext, slot: str) -> Taken | None:
    return next((taken for taken in context.taken if taken.slot == slot), None)


def taken_value(taken: Taken, context: BuildContext) -> object:
    """The value ``taken`` names, made again: the producer called with the same synthesised
    arguments, the same path followed. Credited to the ``results`` source."""
    value = _rebuilt(taken, context.sources)
    context.credit(taken.slot if taken.slot != RECEIVER else "<receiver>", ScenarioSource.RESULTS)
    return value


def _rebuilt(taken: Taken, sources: frozenset[str]) -> object:
    if taken.variant < 0:  # a docstring example of the producer
        roots = example_roots(taken.producer, -taken.variant)
    else:
        call = producer_call(taken.producer, taken.variant, sources)
        if call is None:
            raise CannotSynthesize(f"{taken.slot}: {taken.producer} cannot be called any more")
        roots = _run(call)
    if roots is None or taken.root not in roots:
        raise CannotSynthesize(f"{taken.slot}: {taken.producer} raised when called again")
    try:
        return follow(roots[taken.root], taken.path)
    except Exception as error:
        raise CannotSynthesize(
            f"{taken.slot}: what {taken.producer} made no longer holds {shown_path(taken.path)}"
        ) from error


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


def producer_call(qualname: str, variant: int, sources: frozenset[str]) -> Call | None:
    """The producer's synthesised call (without this source: no value is taken to make one)."""
    from apiprof.engine.scenarios import synth  # synth builds what this module is asked for

    try:
        made = synth.synthesize(
            qualname, None, 0, variant, tuple(sorted(sources - {SOURCE}, key=_order))
        )
    except Exception:  # its arguments cannot be built, or building them raised
        return None
    return made.target, made.args, made.kwargs


def _order(source: str) -> int:
    from apiprof.engine.scenarios.building import SOURCES

    return SOURCES.index(source) if source in SOURCES else len(SOURCES)


def _run(call: Call) -> dict[str, object] | None:
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


def offers(qualname: str, sources: frozenset[str], deadline: float) -> Iterator[Offer]:
    """What the related producers' working calls make, nearest producer and object first,
    until ``deadline`` (``time.monotonic()``)."""
    import time

    package = qualname.split(".")[0]
    for rank, producer in enumerate(producers(qualname)[:MAX_PRODUCERS]):
        for index in _example_indexes(producer):  # the package's own calls of it first
            if time.monotonic() > deadline:
                return
            for root, value in (example_roots(producer, index) or {}).items():
                for path, held in reachable(value, package):
                    taken = Taken("", producer, -index, root, path, type(held).__name__)
                    yield Offer(taken, held, rank)
        for variant in range(PRODUCER_VARIANTS):
            if time.monotonic() > deadline:
                return
            call = producer_call(producer, variant, sources)
            roots = _run(call) if call is not None else None
            if roots is None:
                continue
            for root, value in roots.items():
                for path, held in reachable(value, package):
                    taken = Taken("", producer, variant, root, path, type(held).__name__)
                    yield Offer(taken, held, rank)
            break


def _example_indexes(qualname: str) -> list[int]:
    try:
        blocks = example_blocks(docstring_of(resolve_object(qualname)))
    except Exception:
        return []
    return [block.index for block in blocks if not block.skipped][:MAX_EXAMPLES]


def producers(qualname: str) -> list[str]:
    """The package's public callables most likely to make what ``qualname`` takes, best first:
    those whose name is part of its name or holds it (``parse`` for ``unparse``), then those
    of its module or of its class's module (an extension that registers the processor), then
    the package's top-level ones. Never the entry point itself or its own class's methods
    (they need the very receiver that is missing)."""
    try:
        target = resolve_object(qualname)
    except Exception:
        return []
    owner_name, _, member = qualname.rpartition(".")
    owner = _resolved(owner_name)
    own_class = owner if inspect.isclass(owner) else None
    module = getattr(own_class or target, "__module__", "") or owner_name
    package = qualname.split(".")[0]
    bare = member.lstrip("_").lower()
    ranked: list[tuple[int, int, str]] = []
    for position, (name, callable_, in_class) in enumerate(_package_callables(package)):
        if name == qualname or (own_class is not None and in_class is own_class):
            continue
        word = name.rpartition(".")[2].lstrip("_").lower()
        related = len(word) >= 4 and word != bare and (word in bare or bare in word)
        defined = getattr(in_class or callable_, "__module__", "") or ""
        if related:
            score = 0
        elif defined == module:
            score = 1
        elif name.count(".") == 1 or defined.count(".") == 0:
            score = 2  # the package's top-level API
        else:
            continue
        ranked.append((score, position, name))
    return [name for *_, name in sorted(ranked)]


def _resolved(qualname: str) -> object:
    try:
        return resolve_object(qualname) if "." in qualname else None
    except Exception:
        return None


def _package_callables(package: str) -> list[tuple[str, object, type | None]]:
    """``(qualified name, callable, its class or None)`` of the package's public functions,
    concrete classes and the methods they define, in module order (each once)."""
    found: list[tuple[str, object, type | None]] = []
    seen: set[int] = set()
    for module_name in import_package(package):
        module = sys.modules.get(module_name)
        for name, value in sorted(vars(module).items()) if module is not None else ():
            if name.startswith("_") or id(value) in seen:
                continue
            if (getattr(value, "__module__", "") or "") != module_name:
                continue  # where it is defined, once
            seen.add(id(value))
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


# -- what fits a slot ----------------------------------------------------------------------

VISITOR_PREFIXES = ("visit_", "depart_", "leave_", "handle_", "on_")
"""Method names that name the kind of node they handle (leading ``_`` ignored)."""
KIND_KEYS = ("type", "kind", "node_type", "nodetype", "tag")
"""Keys a syntax-tree node held as a mapping names its kind under."""


def visited_kind(member: str) -> str:
    """``comparator`` for ``visit_comparator`` ("" for other names)."""
    bare = member.lstrip("_")
    prefix = next((p for p in VISITOR_PREFIXES if bare.startswith(p) and len(bare) > len(p)), "")
    return bare[len(prefix) :] if prefix else ""


def node_of_kind(value: object, kind: str) -> bool:
    """Whether ``value`` is a node of ``kind``: a mapping naming it under a kind key, or an
    object of a class of that name."""
    if isinstance(value, Mapping):
        return any(value.get(key) == kind for key in KIND_KEYS if key in value)
    return type(value).__name__ == kind


def fits_like(value: object, like: object) -> bool:
    """Whether ``value`` can stand where the rejected call had ``like``: of the same class,
    and not a plain scalar (a word found anywhere says nothing)."""
    if like is None or isinstance(like, (str, bytes, int, float, bool)):
        return False
    if type(value) is not type(like) or _empty(value):
        return False
    if isinstance(like, (list, tuple)) and like:  # of the same items: a list of words
        return type(value[0]) is type(like[0])  # type: ignore[index]
    return True


def _empty(value: object) -> bool:
    try:
        return len(value) == 0  # type: ignore[arg-type]
    except TypeError:
        return False


def described(taken: tuple[Taken, ...]) -> str:
    return "; ".join(item.describe() for item in taken)


def producer_name(taken: Taken) -> str:
    return name_of(taken.producer)
