"""All scenarios of a discovered package, from every enabled source, and why the rest have none."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from apiprof.engine.discovery.discover import Discovery, describe_exception, resolve_object
from apiprof.engine.scenarios.doctests import docstring_scenarios, identity_of
from apiprof.engine.scenarios.files import load_scenario_file
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, ScenarioSpec
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario

# -- combining sources -----------------------------------------------------------------------


def collect_scenarios(
    discovery: Discovery,
    scenario_files: Sequence[Path] = (),
    *,
    docstrings: bool = True,
    synthesize: bool = True,
    sizes: Sequence[int] = DEFAULT_SIZES,
    check: bool = True,
) -> tuple[list[ScenarioSpec], dict[str, str]]:
    """All scenarios for a discovered package, and why each uncovered entry point has none.

    File scenarios are taken as written. Docstring and synthesised scenarios are tried once at
    the smallest size (``check``; this runs the package's code, so only inside the sandboxed
    worker) and kept only if they run twice without raising.
    """
    specs = [spec for path in scenario_files for spec in load_scenario_file(path)]
    reasons: dict[str, list[str]] = {ep.qualname: [] for ep in discovery.entry_points}
    objects: dict[str, object] = {}
    for entry in discovery.entry_points:
        try:
            objects[entry.qualname] = resolve_object(entry.qualname)
        except Exception as error:
            reasons[entry.qualname].append(f"import failed: {describe_exception(error)}")
    public = {id(identity_of(obj)): qualname for qualname, obj in objects.items()}
    for entry in discovery.entry_points:
        if entry.qualname not in objects:
            continue
        if synthesize:
            spec, reason = find_synthesized_scenario(entry.qualname, tuple(sizes), check=check)
            if spec is None:
                reasons[entry.qualname].append(reason)
            else:
                specs.append(spec)
        if docstrings:
            found, reason = docstring_scenarios(entry, objects[entry.qualname], public)
            failures: list[str] = []
            kept = [spec for spec in found if not check or _keep(spec, failures)]
            if not kept and (reason or failures):
                reasons[entry.qualname].append(
                    "docstring examples: " + "; ".join(filter(None, [reason, *failures]))
                )
            specs.extend(kept)
    covered = {qualname for spec in specs for qualname in (spec.qualname, *spec.targets)}
    unscenarioed = {
        qualname: "; ".join(why) or "no scenario source was enabled"
        for qualname, why in reasons.items()
        if qualname not in covered
    }
    return specs, unscenarioed


def _keep(spec: ScenarioSpec, reasons: list[str]) -> bool:
    failure, _ = try_scenario(spec)
    if failure:
        reasons.append(f"{spec.id} {failure}")
    return not failure
