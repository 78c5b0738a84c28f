"""Synthesised scenarios: turn argument synthesis (:mod:`apiprof.engine.scenarios.synth`) into scenario
specs, keeping the first argument variant a trial call accepts.

A synthesised scenario is plain code: setup rebuilds the arguments with ``synthesize_call`` from
the same ``(qualname, n, seed, variant)``, and the measured call is ``target(*args, **kwargs)``.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import io
import re
import textwrap
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from apiprof.engine import timeouts
from apiprof.engine.discovery.discover import describe_exception, resolve_object
from apiprof.engine.scenarios.constructorlessons import constructor_error
from apiprof.engine.scenarios.lessons import may_teach
from apiprof.engine.scenarios.repair import Start, repair_search
from apiprof.engine.scenarios.results import SOURCE as RESULTS
from apiprof.engine.scenarios.results import Taken
from apiprof.engine.scenarios.resultsearch import results_search
from apiprof.engine.scenarios.schemanote import schema_note
from apiprof.engine.scenarios.shown import shown_arguments
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.engine.scenarios.synth import (
    CONSUME_LIMIT,
    SOURCES,
    UNSIZED_CONSUME_LIMIT,
    CannotSynthesize,
    Synthesis,
    is_lazy,
    synthesize,
)
from apiprof.engine.scenarios.trial import (
    TRIAL_SECONDS,
    failure_kind,
    lacking,
    quiet_stdio,
    try_scenario,
)
from apiprof.engine.scenarios.wants import Lesson, Want
from apiprof.engine.scenarios.warmup import Warmup
from apiprof.model.records import Coverage, Failure, ScenarioSource

NO_ARGUMENTS = "needs arguments we could not synthesise: "
MAX_VARIANTS = 8
"""At most this many argument flavours are tried before giving up on an entry point."""
HEAVY_MAX_SIZE = 100
"""Largest size for a synthesised argument made of objects built one by one."""


def raised_by_design(qualname: str) -> str:
    """The exception a function raises on every path, by its source ("" when it may return).

    Hooks such as ``JSONEncoder.default`` exist to raise unless overridden; the cost of calling
    them *is* the cost of raising, so such a call is measured with the exception caught rather
    than reported as rejected arguments. Only an unconditional top-level ``raise`` counts.
    """
    try:
        target = typing.cast(Any, resolve_object(qualname))
        if isinstance(target, property):  # a property of a variant that has no such value
            target = target.fget
        elif isinstance(target, functools.cached_property):
            target = target.func
        target = inspect.unwrap(target)
        target = getattr(target, "__func__", target)
        tree = ast.parse(textwrap.dedent(inspect.getsource(target)))
    except Exception:  # C functions, no source, odd objects: no claim
        return ""
    function = tree.body[0] if tree.body else None
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or not function.body:
        return ""
    last = function.body[-1]
    if not isinstance(last, ast.Raise) or last.exc is None:
        return ""
    if any(isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) for node in ast.walk(function)):
        return ""
    exc = last.exc.func if isinstance(last.exc, ast.Call) else last.exc
    return ast.unparse(exc)


def raises_its_argument(synthesis: Synthesis) -> str:
    """The exception class, when the call raises the exception (or an instance of the
    exception class) it was given — ``reraise(tp, value)`` does its job by raising."""
    given = [*synthesis.args, *synthesis.kwargs.values()]
    try:
        with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
            synthesis.target(*synthesis.args, **synthesis.kwargs)
    except timeouts.CallTimeout:  # as slow as the trial that failed: no claim
        return ""
    except Exception as error:
        if any(error is value or type(error) is value for value in given):
            return type(error).__name__
    except BaseException:  # KeyboardInterrupt, SystemExit: not the call's job
        return ""
    return ""


def synthesized_spec(
    qualname: str,
    sizes: tuple[int, ...],
    synthesis: Synthesis,
    *,
    seed: int = 0,
    variant: int = 0,
    lazy: bool = False,
    raises: str = "",
    sources: tuple[str, ...] = SOURCES,
    pins: dict[str, int] | None = None,
    repairs: tuple[Lesson, ...] = (),
    taken: tuple[Taken, ...] = (),
) -> ScenarioSpec:
    """The scenario, as code, that rebuilds ``synthesis`` in setup and calls the target
    (catching ``raises``, the exception the target raises by design, when given);
    ``repairs``: what rejected calls taught (:mod:`.repair`), ``taken``: values the package's
    working calls made (:mod:`.results`), both rebuilt the same way."""
    size = "n" if synthesis.sized else "None"
    arguments = f"{qualname!r}, {size}, seed={seed}, variant={variant}, sources={tuple(sources)!r}"
    if pins:
        arguments += f", pins={pins!r}"
    if repairs:
        arguments += f", repairs={tuple(lesson.literal() for lesson in repairs)!r}"
    if taken:
        arguments += f", taken={tuple(item.literal() for item in taken)!r}"
    setup = (
        "from apiprof.engine.scenarios.synth import consume, rewind, synthesize_call\n"
        f"target, args, kwargs = synthesize_call({arguments})\n"
    )
    if synthesis.warmup is not None:  # the receiver is fed its input again before each call
        setup = (
            "from apiprof.engine.scenarios.synth import consume, rewind, synthesize\n"
            f"synthesis = synthesize({arguments})\n"
            "target, args, kwargs = synthesis.target, synthesis.args, synthesis.kwargs\n"
            "warmup = synthesis.warmup\n"
        )
    call = "target(*args, **kwargs)"
    if lazy:
        call = f"consume({call}, {CONSUME_LIMIT if synthesis.sized else UNSIZED_CONSUME_LIMIT})"
    if raises:
        call = f"try:\n    {call}\nexcept Exception:\n    pass"
    exits = any(lesson.want is Want.ARGV for lesson in repairs)  # a main given a command line
    if exits:  # ends with sys.exit(0) when it worked: that is its return
        call = f"try:\n    {call}\nexcept SystemExit as stop:\n    if stop.code not in (0, None):\n        raise"
    if synthesis.files:
        call = f"rewind(args, kwargs)\n{call}"
    if synthesis.warmup is not None:  # on a new receiver, when one is built for each call
        call = f"target, args = warmup(target, args)\n{call}"
    if synthesis.heavy:  # n objects built one by one: a thousand is slow to make and measure
        sizes = tuple(size for size in sizes if size <= HEAVY_MAX_SIZE) or sizes[:1]
    pinned = "".join(f", {name}: alternative {turn}" for name, turn in (pins or {}).items())
    description = f"synthesised arguments (variant {variant}{pinned})" + (
        ", result iterated" if lazy else ""
    )
    if synthesis.used and synthesis.source is not ScenarioSource.SYNTHESIZED:
        description += f"; types from {synthesis.describe_sources()}"
    for lesson in repairs:
        description += f"; {lesson.describe()}"
    for item in taken:
        description += f"; {item.describe()}"
    if raises:
        description += f"; the function always raises {raises}, so this is the cost of raising it"
    if exits:
        description += "; a clean exit (SystemExit 0) ends the call as a return does"
    if isinstance(synthesis.warmup, Warmup):
        ready = synthesis.warmup.opens or synthesis.warmup.arguments is not None
        readied = "is made ready by" if ready else "gets its input from"
        description += (
            f"; before each call the receiver {readied} {synthesis.warmup.shown} (not measured)"
        )
    return ScenarioSpec(
        id=f"synth:{qualname}",
        qualname=qualname,
        source=synthesis.source,
        description=description,
        setup=setup,
        call=call,
        size_axis="n" if synthesis.sized else "",
        sizes=sizes if synthesis.sized else (),
        inputs=f"{qualname}{shown_arguments(synthesis.args, synthesis.kwargs)}"
        + (f" at n = {sizes[0]}" if synthesis.sized and sizes else "")
        + (f" after {synthesis.warmup.shown}" if isinstance(synthesis.warmup, Warmup) else ""),
    )


def iterated_later(result: object, qualname: str, reason: str) -> bool:
    """Whether a result that refused to be iterated right after the call (``reason``) is an
    object of the package that is an iterator among other things and is not ready yet (a
    lexer, which yields tokens only once it is given input: a ``RuntimeError`` or an error of
    the package's own): its call is measured alone. A type, attribute, lookup or value error
    says the call's arguments were wrong (a reader given a text stream for a binary one), and
    a generator's refusal is always the call's (its body runs only when iterated)."""
    if isinstance(result, (types.GeneratorType, types.AsyncGeneratorType, types.CoroutineType)):
        return False
    module = getattr(type(result), "__module__", "") or ""
    raised = re.match(r"raised (\w+)", reason)
    kind = getattr(builtins, raised.group(1), None) if raised else None
    not_ready = raised is not None and (
        kind is None or (isinstance(kind, type) and issubclass(kind, RuntimeError))
    )
    return not_ready and module.split(".")[0] == qualname.split(".")[0]


def find_synthesized_scenario(
    qualname: str,
    sizes: tuple[int, ...],
    *,
    seed: int = 0,
    check: bool = True,
    sources: tuple[str, ...] = SOURCES,
) -> tuple[ScenarioSpec | None, Failure | None]:
    """The first argument variant that builds (and, with ``check``, runs): (spec, None) or
    (None, why not). The variants come from :class:`VariantSearch`.

    The reason is a sentence for the coverage report: "needs arguments we could not synthesise:
    ..." when none could be built, "synthesised arguments were rejected: ..." when calls failed.
    """
    first_failure: Failure | None = None
    rejected: list[Start] = []  # the variants the repair mends, first rejected first
    fed = False  # a failure with a fed receiver was added to the reason
    search = VariantSearch()
    for variant, pins in search:
        size = sizes[0] if sizes else None
        try:
            synthesis = synthesize(qualname, size, seed, variant, sources, pins)
        except Exception as error:  # this flavour cannot be built; a later one may
            search.learn(getattr(error, "choices", 1), getattr(error, "alternatives", {}))
            reason = (
                str(error)
                if isinstance(error, CannotSynthesize)
                else f"building them raised {describe_exception(error)}"
            )
            first_failure = first_failure or Failure(
                failure_kind(error, qualname), lacking(error, qualname, f"{NO_ARGUMENTS}{reason}")
            )
            if len(rejected) < REPAIR_STARTS and constructor_error(error) is not None:
                rejected.append((variant, pins))  # the receiver's constructor refused
            continue
        # flavours differ per variant (a union member may have none)
        search.learn(synthesis.choices, synthesis.alternatives)
        if not search.fresh(synthesis, pinned=bool(pins)):
            continue  # the same arguments as a call already tried
        build = functools.partial(
            synthesized_spec,
            qualname,
            sizes,
            synthesis,
            seed=seed,
            variant=variant,
            sources=sources,
            pins=pins,
        )
        spec = build()
        if not check:
            return spec, None
        failure, result = try_scenario(spec)
        if failure is None and is_lazy(result):
            plain, made = spec, result
            spec = build(lazy=True)
            failure, result = try_scenario(spec)
            if failure is not None and iterated_later(made, qualname, failure.reason):
                spec, failure = plain, None
        if failure is None:
            return spec, None
        # out of time or memory: no second call to see what it raises
        refused = failure.kind == Coverage.NO_ARGUMENTS
        if refused and len(rejected) < REPAIR_STARTS and may_teach(failure.reason):
            rejected.append((variant, pins))
        if not refused:  # slow or stopped: single alternatives would only repeat that
            search.pinning = False
        if refused and (raises := raised_by_design(qualname) or raises_its_argument(synthesis)):
            spec = build(raises=raises)
            if try_scenario(spec)[0] is None:
                return spec, None
        if first_failure is not None and isinstance(synthesis.warmup, Warmup) and not fed:
            fed = True  # say what feeding the receiver first did too, once
            first_failure = replace(
                first_failure,
                reason=f"{first_failure.reason}; with {synthesis.warmup.shown} before each "
                f"call, the call {failure.reason}",
            )
        first_failure = first_failure or replace(
            failure,
            reason=failure.reason
            if failure.kind is Coverage.MISSING_DEPENDENCY
            else f"synthesised arguments were rejected: the call {failure.reason}",
        )
    rebuild = _rebuilding(qualname, sizes, seed, sources)
    refused = first_failure is not None and first_failure.kind is Coverage.NO_ARGUMENTS
    start = rejected[0] if rejected else (0, {})
    mendable: tuple[Taken, ...] = ()  # a value taken whose call's error may teach the repair
    if RESULTS in sources and first_failure is not None and refused:
        taking, note, mendable = results_search(
            qualname,
            sizes[0] if sizes else None,
            seed=seed,
            start=start,
            sources=sources,
            build=lambda synthesis, taken, lazy: rebuild(synthesis, start, lazy, taken=taken),
        )
        if taking is not None:
            return taking, None
        first_failure = replace(first_failure, reason=first_failure.reason + note)
    if "repair" in sources and rejected and first_failure is not None:
        repaired = repair_search(
            qualname,
            sizes[0] if sizes else None,
            seed=seed,
            starts=rejected,
            sources=sources,
            build=lambda synthesis, start, lessons, lazy: rebuild(
                synthesis, start, lazy, repairs=lessons
            ),
        )
        if repaired.spec is not None:
            return repaired.spec, None
        first_failure = replace(first_failure, reason=first_failure.reason + repaired.note())
    if "repair" in sources and mendable and first_failure is not None:
        repaired = repair_search(  # the rest of the arguments, around what was taken
            qualname,
            sizes[0] if sizes else None,
            seed=seed,
            starts=[start],
            sources=sources,
            build=lambda synthesis, start, lessons, lazy: rebuild(
                synthesis, start, lazy, repairs=lessons, taken=mendable
            ),
            taken=mendable,
        )
        if repaired.spec is not None:
            return repaired.spec, None
        first_failure = replace(first_failure, reason=first_failure.reason + repaired.note())
    if first_failure is not None and refused:  # a schema its users fill in says what it needs
        first_failure = replace(first_failure, reason=first_failure.reason + schema_note(qualname))
    return None, first_failure


def _rebuilding(
    qualname: str, sizes: tuple[int, ...], seed: int, sources: tuple[str, ...]
) -> Callable[..., ScenarioSpec]:
    """Makes the scenario of a synthesis that starts from a rejected variant ``(variant,
    pins)``, with what mended it (``repairs=`` lessons, ``taken=`` values)."""

    def build(synthesis: Synthesis, start: Start, lazy: bool, **mended: Any) -> ScenarioSpec:
        return synthesized_spec(
            qualname,
            sizes,
            synthesis,
            seed=seed,
            variant=start[0],
            sources=sources,
            pins=start[1],
            lazy=lazy,
            **mended,
        )

    return build


REPAIR_STARTS = 3
"""Rejected variants the repair may start from (while its calls last)."""
MAX_PINNED_TRIALS = 8
"""Trial calls of single-parameter alternatives, after the variants, before giving up."""
MAX_ALTERNATIVES = 8
"""Alternatives tried per parameter (its candidate types and value flavours)."""


@dataclass
class VariantSearch:
    """The order argument variants are tried in, so that no working combination depends on
    the order of the candidates.

    First the variants (variant ``k`` takes the ``k``-th choice of every parameter at once, up
    to :data:`MAX_VARIANTS`); then each alternative of each of the entry point's own
    parameters on its own, the others at their first choice (``pins``) — the second
    alternative of every parameter, then the third... — within :data:`MAX_PINNED_TRIALS`
    calls. A pinned combination that builds the same arguments as one already tried is not
    called again."""

    choices: int = 1
    alternatives: dict[str, int] = field(default_factory=dict)  # parameter -> how many
    pinning: bool = True  # pins are tried (off once a trial ran out of time or memory)
    pinned_trials: int = 0
    _tried: set[str] = field(default_factory=set)

    def __iter__(self) -> Iterator[tuple[int, dict[str, int]]]:
        variant = 0
        while variant < min(self.choices, MAX_VARIANTS):
            yield variant, {}
            variant += 1
        done: set[tuple[str, int]] = set()
        while self.pinning and self.pinned_trials < MAX_PINNED_TRIALS:
            pending = [
                (turn, name)
                for name, count in self.alternatives.items()
                for turn in range(1, min(count, MAX_ALTERNATIVES))
                if (name, turn) not in done
            ]
            if not pending:
                return
            turn, name = min(pending, key=lambda pin: pin[0])  # second alternatives first
            done.add((name, turn))
            yield 0, {name: turn}

    def learn(self, choices: int, alternatives: Mapping[str, int]) -> None:
        """What building one variant found: flavours met, alternatives per parameter."""
        self.choices = max(self.choices, choices)
        for name, count in alternatives.items():
            self.alternatives[name] = max(self.alternatives.get(name, 1), count)

    def fresh(self, synthesis: Synthesis, *, pinned: bool) -> bool:
        """Whether to call this: every variant is called; a pinned combination only when
        its arguments were not tried yet (and then it counts as a trial)."""
        key = _arguments_key(synthesis)
        if pinned and key in self._tried:
            return False
        self._tried.add(key)
        self.pinned_trials += pinned
        return True


def _arguments_key(synthesis: Synthesis) -> str:
    """The call as text: the arguments, the receiver's state (a factory-made receiver differs
    from a plain one in what it holds), object addresses left out (a new receiver each time)."""
    receiver = getattr(synthesis.target, "__self__", None)
    try:
        state = vars(receiver) if receiver is not None and not inspect.isclass(receiver) else {}
        text = repr(
            (
                synthesis.target,
                [_content(value) for value in synthesis.args],
                sorted((key, _content(value)) for key, value in synthesis.kwargs.items()),
                synthesis.warmup,
                sorted(state.items()),
            )
        )
    except Exception:  # a repr that fails (or no __dict__): never the same as another call
        return str(id(synthesis))
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


def _content(value: object) -> object:
    """An in-memory stream as what it holds (two streams repr alike whatever they hold: a
    stream a writer of the package filled is no repeat of one of made-up text)."""
    if isinstance(value, (io.StringIO, io.BytesIO)):
        return (type(value).__name__, value.getvalue())
    return value
