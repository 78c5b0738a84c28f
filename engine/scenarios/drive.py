"""Self-driven capture: the arguments that entry points nothing else could call receive while
the package's own working scenarios run.

Parsers, scanners, emitters, constructors and code generators have methods that only work
mid-stream (``Scanner.scan_plain``, ``Parser.parse_block_mapping``, ``CodeGenerator.visit_For``):
no rule can build their receiver, but the package builds it every time it parses or renders.
So, inside a sandboxed worker, the scenarios that already profiled other entry points run once
more as *drivers* (smallest size, each under the trial time limit, all within a budget) under
the capture recorder of :mod:`~apiprof.engine.scenarios.capture`, watching only the entry
points still without a scenario. Drivers are the package's own: its working docstring,
scenario-file, synthesised and observed-value scenarios, then *round trips* — a driver that
takes a text argument, fed what another driver returned (``load(dump(x))``, ``parse(format(s))``):
the package's own output is a well-formed input of its own grammar; so are the texts its
docstrings show in literal blocks (:mod:`.doctexts`), the sentences of a yacc-style grammar
its rule docstrings declare (:mod:`.grammartexts`), and a document of what its own regular
expressions match (:mod:`.patterntexts`). A driver that turns a
list or mapping into a text is also fed a richer nested value (the same, format-agnostic one
for every package: :func:`~.drivenspecs.rich_value`), so its text shows more of the grammar.
Round trips pair the consumers that reached the most watched entry points with the richest
texts.

What a driver passes is pickled when the call starts (the receiver as it was mid-stream);
what cannot be pickled is replayed by running the driver again (:mod:`.drivenspecs`). Which
watched entry points each driver reached is kept, so the driver reaching the most is the one
run again.
"""

from __future__ import annotations

import time
import types
from collections.abc import Sequence
from dataclasses import dataclass, field

from apiprof.engine import timeouts
from apiprof.engine.scenarios.capture import (
    CapturedCall,
    Recorder,
    capturing,
    watch_list,
)
from apiprof.engine.scenarios.doctexts import package_texts
from apiprof.engine.scenarios.drivenspecs import (
    VARIANTS,
    doctext_spec,
    richer_spec,
    round_trip_spec,
    takes_arguments,
    unsized,
)
from apiprof.engine.scenarios.grammartexts import grammar_refs, grammar_spec
from apiprof.engine.scenarios.patterntexts import pattern_refs, pattern_spec
from apiprof.engine.scenarios.spec import ScenarioSpec, compile_scenario
from apiprof.engine.scenarios.trial import TRIAL_SECONDS, quiet_stdio
from apiprof.model.checks import MAX_SCENARIO_ID

DRIVE_BUDGET = 30.0
"""Seconds all drivers of a scan may run together (each is also limited to the trial time)."""

MAX_DRIVERS = 200
"""Working scenarios run as drivers at most (most take milliseconds; the budget bounds them)."""

MAX_CONSUMERS = 6
MAX_TEXTS = 6
MAX_DOC_TEXTS = 100
"""Round trips: the consumers reaching the most watched entry points, each fed the richest
texts the drivers returned and the texts the package's docstrings show."""

GRAMMAR_BUDGET = 10.0
GRAMMAR_CONSUMERS = 2
"""Sentences of a grammar the package declares (:mod:`.grammartexts`) go to this many text
consumers, within this many seconds of their own."""

MAX_PRODUCERS = 4
"""Drivers returning a text fed :func:`~.drivenspecs.rich_value` (each in both variants)."""

TEXTS = frozenset({str, bytes})
CONTAINERS = frozenset({list, tuple, dict, set})

MIN_TEXT = 8
"""Shorter results are too plain to teach a parser anything (``'1'``, ``'abc'``)."""


@dataclass
class DriveRecorder(Recorder):
    """The capture recorder, also noting which watched entry points each driver reaches."""

    reach: dict[str, set[str]] = field(default_factory=dict)

    def seen_start(self, code: types.CodeType, frame: types.FrameType) -> bool:
        targets = self.targets(code)
        if targets:
            self.reach.setdefault(self.origin, set()).update(name for name, _ in targets)
        return super().seen_start(code, frame)

    def record(self, qualname: str, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        before = len(self.calls.get(qualname, []))
        super().record(qualname, args, kwargs)
        kept = self.calls[qualname]
        kept[before:] = [_driven(call, self.origin) for call in kept[before:]]


def _driven(call: CapturedCall, driver: str) -> CapturedCall:
    return CapturedCall(call.qualname, call.payload, driver, call.shown, call.problem, driver)


@dataclass(frozen=True)
class Driving:
    """What the drivers passed to the watched entry points, and whom each driver reached."""

    calls: list[CapturedCall]
    # driver (id, variant or round trip) that ran to its end -> watched entry points it reached
    reach: dict[str, list[str]]
    drivers_run: int = 0


def drive_capture(
    watched: Sequence[str], drivers: Sequence[ScenarioSpec], *, budget: float = DRIVE_BUDGET
) -> Driving:
    """Run the drivers (then round trips of them) once each under the recorder watching
    ``watched``, until ``budget`` seconds are spent."""
    located = watch_list(watched)
    recorder = DriveRecorder(located, frozenset(q.split(".")[0] for q in watched))
    if not located:
        return Driving([], {})
    deadline = time.monotonic() + budget
    texts: dict[object, ScenarioSpec] = {}  # a text a driver returned -> the first driver
    consumers: list[tuple[ScenarioSpec, set[type]]] = []  # and the types of its text arguments
    producers: list[ScenarioSpec] = []  # drivers returning a text from a container argument
    ran = 0
    for spec in [unsized(d) for d in drivers[:MAX_DRIVERS]]:
        if time.monotonic() > deadline:
            break
        ran += 1
        result, takes = _drive(recorder, spec.id, spec)
        if not takes_arguments(spec):
            continue
        if isinstance(result, (str, bytes)) and takes & CONTAINERS:
            producers.append(spec)  # of a text, from a container: fed richer values too
        if isinstance(result, (str, bytes)) and len(set(result)) >= MIN_TEXT:
            texts.setdefault(result, spec)
        if takes & TEXTS:
            consumers.append((spec, takes & TEXTS))
    for producer, kind in [(p, kind) for p in producers[:MAX_PRODUCERS] for kind in VARIANTS]:
        if time.monotonic() > deadline:
            break
        ran += 1
        spec = richer_spec(producer, kind)
        result, _ = _drive(recorder, spec.id, spec)
        if isinstance(result, (str, bytes)) and len(set(result)) >= MIN_TEXT:
            texts.setdefault(result, spec)
    ranked = sorted(consumers, key=lambda c: len(recorder.reach.get(c[0].id, ())), reverse=True)
    ran += _fed_grammar(recorder, watched[0].split(".")[0], ranked)
    richest = sorted(texts, key=_richness, reverse=True)[:MAX_TEXTS]
    if consumers:
        richest += _documented_texts(watched[0].split(".")[0], texts)

    for consumer, takes in ranked[:MAX_CONSUMERS]:
        fed = [text for text in richest if type(text) in takes and texts[text].id != consumer.id]
        for text in fed:
            if time.monotonic() > deadline:
                break
            ran += 1
            trip = round_trip_spec(consumer, texts[text])
            _drive(recorder, trip.id, trip)
    reach = {ref: sorted(names) for ref, names in recorder.reach.items()}
    return Driving(recorder.results(), reach, ran)


def _fed_grammar(
    recorder: DriveRecorder, top: str, consumers: list[tuple[ScenarioSpec, set[type]]]
) -> int:
    """Round trips feeding the sentences of the package's declared grammar (and the documents
    of what its own patterns match: :mod:`.patterntexts`) to the text consumers reaching the
    most watched entry points, within a budget of their own (the drivers before may have
    spent theirs): how many ran."""
    sentences = [*grammar_refs(top), *pattern_refs(top)] if consumers else []
    deadline = time.monotonic() + GRAMMAR_BUDGET
    ran = 0
    for consumer, _ in [c for c in consumers if str in c[1]][:GRAMMAR_CONSUMERS]:
        for ref, _text in sentences:
            producer = grammar_spec(ref) if ref.startswith("grammar:") else pattern_spec(ref)
            if producer is None or time.monotonic() > deadline:
                break
            ran += 1
            trip = round_trip_spec(consumer, producer)
            _drive(recorder, trip.id, trip)
    return ran


def _documented_texts(top: str, texts: dict[object, ScenarioSpec]) -> list[object]:
    """Up to :data:`MAX_DOC_TEXTS` texts the package's docstrings show, not yet in ``texts``
    (added there, with the producer that reads each again)."""
    found: list[object] = []
    for ref, text in package_texts(top):
        spec = doctext_spec(ref)
        if spec is None or text in texts or len(set(text)) < MIN_TEXT:
            continue
        texts[text] = spec
        found.append(text)
        if len(found) >= MAX_DOC_TEXTS:
            break
    return found


def _richness(text: object) -> int:
    """How much of a grammar a text shows: distinct characters, and lines."""
    assert isinstance(text, (str, bytes))
    newline = "\n" if isinstance(text, str) else b"\n"
    return len(set(text)) + min(text.count(newline), 50)  # type: ignore[arg-type]


def _drive(recorder: DriveRecorder, ref: str, spec: ScenarioSpec) -> tuple[object, set[type]]:
    """Run one driver (setup unwatched: only the package's own calls in ``call`` count): what
    its call returns (None when it fails), and the types of its arguments."""
    recorder.origin = ref
    takes: set[type] = set()
    if len(ref) > MAX_SCENARIO_ID:  # a name the scanner would refuse: not run
        return None, takes
    try:
        with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
            run = compile_scenario(spec, None)
            namespace = getattr(run, "__globals__", {})
            arguments = [*namespace.get("args", ()), *namespace.get("kwargs", {}).values()]
            takes = {type(value) for value in arguments}
            with capturing(recorder):
                return run(), takes
    except (Exception, SystemExit, timeouts.CallTimeout):  # a driver that exits ends only itself
        # the calls it passed before failing are kept, but it is no driver to run again
        recorder.reach.pop(ref, None)
        return None, takes
