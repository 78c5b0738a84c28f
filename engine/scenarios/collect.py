"""All scenarios of a discovered package, from every enabled source, and why the rest have none."""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from apiprof.engine.discovery.discover import Discovery, describe_exception, resolve_object
from apiprof.engine.scenarios.abstractmembers import abstract_method_failure
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.doctests import docstring_scenarios, identity_of
from apiprof.engine.scenarios.drivenspecs import replay_spec
from apiprof.engine.scenarios.factories import concrete_subclasses
from apiprof.engine.scenarios.files import load_scenario_file
from apiprof.engine.scenarios.replayed import can_resize, capture_problems, through_example_specs
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, ScenarioSpec
from apiprof.engine.scenarios.synth import SOURCES
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import TRIAL_SECONDS, try_scenario
from apiprof.model.records import Coverage, Failure, Phase

# -- combining sources -----------------------------------------------------------------------


@dataclass
class Gathered:
    """Every scenario the sources produced, and each failed attempt per entry point (the
    synthesised call that was rejected, the docstring example that raised...)."""

    specs: list[ScenarioSpec]
    failures: dict[str, list[Failure]]

    def unscenarioed(self) -> dict[str, Failure]:
        """For each entry point no scenario covers: one failure summing up why."""
        covered = {q for spec in self.specs for q in (spec.qualname, *spec.targets)}
        return {
            qualname: summarize_failures(why)
            for qualname, why in self.failures.items()
            if qualname not in covered
        }


def summarize_failures(why: Sequence[Failure]) -> Failure:
    """One failure standing for several (the only one keeps its details)."""
    if not why:
        return Failure(Coverage.NO_ARGUMENTS, "no scenario source was enabled")
    if len(why) == 1:
        return why[0]
    return Failure(worst([f.kind for f in why]), "; ".join(f.reason for f in why))


def collect_scenarios(
    discovery: Discovery,
    scenario_files: Sequence[Path] = (),
    **options: Any,
) -> tuple[list[ScenarioSpec], dict[str, Failure]]:
    """All scenarios for a discovered package, and why each uncovered entry point has none
    (see :func:`gather_scenarios` for the options)."""
    gathered = gather_scenarios(discovery, scenario_files, **options)
    return gathered.specs, gathered.unscenarioed()


def gather_scenarios(
    discovery: Discovery,
    scenario_files: Sequence[Path] = (),
    *,
    docstrings: bool = True,
    synthesize: bool = True,
    sizes: Sequence[int] = DEFAULT_SIZES,
    check: bool = True,
    sources: Sequence[str] = SOURCES,
    captured: Sequence[CapturedCall] = (),
) -> Gathered:
    """All scenarios for a discovered package, and every failed attempt.

    File scenarios are taken as written. Docstring and synthesised scenarios are tried once at
    the smallest size (``check``; this runs the package's code, so only inside the sandboxed
    worker) and kept only if they run twice without raising.
    """
    specs = [spec for path in scenario_files for spec in load_scenario_file(path)]
    failures: dict[str, list[Failure]] = {ep.qualname: [] for ep in discovery.entry_points}
    objects: dict[str, object] = {}
    for entry in discovery.entry_points:
        try:
            objects[entry.qualname] = resolve_object(entry.qualname)
        except Exception as error:
            reason = f"import failed: {describe_exception(error)}"
            failures[entry.qualname].append(Failure(Coverage.IMPORT_FAILED, reason))
    public = {id(identity_of(obj)): qualname for qualname, obj in objects.items()}
    by_entry: dict[str, list[CapturedCall]] = {}
    for call in captured:
        by_entry.setdefault(call.qualname, []).append(call)
    for entry in discovery.entry_points:
        if entry.qualname not in objects:
            continue
        obj = objects[entry.qualname]
        if inspect.isclass(obj) and inspect.isabstract(obj):  # nothing can call it as it is
            failures[entry.qualname].append(_abstract(obj, "it cannot be instantiated"))
            continue
        owner_name, _, member = entry.qualname.rpartition(".")
        documented = abstract_method_failure(_owner(owner_name), member)
        if documented is not None:  # no call runs its body: its implementations are measured
            failures[entry.qualname].append(documented)
            continue
        if inspect.isclass(obj) and getattr(obj, "_is_protocol", False):  # typing.Protocol
            failures[entry.qualname].append(_abstract(obj, PROTOCOL))
            continue
        calls = by_entry.get(entry.qualname, [])
        kept_captures = replay_captures(calls, tuple(sizes), check=check)
        specs.extend(kept_captures)
        if calls and not kept_captures:
            failures[entry.qualname].append(_capture_failure(calls, check))
        if synthesize:
            spec, failure = find_synthesized_scenario(
                entry.qualname, tuple(sizes), check=check, sources=tuple(sources)
            )
            if spec is not None:
                specs.append(spec)
            elif failure is not None:
                failures[entry.qualname].append(_abstract_by_its_word(obj, failure) or failure)
        if docstrings:
            found, reason = docstring_scenarios(entry, objects[entry.qualname], public)
            trials = [(spec, try_scenario(spec)[0] if check else None) for spec in found]
            kept = [spec for spec, failure in trials if failure is None]
            rejected = [(spec, failure) for spec, failure in trials if failure is not None]
            if not kept and (reason or rejected):
                why = [reason] if reason else []
                why += [f"{spec.id} {failure.reason}" for spec, failure in rejected]
                kind = worst([failure.kind for _, failure in rejected])
                summary = Failure(kind, "docstring examples: " + "; ".join(why))
                if len(rejected) == 1:  # keep its details (phase, location, traceback)
                    summary = replace(rejected[0][1], reason=summary.reason)
                failures[entry.qualname].append(summary)
            specs.extend(kept)
        if calls and not any(entry.qualname in spec.measured for spec in specs):
            specs.extend(_through_examples(calls, check=check))
    return Gathered(specs, failures)


PROTOCOL = "a typing.Protocol describes what other classes provide and cannot be instantiated"


def _owner(name: str) -> object:
    """The class (or module) a member's qualified name is under; None when it cannot be had."""
    try:
        return resolve_object(name) if "." in name else None
    except Exception:
        return None


def _abstract(cls: type, why: str) -> Failure:
    subclasses = ", ".join(sub.__qualname__ for sub in concrete_subclasses(cls)[:3])
    return Failure(
        Coverage.SKIPPED,
        f"abstract class: {why}"
        + (f"; its concrete subclasses ({subclasses}) are profiled" if subclasses else ""),
    )


def _abstract_by_its_word(obj: object, failure: Failure) -> Failure | None:
    """A class abstract by convention rather than by ``abc``: its constructor refuses with an
    error saying it is abstract (``TypeError: abstract nodes are not instantiable``,
    ``NotImplementedError: ... is an abstract base class``) while subclasses of it exist."""
    if not inspect.isclass(obj) or failure.phase != Phase.CALL:
        return None
    if "abstract" not in failure.reason.lower() or not concrete_subclasses(obj):
        return None
    said = failure.reason.removeprefix("synthesised arguments were rejected: the call ")
    return replace(_abstract(obj, f"its constructor refuses ({said})"), scenario=failure.scenario)


def _through_examples(calls: Sequence[CapturedCall], *, check: bool) -> list[ScenarioSpec]:
    """The examples that called an entry point nothing else could, kept if they run."""
    found = through_example_specs(calls)
    return [spec for spec in found if not check or try_scenario(spec, calls=1)[0] is None]


def replay_captures(
    calls: Sequence[CapturedCall], sizes: tuple[int, ...], *, check: bool = True
) -> list[ScenarioSpec]:
    """Scenarios replaying the captured calls that run (at most two): sized when a list or
    string argument can be stretched and the call still runs at two sizes or more."""
    kept: list[ScenarioSpec] = []
    for index, call in enumerate((c for c in calls if c.payload), start=1):
        if len(kept) >= MAX_CAPTURED_SCENARIOS:
            break
        unsized = replay_spec(call, index)
        if not check:
            kept.append(unsized)
            continue
        if try_scenario(unsized)[0] is not None:
            continue
        if sizes and can_resize(call):
            sized = replay_spec(call, index, sizes)
            workable = workable_sizes(sized)
            if len(workable) >= 2:
                kept.append(replace(sized, sizes=workable))
                continue
        kept.append(unsized)
    return kept


def workable_sizes(spec: ScenarioSpec) -> tuple[int, ...]:
    """The sizes of ``spec`` that run a trial call, smallest first: a size is tried only while
    the last one was fast enough for it to fit the trial time limit even if the call grows as
    the square of the size (a combinatorial call hangs at a larger size, or stops its worker in
    C code, and is never tried there)."""
    workable: list[int] = []
    for size in sorted(spec.sizes):
        started = time.monotonic()
        if try_scenario(spec, size, calls=1)[0] is not None:
            break
        workable.append(size)
        took = time.monotonic() - started
        following = [later for later in spec.sizes if later > size]
        if following and took * (min(following) / size) ** 2 > TRIAL_SECONDS / 2:
            break
    return tuple(workable)


MAX_CAPTURED_SCENARIOS = 2


def _capture_failure(calls: Sequence[CapturedCall], check: bool) -> Failure:
    problem = capture_problems(calls)
    if problem:
        return Failure(Coverage.NO_ARGUMENTS, f"captured arguments: {problem}")
    first = next(c for c in calls if c.payload)
    failure = try_scenario(replay_spec(first, 1))[0] if check else None
    why = failure.reason if failure else "did not run"
    return Failure(
        Coverage.NO_ARGUMENTS, f"captured arguments from {first.origin} {first.shown}: replay {why}"
    )


_SEVERITY = (
    Coverage.IMPORT_FAILED,
    Coverage.MISSING_DEPENDENCY,
    Coverage.MEMORY,
    Coverage.TIMED_OUT,
    Coverage.CRASHED,  # a trial that stopped its worker (a new one ran the rest)
    Coverage.SKIPPED,
)


def worst(kinds: Sequence[Coverage]) -> Coverage:
    """The kind that best explains several failures of one entry point's candidate scenarios:
    an import failure, a missing optional dependency, then running out of memory or time, or
    crashing its worker; otherwise it lacks arguments."""
    return next((kind for kind in _SEVERITY if kind in kinds), Coverage.NO_ARGUMENTS)
