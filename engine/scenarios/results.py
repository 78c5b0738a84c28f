"""Values the package's own working calls make, for the entry points nothing else could call.

An entry point whose arguments or receiver cannot be made up often takes what another entry
point of the same package returns, or builds along the way: ``unparse`` wants a dict with one
root, which ``parse`` returns; a tree interpreter's ``visit_comparator`` wants the syntax-tree
node a parser makes for a comparison; a document converter's tree processor works only inside
a converter configured with its extension, which the extension's ``extendMarkdown(md)``
registers in ``md``. So the package's callables related to the entry point (:func:`.producers.producers`:
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

from collections.abc import Callable, Mapping

from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.producers import SOURCE, example_roots, producer_call, run_call
from apiprof.engine.scenarios.reachable import follow, shown_path
from apiprof.engine.scenarios.taken import RECEIVER, Taken
from apiprof.model.records import ScenarioSource

__all__ = ["RECEIVER", "SOURCE", "Taken", "taken_for", "taken_value"]


def taken_for(context: BuildContext, slot: str) -> Taken | None:
    return next((taken for taken in context.taken if taken.slot == slot), None)


def taken_value(taken: Taken, context: BuildContext) -> object:
    """The value ``taken`` names, made again: the producer called with the same synthesised
    arguments, the same path followed. Credited to the ``results`` source."""
    value = _rebuilt(taken, context.sources)
    context.credit(taken.slot if taken.slot != RECEIVER else "<receiver>", ScenarioSource.RESULTS)
    return value


def taken_remake(taken: Taken) -> Callable[[BuildContext], object]:
    """How to make the value ``taken`` names again, for each call (a receiver the call
    changes), without crediting it again."""
    return lambda context: _rebuilt(taken, context.sources)


def _rebuilt(taken: Taken, sources: frozenset[str]) -> object:
    if taken.variant < 0:  # a docstring example of the producer
        roots = example_roots(taken.producer, -taken.variant)
    else:
        call = producer_call(taken.producer, taken.variant, sources, taken.text)
        if call is None:
            raise CannotSynthesize(f"{taken.slot}: {taken.producer} cannot be called any more")
        roots = run_call(call)
    if roots is None or taken.root not in roots:
        raise CannotSynthesize(f"{taken.slot}: {taken.producer} raised when called again")
    try:
        return follow(roots[taken.root], taken.path)
    except Exception as error:
        raise CannotSynthesize(
            f"{taken.slot}: what {taken.producer} made no longer holds {shown_path(taken.path)}"
        ) from error


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


DISPATCHERS = ("visit", "generic_visit")
"""Methods that take any node and call the method its kind names."""


def handled_node(value: object, owner: type) -> bool:
    """Whether ``value`` is a node a dispatcher of ``owner`` has a ``visit_<kind>`` for."""
    if not isinstance(value, Mapping):
        return False
    kinds = [value.get(key) for key in KIND_KEYS if isinstance(value.get(key), str)]
    return any(callable(getattr(owner, f"visit_{kind}", None)) for kind in kinds)


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
