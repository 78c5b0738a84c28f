"""Scenarios of the self-driven capture (:mod:`~apiprof.engine.scenarios.drive`): the drivers
it runs, and the scenarios replaying what they passed to an entry point mid-stream.

A *driver* is a working scenario of another entry point (``yaml.safe_load`` on a small
document, ``Environment.from_string(...).render()``), run once at its smallest size; a *round
trip* feeds one driver's text result (what ``dump``, ``render`` or ``format`` produced) to
another driver in place of its text argument, so the package's own output gives a well-formed
input. A driver is named by its scenario id, a round trip by ``CONSUMER <- PRODUCER``.

A captured call is replayed in one of two ways, both measuring the target's own call only:

* its arguments (receiver included) could be pickled when the call started: setup keeps the
  pickle and each measured call unpickles a fresh copy first (not measured — a scanner
  consumes its tokens, a state machine moves on), then calls the target;
* they could not (a receiver holding a generator, an open stream): the driver runs again in
  each measured run, building the state afresh, and only the target's calls inside it are
  measured (``targets``).
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from apiprof.engine.scenarios import temppaths
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.consume import CONSUME_LIMIT, UNSIZED_CONSUME_LIMIT
from apiprof.engine.scenarios.doctexts import docstring_text
from apiprof.engine.scenarios.grammartexts import grammar_spec
from apiprof.engine.scenarios.patterntexts import pattern_spec
from apiprof.engine.scenarios.replayed import captured_spec, replay_call, resized
from apiprof.engine.scenarios.spec import ScenarioSpec, compile_scenario, text_producer
from apiprof.model.checks import MAX_SCENARIO_ID, qualname_problem
from apiprof.model.records import ScenarioSource

ROUND_TRIP = " <- "
"""Joins a round trip's consumer and producer ids: ``synth:yaml.safe_load <- synth:yaml.dump``."""

Arguments = tuple[tuple[Any, ...], dict[str, Any]]


def unsized(spec: ScenarioSpec) -> ScenarioSpec:
    """``spec`` at its smallest size, as an unsized scenario (a driver runs once, small)."""
    if not spec.size_axis:
        return spec
    size = min(spec.sizes) if spec.sizes else 10
    return replace(spec, setup=f"{spec.size_axis} = {size}\n{spec.setup}", size_axis="", sizes=())


def takes_arguments(spec: ScenarioSpec) -> bool:
    """Whether ``spec`` is written as ``target(*args, **kwargs)`` (synthesised, captured,
    observed scenarios), so a round trip can put a text in place of one of its arguments."""
    return "args, kwargs" in spec.setup and "target(*args, **kwargs)" in spec.call


def round_trip_spec(consumer: ScenarioSpec, producer: ScenarioSpec) -> ScenarioSpec:
    """``consumer`` with its first text argument replaced by what ``producer`` returns."""
    return replace(
        consumer,
        id=f"roundtrip:{consumer.id}{ROUND_TRIP}{producer.id}",
        setup=(
            "from apiprof.engine.scenarios.drivenspecs import output_of, with_text\n"
            f"_produced = output_of({producer.setup!r}, {producer.call!r})\n"
            f"{consumer.setup}"
            "args, kwargs = with_text(args, kwargs, _produced)\n"
        ),
        description=f"{consumer.qualname} on what {producer.qualname} returned",
        inputs=f"{consumer.qualname}(<what {producer.inputs or producer.qualname} returned>)",
    )


def output_of(setup: str, call: str) -> object:
    """What a driver's call returns (its setup and call run once, in a namespace of their own)."""
    spec = ScenarioSpec("producer", "producer", ScenarioSource.SYNTHESIZED, "", setup, call)
    return compile_scenario(spec, None)()


def with_text(args: tuple[Any, ...], kwargs: dict[str, Any], text: object) -> Arguments:
    """The arguments with the first one of ``text``'s type (str or bytes) replaced by it."""
    for index, value in enumerate(args):
        if type(value) is type(text):
            return (*args[:index], text, *args[index + 1 :]), kwargs
    for name, value in kwargs.items():
        if type(value) is type(text):
            return args, {**kwargs, name: text}
    raise TypeError(f"no {type(text).__name__} argument to put the produced text in")


def driver_spec(ref: str, drivers: Mapping[str, ScenarioSpec]) -> ScenarioSpec | None:
    """The driver (unsized) a reference names: a driver's id, a variant of one fed a richer
    value, or a round trip of two; None when it names none (a worker may not invent the code
    another worker runs)."""
    if ref in drivers:
        return unsized(drivers[ref])
    kind, _, rest = ref.partition(":")
    if kind == "doctext":
        return doctext_spec(ref)
    if kind == "grammar":
        return grammar_spec(ref)
    if kind == "patterns":
        return pattern_spec(ref)
    if kind in VARIANTS and rest in drivers:
        return richer_spec(unsized(drivers[rest]), kind)
    consumer_ref, _, producer_ref = rest.partition(ROUND_TRIP)
    if kind != "roundtrip" or consumer_ref not in drivers:
        return None
    producer = driver_spec(producer_ref, drivers) if producer_ref != ref else None
    return round_trip_spec(unsized(drivers[consumer_ref]), producer) if producer else None


def doctext_spec(ref: str) -> ScenarioSpec | None:
    """The producer of a text a docstring shows, ``doctext:QUALNAME#K`` (see
    :mod:`.doctexts`); None for a malformed name."""
    qualname, _, index = ref.removeprefix("doctext:").rpartition("#")
    if qualname_problem(qualname) or not index.isdigit():
        return None
    return text_producer(
        ref,
        qualname,
        ScenarioSource.DOCSTRING,
        docstring_text,
        int(index),
        description=f"literal block {index} of the docstring of {qualname}",
        inputs=f"<literal block {index} of the docstring of {qualname}>",
    )


# -- richer values for producers ------------------------------------------------------------------


def rich_value(kind: str) -> object:
    """A value showing much of what a serialiser can write, the same for every package (not a
    document of any format): nested mappings and lists, numbers, flags, None, a text over two
    lines and one with quotes, the same list twice (anchors, references); ``rich`` adds a
    tuple and bytes, which plain-data serialisers refuse."""
    shared = [1, 2]
    value: dict[str, object] = {
        "name": "two words",
        "count": 3,
        "ratio": 2.5,
        "flag": True,
        "empty": None,
        "items": [1, "a", [2, 3], {"key": "value"}],
        "lines": "line one\nline two\n",
        "quoted": 'it\'s: "quoted" #',
        "same": [shared, shared],
    }
    if kind == "rich":
        value.update(pair=(1, "b"), raw=b"\x00\xff")
    return value


VARIANTS = ("plain", "rich")
"""The richer values a producer is fed (:func:`rich_value`), by their name in a driver's id."""


def richer_spec(producer: ScenarioSpec, kind: str) -> ScenarioSpec:
    """``producer`` with its first container argument replaced by :func:`rich_value`."""
    return replace(
        producer,
        id=f"{kind}:{producer.id}",
        setup=(
            f"{producer.setup}"
            "from apiprof.engine.scenarios.drivenspecs import rich_value, with_value\n"
            f"args, kwargs = with_value(args, kwargs, rich_value({kind!r}))\n"
        ),
        description=f"{producer.qualname} on a {kind} nested value",
        inputs=f"{producer.qualname}(<a {kind} nested value>)",
    )


def with_value(args: tuple[Any, ...], kwargs: dict[str, Any], value: object) -> Arguments:
    """The arguments with the first list, tuple, dict or set replaced by ``value``."""
    containers = (list, tuple, dict, set)
    for index, old in enumerate(args):
        if type(old) in containers:
            return (*args[:index], value, *args[index + 1 :]), kwargs
    for name, old in kwargs.items():
        if type(old) in containers:
            return args, {**kwargs, name: value}
    raise TypeError("no container argument to put a richer value in")


# -- replaying ---------------------------------------------------------------------------------


def fresh_replay(
    qualname: str, payload: str, n: int | None = None
) -> tuple[Callable[..., object], Callable[[], Arguments]]:
    """The target of a captured call and a function giving a fresh copy of its arguments
    (resized to ``n`` when given) for every call."""
    target, _, _ = replay_call(qualname, payload, n)
    return target, functools.partial(_unpickled, base64.b64decode(payload), n)


def _unpickled(data: bytes, n: int | None) -> Arguments:
    args, kwargs = temppaths.loads(data)
    return resized(args, kwargs, n) if n is not None else (args, kwargs)


def driven_spec(call: CapturedCall, index: int, sizes: tuple[int, ...] = ()) -> ScenarioSpec:
    """The scenario replaying a call captured mid-stream: each measured call gets a fresh copy
    of the receiver and arguments (made before it, not measured)."""
    sized = bool(sizes)
    limit = CONSUME_LIMIT if sized else UNSIZED_CONSUME_LIMIT
    return ScenarioSpec(
        id=f"driven:{call.qualname}#{index}",
        qualname=call.qualname,
        source=ScenarioSource.DRIVEN,
        description=f"arguments the package passed to it mid-stream while {call.driver} ran: "
        f"{call.shown}; each call gets a fresh copy of them (made before it, not measured)"
        + (", longest argument resized to n" if sized else ""),
        setup=(
            "from apiprof.engine.scenarios.drivenspecs import fresh_replay\n"
            "from apiprof.engine.scenarios.consume import drain_lazy\n"
            f"target, fresh = fresh_replay({call.qualname!r}, {call.payload!r}, "
            f"{'n' if sized else 'None'})\n"
        ),
        call=f"args, kwargs = fresh()\ndrain_lazy(target(*args, **kwargs), {limit})",
        size_axis="n" if sized else "",
        sizes=tuple(sizes),
        inputs=f"{call.qualname}{call.shown}",
    )


def replay_spec(call: CapturedCall, index: int, sizes: tuple[int, ...] = ()) -> ScenarioSpec:
    """The replay of a captured call: a fresh copy per call for one captured mid-stream."""
    return (driven_spec if call.driver else captured_spec)(call, index, sizes)


def through_driver_spec(
    qualname: str, ref: str, driver: ScenarioSpec, why: str = ""
) -> ScenarioSpec:
    """The driver run again for each measured run, measuring only ``qualname``'s calls inside
    it: for arguments that could not be copied mid-stream (``why``)."""
    return replace(
        driver,
        id=f"driven:{qualname}@{ref}"[:MAX_SCENARIO_ID],
        qualname=qualname,
        source=ScenarioSource.DRIVEN,
        description=f"its own calls while {ref} runs (the package builds the receiver "
        "mid-stream, afresh in each run; only these calls are measured)"
        + (f"; its arguments cannot be copied: {why}" if why else ""),
        targets=(qualname,),
        repeat=None,
        inputs=f"its calls inside {driver.inputs or driver.qualname}",
    )
