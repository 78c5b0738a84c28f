"""Error-guided argument repair: after every argument variant was rejected, learn from the
error what the call wanted and try again.

A bounded feedback loop: call the first rejected variant once, read what its exception asks
for (:func:`.lessons.learn`: a key, an attribute, a mapping, a file, parameter names, command-
line arguments), rebuild just that parameter (:mod:`.repaired`) and call again — at most
:data:`MAX_REPAIR_CALLS` calls, never the same lessons twice, all inside the sandboxed worker.
When a round teaches nothing new, the last lesson's next candidate is tried (another class
with those attributes, another flavour of the keys' values). The scenario that works carries
its lessons as plain data, so the measuring worker rebuilds the same arguments, and its
description says what was learned.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from apiprof.engine import timeouts
from apiprof.engine.discovery.discover import describe_exception
from apiprof.engine.scenarios.constructorlessons import constructor_lesson
from apiprof.engine.scenarios.lessons import learn
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.engine.scenarios.stops import WATCH
from apiprof.engine.scenarios.synth import (
    UNSIZED_CONSUME_LIMIT,
    Synthesis,
    consume,
    is_lazy,
    rewind,
    synthesize,
)
from apiprof.engine.scenarios.taken import Taken
from apiprof.engine.scenarios.trial import TRIAL_SECONDS, MemoryStream, quiet_stdio, try_scenario
from apiprof.engine.scenarios.wants import ACCUMULATING, Lesson, Want, merged
from apiprof.model.records import NO_SIZE, Phase

MAX_REPAIR_CALLS = 6
"""Calls the repair makes for one entry point (each with arguments not tried before)."""
MAX_REPAIR_SECONDS = 20.0
"""Time the repair may take for one entry point, all its calls together (it runs in the
worker's time for the entry point, beside the scenarios that already work)."""
MAX_NAME_PROBES = 32
"""Calls that read a C function's parameter names off its errors (they fail while parsing)."""


@dataclass
class Budget:
    """Calls and time left to the repair of one entry point."""

    calls: int = field(default_factory=lambda: MAX_REPAIR_CALLS)
    deadline: float = field(default_factory=lambda: time.monotonic() + MAX_REPAIR_SECONDS)

    def left(self) -> bool:
        return self.calls > 0 and time.monotonic() < self.deadline


@dataclass(frozen=True)
class Repaired:
    """How the repair ended: the working scenario, or what it learned and what still failed."""

    spec: ScenarioSpec | None
    lessons: tuple[Lesson, ...] = ()
    last_error: str = ""  # what the last repaired call raised ("" when none was made)

    def note(self) -> str:
        """For the not-profiled reason: what the errors asked for, and what still failed."""
        if not self.lessons:
            return ""
        asked = "; ".join(lesson.describe() for lesson in self.lessons)
        still = f", and then the call raised {self.last_error}" if self.last_error else ""
        return f"; repair tried {asked}{still}"


Start = tuple[int, dict[str, int]]
"""A rejected argument variant to mend: ``(variant, pins)``."""
Build = Callable[[Synthesis, Start, tuple["Lesson", ...], bool], ScenarioSpec]
"""Makes the scenario of a repaired synthesis: ``(synthesis, start, lessons, lazy)``."""


def repair_search(
    qualname: str,
    size: int | None,
    *,
    seed: int,
    starts: list[Start],
    sources: tuple[str, ...],
    build: Build,
    taken: tuple[Taken, ...] = (),
) -> Repaired:
    """Mend the arguments of the rejected variants ``starts`` (in turn, while calls are left)
    from what the errors ask for; ``build(synthesis, start, lessons, lazy)`` makes the
    scenario of a repaired synthesis (``lazy``: its result is an iterator, to be iterated).
    ``taken``: values from the package's working calls the arguments start from (a receiver
    only they could make, :mod:`.results`), kept while the other parameters are mended.

    ``sys.argv`` is the same afterwards: a lesson about it is for the worker that measures
    this entry point, not for the next one searched here."""
    argv = list(sys.argv)
    budget = Budget()  # shared by the starts
    best = Repaired(None)
    try:
        for start in starts:
            found = _search(qualname, size, seed, start, sources, build, budget, taken)
            if found.spec is not None:
                return found
            if len(found.lessons) > len(best.lessons):
                best = found  # the reason tells what the most lessons asked for
            if not budget.left():
                break
    finally:
        sys.argv[:] = argv
    return best


def _search(
    qualname: str,
    size: int | None,
    seed: int,
    start: Start,
    sources: tuple[str, ...],
    build: Build,
    budget: Budget,
    taken: tuple[Taken, ...] = (),
) -> Repaired:
    variant, pins = start
    lessons: tuple[Lesson, ...] = ()
    tried: set[tuple[Lesson, ...]] = {lessons}
    last_error = ""
    called: tuple[Lesson, ...] = ()  # the lessons of the last call made
    while budget.left():
        try:
            synthesis = synthesize(
                qualname, size, seed, variant, sources, pins, _literals(lessons), taken
            )
        except Exception as unbuilt:  # the lessons cannot be built (no such candidate)
            lesson = constructor_lesson(unbuilt)  # or the receiver's constructor refused
            following = merged(lessons, lesson) if lesson is not None else None
            if following is not None and following in tried:
                following = _next_candidate(lessons)
            if following is None or following in tried:
                last_error = describe_exception(unbuilt) if lessons else last_error
                break
            budget.calls -= 1
            tried.add(following)
            lessons = called = following
            continue
        budget.calls -= 1
        called = lessons
        # announced as its trial is: a call stuck in C that ends the worker is not made again
        watched = build(synthesis, start, lessons, False)
        at = watched.sizes[0] if watched.size_axis and watched.sizes else NO_SIZE
        if WATCH.stop_for(watched, at, Phase.COLLECT) is not None:
            break
        try:
            error, printed, lazy, repeated = probe_call(synthesis)
        finally:
            WATCH.idle()
        if _clean_exit(error) and any(lesson.want is Want.ARGV for lesson in lessons):
            error = None  # a main given its command line exits 0 when it worked
        if error is None:
            if not lessons:
                break  # the plain arguments work when called once: a trial found otherwise
            spec = build(synthesis, start, lessons, lazy)
            failure = try_scenario(spec)[0]
            if failure is None:
                return Repaired(spec, lessons)
            last_error = failure.reason.removeprefix("raised ")
            break
        if isinstance(error, timeouts.CallTimeout):
            break
        if lessons:
            last_error = describe_exception(error)
        bound = bound_arguments(synthesis, lessons)
        lesson = renewal_lesson(synthesis, lessons, error) if repeated else None
        lesson = lesson or learn(
            error,
            bound,
            usage=printed,
            probe=_name_probe(synthesis),
            receiver=receiver_of(synthesis),
        )
        following = merged(lessons, lesson) if lesson is not None else None
        if following is None or following in tried:
            following = _next_candidate(lessons)
        if following is None or following in tried:
            break
        tried.add(following)
        lessons = following
    return Repaired(None, called, last_error)


def _clean_exit(error: BaseException | None) -> bool:
    return isinstance(error, SystemExit) and error.code in (0, None)


def renewal_lesson(
    synthesis: Synthesis, lessons: tuple[Lesson, ...], error: BaseException
) -> Lesson | None:
    """A method whose first call worked and whose second raised on the same receiver (a
    ``remove`` of what the first call removed, a column deleted twice): the receiver is to
    be built again before each call, when nothing renews it yet."""
    if synthesis.warmup is not None or receiver_of(synthesis) is None:
        return None
    if any(lesson.want is Want.RENEWED for lesson in lessons):
        return None
    return Lesson("self", Want.RENEWED, cause=f"{describe_exception(error)} in a repeated call")


def _literals(lessons: tuple[Lesson, ...]) -> tuple[tuple[object, ...], ...]:
    return tuple(lesson.literal() for lesson in lessons)


def _next_candidate(lessons: tuple[Lesson, ...]) -> tuple[Lesson, ...] | None:
    """The lessons with the last one's next candidate (another class, other values)."""
    if not lessons or lessons[-1].want not in ACCUMULATING:
        return None
    last = lessons[-1]
    return (*lessons[:-1], replace(last, turn=last.turn + 1))


def probe_call(synthesis: Synthesis) -> tuple[BaseException | None, str, bool, bool]:
    """Call twice, as a trial does: (what it raised, what it printed to stderr, whether it
    returned an iterator, whether the first call worked and the second raised)."""
    printed = MemoryStream()
    target, args, kwargs = synthesis.target, synthesis.args, synthesis.kwargs
    worked = 0  # calls that returned
    try:
        with timeouts.alarm(TRIAL_SECONDS), quiet_stdio(), contextlib.redirect_stderr(printed):
            for _ in range(2):  # twice: the second call fails on what the first left
                if synthesis.warmup is not None:
                    target, args = synthesis.warmup(target, args)  # type: ignore[misc]
                if synthesis.files:
                    rewind(args, kwargs)
                result = target(*args, **kwargs)
                lazy = is_lazy(result)
                if lazy:
                    consume(result, UNSIZED_CONSUME_LIMIT)
                worked += 1
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit from a main(), too
        return error, printed.getvalue(), False, worked == 1
    return None, "", lazy, False


def bound_arguments(synthesis: Synthesis, lessons: tuple[Lesson, ...]) -> dict[str, object]:
    """The call's arguments by parameter name, with the optional ones left at a default of
    None (the receiver left out: no lesson mends it); a C function's by the names its errors
    gave."""
    named = next((lesson.names for lesson in lessons if lesson.want is Want.NAMES), ())
    try:
        if named:
            arguments = dict(zip(named, synthesis.args, strict=False))
        else:
            signature = inspect.signature(synthesis.target)
            arguments = signature.bind_partial(*synthesis.args, **synthesis.kwargs).arguments
            for parameter in signature.parameters.values():
                if parameter.default is None and parameter.kind is not parameter.POSITIONAL_ONLY:
                    arguments.setdefault(parameter.name, None)
                elif parameter.kind is parameter.VAR_POSITIONAL:  # given no items: still there
                    arguments.setdefault(parameter.name, ())
    except (TypeError, ValueError):
        arguments = {f"arg{i}": value for i, value in enumerate(synthesis.args)}
        arguments.update(synthesis.kwargs)
    return {name: value for name, value in arguments.items() if name not in ("self", "cls")}


def receiver_of(synthesis: Synthesis) -> object:
    """The instance a method is called on: bound to it, or passed first (a property getter,
    a base class's own function; a getter a factory made, ``get_fn(bs)``, names it as it
    likes)."""
    bound_to = getattr(synthesis.target, "__self__", None)
    if bound_to is not None or not synthesis.args:
        return bound_to
    if synthesis.receiver is not None and synthesis.args[0] is synthesis.receiver:
        return synthesis.receiver
    code = getattr(synthesis.target, "__code__", None)
    first = code.co_varnames[:1] if code is not None and code.co_argcount else ()
    return synthesis.args[0] if first == ("self",) else None


def _name_probe(synthesis: Synthesis) -> Callable[[int], BaseException | None]:
    """Calls the target with ``k`` placeholders: its error names the next parameter."""
    calls = 0

    def probe(count: int) -> BaseException | None:
        nonlocal calls
        calls += 1
        if calls > MAX_NAME_PROBES:
            return None
        try:
            with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
                synthesis.target(*([None] * count))
        except KeyboardInterrupt:
            raise
        except BaseException as error:
            return error
        return None

    return probe
