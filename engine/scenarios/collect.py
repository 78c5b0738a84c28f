"""All scenarios of a discovered package, from every enabled source, and why the rest have none."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from apiprof.engine.discovery.discover import Discovery, describe_exception, resolve_object
from apiprof.engine.scenarios.doctests import docstring_scenarios, identity_of
from apiprof.engine.scenarios.files import load_scenario_file
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, ScenarioSpec
from apiprof.engine.scenarios.synth import SOURCES
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import Coverage, Failure

# -- combining sources -----------------------------------------------------------------------


def collect_scenarios(
    discovery: Discovery,
    scenario_files: Sequence[Path] = (),
    *,
    docstrings: bool = True,
    synthesize: bool = True,
    sizes: Sequence[int] = DEFAULT_SIZES,
    check: bool = True,
    sources: Sequence[str] = SOURCES,
) -> tuple[list[ScenarioSpec], dict[str, Failure]]:
    """All scenarios for a discovered package, and why each uncovered entry point has none.

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
    for entry in discovery.entry_points:
        if entry.qualname not in objects:
            continue
        if synthesize:
            spec, failure = find_synthesized_scenario(
                entry.qualname, tuple(sizes), check=check, sources=tuple(sources)
            )
            if spec is not None:
                specs.append(spec)
            elif failure is not None:
                failures[entry.qualname].append(failure)
        if docstrings:
            found, reason = docstring_scenarios(entry, objects[entry.qualname], public)
            trials = [(spec, try_scenario(spec)[0] if check else None) for spec in found]
            kept = [spec for spec, failure in trials if failure is None]
            rejected = [(spec, failure) for spec, failure in trials if failure is not None]
            if not kept and (reason or rejected):
                why = [reason] if reason else []
                why += [f"{spec.id} {failure.reason}" for spec, failure in rejected]
                kind = worst([failure.kind for _, failure in rejected])
                failures[entry.qualname].append(
                    Failure(kind, "docstring examples: " + "; ".join(why))
                )
            specs.extend(kept)
    covered = {qualname for spec in specs for qualname in (spec.qualname, *spec.targets)}
    unscenarioed = {
        qualname: Failure(worst([f.kind for f in why]), "; ".join(f.reason for f in why))
        if why
        else Failure(Coverage.NO_ARGUMENTS, "no scenario source was enabled")
        for qualname, why in failures.items()
        if qualname not in covered
    }
    return specs, unscenarioed


_SEVERITY = (Coverage.IMPORT_FAILED, Coverage.MEMORY, Coverage.TIMED_OUT)


def worst(kinds: Sequence[Coverage]) -> Coverage:
    """The kind that best explains several failures of one entry point's candidate scenarios:
    an import failure, then running out of memory or time; otherwise it lacks arguments."""
    return next((kind for kind in _SEVERITY if kind in kinds), Coverage.NO_ARGUMENTS)
