"""Receivers that need input before a method can work: an unpacker must be fed bytes before
``unpack`` returns anything, a decoder before ``read``. A fresh instance makes such methods fail
("no more data"), so — when the plain receiver is rejected — a sibling method that takes the
input (``feed``, ``write``, ``update``...) is called on it before each measured call, with
realistic input where the package makes it (the inverse class's output: ``Packer.pack`` for an
``Unpacker``). The feeding runs outside what is measured: only the method's own calls count.

Each call may consume what it was fed and leave the rest (``read_array_header`` reads a header
and leaves the items), so a receiver its class built is renewed before being fed again, and
every measured call starts from the same state: a Python ``__init__`` runs again on it with the
arguments it was built with; a receiver whose ``__init__`` is compiled is replaced by a new one
built from the same arguments (running a compiled ``__init__`` again may leak what the previous
run allocated: msgpack 1.1's ``Unpacker`` leaks its 1 MiB buffer each time), and the scenario
calls the method on the new one. Later variants feed other flavours of input (a packed map, not
a list, for ``read_map_header``).
"""

from __future__ import annotations

import copy
import inspect
from collections import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apiprof.engine.scenarios import parameters, values  # a cycle: see values.py
from apiprof.engine.scenarios.building import UNSIZED_LENGTH, BuildContext, CannotSynthesize
from apiprof.engine.scenarios.shown import shown_arguments
from apiprof.engine.scenarios.signatures import signature_of, type_hints
from apiprof.engine.scenarios.typedgetters import stored_for
from apiprof.engine.scenarios.wants import Want
from apiprof.model.records import ScenarioSource

FEEDERS = ("feed", "input", "write", "send", "push", "put", "update", "append", "extend", "add")
"""Names of methods that hand a receiver its input, most specific first."""
OPENERS = ("open", "start", "begin", "connect", "setup")
"""Names of methods that make a receiver ready (no arguments): a method of a class that has one
may need it called first (``close`` after ``open``), and the opener itself works once per
receiver (a second ``open`` is refused), so it gets a renewed receiver for every call."""
TAKERS = (
    "pop",
    "popall",
    "remove",
    "discard",
    "drop",
    "delete",
    "index",
    "replace",
    "getlist",
    "move_to_end",
)
"""Names of methods that take out (or find) what they are given: a fresh, empty receiver has
none of it, so the receiver is first given the very argument of the call."""


@dataclass
class Warmup:
    """A sibling call to make on the receiver before each measured call: ``target, args =
    warmup(target, args)`` renews the receiver, feeds it, and hands back the call to make (on
    the new receiver, when one was built)."""

    feeder: str  # the method's name: "feed"
    value: object
    label: str  # "Unpacker.feed"
    receiver: object
    renew: Callable[[], object] | None = None  # resets the receiver to how it was built
    rebuild: Callable[[], object] | None = None  # builds a receiver as it was built
    # > 0: the feeder is given the call's own first arguments (that many) instead of ``value``
    # (``add(x)`` before ``remove(x)``), the first repeated when the feeder wants more
    # (``d[key] = key`` before ``d.pop(key)``)
    own_arguments: int = 0
    opens: bool = False  # the feeder takes no argument (an opener); "" renews the receiver only
    # the feeder's own arguments, all of them (a preparing sibling: :mod:`.preparers`)
    arguments: tuple[Any, ...] | None = None
    shown_as: str = ""  # how a person reads a warm-up that is none of the above
    # fed after the call's own arguments in their place (``d[key] = 7`` before ``get_int(key)``)
    stored: tuple[Any, ...] = ()

    def __call__(
        self, target: Callable[..., object] | None = None, args: tuple[Any, ...] = ()
    ) -> tuple[Callable[..., object] | None, tuple[Any, ...]]:
        if self.rebuild is not None:
            old, self.receiver = self.receiver, self.rebuild()
            target, args = _rebound(target, args, old, self.receiver)
        elif self.renew is not None:
            self.renew()
        if self.opens:
            if self.feeder:
                getattr(self.receiver, self.feeder)()
            return target, args
        feed = getattr(self.receiver, self.feeder)
        if self.arguments is not None:
            fed = feed(*self.arguments)
            if inspect.isgenerator(fed):  # its body runs (and sets what it sets) when advanced
                next(fed, None)
        elif self.own_arguments:
            own = [value for value in args if value is not self.receiver] or [self.value]
            count = len(own) if self.own_arguments == EVERY else self.own_arguments
            kept = count - len(self.stored)
            fed = feed(*(own + own[:1] * count)[:kept], *self.stored)
        else:
            fed = feed(self.value)
        if persistent_update(self.receiver, fed):  # `v2 = v.append(x)`: the call is on v2
            return _rebound(target, args, self.receiver, fed)
        return target, args

    @property
    def shown(self) -> str:
        """``Unpacker.feed(b'...')``, as a person reads it."""
        if self.shown_as:
            return self.shown_as
        if self.opens:
            return f"{self.label}()" if self.feeder else f"{self.label}.__init__ again"
        if self.arguments is not None:
            return f"{self.label}{shown_arguments(self.arguments, {})}"
        if self.own_arguments and self.stored:
            return (
                f"{self.label}(<the call's own arguments>, {shown_arguments(self.stored, {})[1:]}"
            )
        if self.own_arguments and self.value is None:
            return f"{self.label}(<the call's own arguments>)"
        return f"{self.label}{shown_arguments((self.value,) * max(self.own_arguments, 1), {})}"


def feeds(member: str) -> bool:
    """Whether ``member`` hands the receiver input by its name: a feeder, or a word of it is
    one (``raw_append``, ``add_item``)."""
    return member in FEEDERS or any(word in FEEDERS for word in member.lower().split("_"))


def persistent_update(receiver: object, fed: object) -> bool:
    """Whether feeding ``receiver`` left it as it was and returned an updated copy of its class
    instead (a persistent or immutable collection: ``v.append(x)`` returns a new vector); a
    feeder that returns ``self`` for chaining, or anything else, fed the receiver itself."""
    return fed is not receiver and type(fed) is type(receiver)


def _rebound(
    target: Callable[..., object] | None, args: tuple[Any, ...], old: object, new: object
) -> tuple[Callable[..., object] | None, tuple[Any, ...]]:
    """The call on ``old`` made on ``new``: a method bound to it, or one given it first."""
    if target is not None and getattr(target, "__self__", None) is old:
        target = getattr(new, target.__name__)
    if args and args[0] is old:
        args = (new, *args[1:])
    return target, args


def feeder_of(owner: type, member: str) -> str:
    """The name of ``owner``'s public method that takes one input, or "" (also when the method
    profiled is itself a feeder: it is measured on the plain receiver)."""
    if feeds(member):
        return ""
    for name in FEEDERS:
        method = getattr(owner, name, None)
        if callable(method) and _required_count(method) == 1:
            return name
    if member in TAKERS or member in ("popitem", "peek"):  # a mapping emptied by the call
        return "__setitem__" if _sets_items(owner) else ""
    return ""


def _own_argument_feeder(owner: type, member: str) -> tuple[str, int] | None:
    """For a method that takes out what it is given (:data:`TAKERS`) and has required
    parameters: the feeder to give the receiver those arguments first and how many it takes
    (one of :data:`FEEDERS` taking at most as many as the method, else ``__setitem__`` of a
    mapping), or None."""
    if member not in TAKERS:
        looks_up = not feeds(member) and _looks_up_a_key(owner, member)  # add(key) puts it
        return ("__setitem__", 2) if looks_up else None
    wanted = _required_count(getattr(owner, member))
    if wanted < 1:  # `remove(*strings)`: an adder taking as many is given them all first
        many = _takes_many(getattr(owner, member))
        adders = [n for n in FEEDERS if n != "update"]  # update takes many mappings
        adder = next((n for n in adders if many and _takes_many(getattr(owner, n, None))), "")
        return (adder, EVERY) if adder else None
    counts = {
        name: _required_count(getattr(owner, name))
        for name in FEEDERS
        if name != "update" and callable(getattr(owner, name, None))  # update takes many
    }
    for exact in (True, False):  # `add(key, value)` before `remove(key, value)` first
        for name, count in counts.items():
            if count == wanted or (not exact and 1 <= count < wanted):
                return name, count
    if _sets_items(owner):
        return "__setitem__", 2
    return None


def _opened(instance: object, owner: type, member: str, context: BuildContext) -> Warmup | None:
    """For a class with an opener (:data:`OPENERS`): its other methods get it called first,
    on a renewed receiver; the opener itself gets a renewed receiver (when the variant asks)."""
    opener = next(
        (
            name
            for name in OPENERS
            if callable(getattr(owner, name, None)) and _required_count(getattr(owner, name)) == 0
        ),
        "",
    )
    if not opener or not context.pick([False, True]):
        return None
    renew, rebuild = renewal(instance, context)
    if member == opener and renew is None and rebuild is None:
        return None  # a receiver made by a factory cannot be renewed
    feeder = "" if member in OPENERS else opener
    label = f"{owner.__name__}.{feeder}" if feeder else owner.__name__
    context.credit(f"<{label} before each call>", ScenarioSource.FACTORIES)
    return Warmup(feeder, None, label, instance, renew, rebuild, opens=True)


def asked_renewal(
    instance: object,
    owner: type,
    context: BuildContext,
    *,
    remake: Callable[[BuildContext], object] | None = None,
) -> Warmup | None:
    """A receiver renewed before each call when a repair learned that the method's first call
    changed it (:data:`~.wants.Want.RENEWED`: ``remove(x)`` worked once, then not again);
    ``remake``: how a receiver the package's own calls made is made again."""
    if not any(lesson.want is Want.RENEWED for lesson in context.lessons):
        return None
    if remake is not None:
        again = "the package's call that made it, made again"
        rebuild = lambda: remake(context)  # noqa: E731  # the context it was first made in
        renewed: Warmup | None = Warmup(
            "", None, owner.__name__, instance, rebuild=rebuild, opens=True, shown_as=again
        )
    else:
        renewed = _renewed(instance, owner, context, asked=True)
    if renewed is not None:
        context.credit(f"<{owner.__name__} built again before each call>", ScenarioSource.REPAIRED)
    return renewed


def _renewed(
    instance: object, owner: type, context: BuildContext, *, asked: bool = False
) -> Warmup | None:
    """For a feeder itself (``append``, ``add``): a receiver renewed before each call, when the
    variant (or a lesson: ``asked``) asks — a feeder that refuses what it already holds
    (``Key "x" already exists``) works once on a receiver, and every measured call must start
    from the same state. The receiver is built again from copies of its arguments."""
    renew, rebuild = renewal(instance, context, fresh=True)
    if renew is None and rebuild is None:
        return None
    if not asked and not context.pick([False, True]):
        return None
    if not asked:  # else the lesson is what made it, credited as the repair
        context.credit(f"<{owner.__name__} renewed before each call>", ScenarioSource.FACTORIES)
    return Warmup("", None, owner.__name__, instance, renew, rebuild, opens=True)


KEY_NAMES = ("key", "k", "keyname")
"""First parameters of a mapping's method that name one of its items."""


def _looks_up_a_key(owner: type, member: str) -> bool:
    """Whether ``member`` of a mapping takes one of its keys first (``restore_default(key)``):
    an empty receiver has none, so the receiver is first given the call's key."""
    if not _sets_items(owner) or not _is_mapping(owner):
        return False
    method = getattr(owner, member, None)
    try:
        names = list(inspect.signature(method).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    own = names[1:] if names[:1] == ["self"] else names
    return bool(own) and own[0] in KEY_NAMES


def _is_mapping(owner: type) -> bool:
    """Whether ``owner`` is a dict or registered mapping (its ``update`` takes key-value pairs)."""
    return issubclass(owner, (dict, abc.Mapping))


def _sets_items(owner: type) -> bool:
    """Whether ``owner[key] = value`` puts an item in (a mapping)."""
    setter = getattr(owner, "__setitem__", None)
    return callable(setter) and _required_count(setter) == 2


def warm_receiver(
    instance: object, owner: type, member: str, context: BuildContext
) -> Warmup | None:
    """The warm-up for a method of ``owner`` called on ``instance``, when ``owner`` has a
    feeder and the variant asks for one (plain first: most methods work without; odd variants
    feed, each with the next flavour of input); raises CannotSynthesize when no input for the
    feeder can be built."""
    taken = _own_argument_feeder(owner, member)
    if taken is not None:  # `remove(x)` on an empty receiver: `add(x)` first
        if not context.pick([False, True]):
            return None
        name, count = taken
        if 0 < count < _positional_count(getattr(owner, name, None)):  # add(key, item=None)
            count = context.pick([count, count + 1])  # the key as its own item too, in turn
        label = f"{owner.__name__}.{name}"
        context.credit(f"<{label} before each call>", ScenarioSource.FACTORIES)
        renew, rebuild = renewal(instance, context)
        stored = stored_for(member, instance) if name == "__setitem__" else None
        if stored is not None:  # `get_int(key)`: an int under the key
            return Warmup(name, None, label, instance, renew, rebuild, count, stored=stored)
        return Warmup(name, None, label, instance, renew, rebuild, own_arguments=count)
    name = feeder_of(owner, member)
    if not name:
        opened = _opened(instance, owner, member, context)
        if opened is not None or not feeds(member):
            return opened
        return _renewed(instance, owner, context)
    if not context.pick([False, True]):
        return None
    method = getattr(owner, name)
    signature = signature_of(method, context.sources)
    if signature is None:
        return None
    parameter = _required(signature)[1]  # after self: the key, for __setitem__
    inner = BuildContext(
        context.qualname,
        UNSIZED_LENGTH,
        context.seed,
        context.current_variant() // 2,
        owner,
        sources=context.sources,
    )
    inner.depth = context.depth + 1
    inner.feeding = True
    try:
        if name == "update" and _is_mapping(owner):  # a mapping is updated from a mapping
            value = values.build(dict[str, str], inner, parameter.name)
        else:
            value = parameters.build_parameter(
                method, parameter, signature, type_hints(method), inner
            )
    except CannotSynthesize as error:
        raise CannotSynthesize(f"feeding the receiver with {name}: {error}") from None
    context.choices = max(context.choices, 2 * inner.choices)
    label = f"{owner.__name__}.{name}"
    context.credit(f"<{label} before each call>", ScenarioSource.FACTORIES)
    renew, rebuild = renewal(instance, context)
    pair = 2 if name == "__setitem__" else 0  # `d[key] = key`
    return Warmup(name, value, label, instance, renew, rebuild, own_arguments=pair)


def renewal(
    instance: object, context: BuildContext, *, fresh: bool = False
) -> tuple[Callable[[], object] | None, Callable[[], object] | None]:
    """How to renew the receiver (neither when a factory built it: its arguments are not the
    class's): ``(renew, None)`` runs its Python ``__init__`` again with the arguments its class
    was called with; ``(None, rebuild)`` calls the class with them for a new receiver when
    ``__init__`` is compiled code, which may allocate afresh without freeing what the previous
    run made — msgpack 1.1's C ``Unpacker`` leaks its 1 MiB buffer each time, and a scenario
    renews its receiver thousands of times. ``fresh``: with copies of those arguments each time
    (a container the receiver wraps and the call fills would come back filled)."""
    made = context.made.get(id(instance))
    if made is None or made[0] is not instance:
        return None, None
    _, args, kwargs = made
    cls = type(instance)
    initialize = cls.__init__

    def arguments() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return _copied((args, kwargs)) if fresh else (args, kwargs)

    if not inspect.isfunction(initialize):

        def rebuild() -> object:
            again, named = arguments()  # one copy of both
            return cls(*again, **named)

        return None, rebuild

    def renew() -> None:
        again, named = arguments()
        initialize(instance, *again, **named)

    return renew, None


def _copied(value: Any) -> Any:
    """A deep copy of ``value``, or ``value`` itself when it cannot be copied."""
    try:
        return copy.deepcopy(value)
    except Exception:
        return value


EVERY = -1
"""``own_arguments`` of a feeder given all of the call's own arguments (``add(*strings)``
before ``remove(*strings)``)."""


def _takes_many(method: object) -> bool:
    """Whether ``method`` takes ``*args`` (and no other required parameter)."""
    signature = signature_of(method) if callable(method) else None
    if signature is None:
        return False
    kinds = [p.kind for p in signature.parameters.values()]
    return inspect.Parameter.VAR_POSITIONAL in kinds and len(_required(signature)) <= 1


def _positional_count(method: object) -> int:
    """Positional parameters besides ``self``, optional ones too (0 when unreadable)."""
    signature = signature_of(method) if callable(method) else None
    if signature is None:
        return 0
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in positional for p in signature.parameters.values()) - 1


def _required_count(method: Callable[..., object]) -> int:
    """Required parameters besides ``self`` (-1 when the signature cannot be read)."""
    signature = signature_of(method)
    return -1 if signature is None else len(_required(signature)) - 1


def _required(signature: inspect.Signature) -> list[inspect.Parameter]:
    return [
        p
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
