"""Plan: one profiling task per entry point (its file, docstring and captured scenarios), and
the verdicts known without running anything (modules that failed to import)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence, Set
from dataclasses import dataclass

from apiprof.engine.isolation.protocol import (
    Discovered,
    ProfileEntry,
)
from apiprof.engine.scan.options import ScanOptions
from apiprof.engine.scenarios.capture import CapturedCall
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.model.records import (
    Coverage,
    CoverageRecord,
    EntryKind,
    EntryPoint,
)


@dataclass
class Plan:
    """The plan stage's output: one task per entry point, and verdicts known without running."""

    requests: list[ProfileEntry]  # one per entry point
    known: list[CoverageRecord]  # import failures
    skipped: int = 0  # entry points a resumed scan had finished already


def module_failure(module: str, error: str, dependency: str) -> CoverageRecord:
    """Why a module's entry points are missing: an optional dependency that is not installed
    (its own category, not a fault of the package), or a failed import."""
    if dependency:
        return CoverageRecord(
            module,
            Coverage.MISSING_DEPENDENCY,
            f"{module} needs {dependency}, which is not installed here (an optional dependency); "
            f"install it to profile this module",
        )
    return CoverageRecord(module, Coverage.IMPORT_FAILED, f"importing {module} failed: {error}")


def plan_scan(
    found: Discovered,
    options: ScanOptions,
    done: Set[str] = frozenset(),
    *,
    profile: bool = True,
    captured: Sequence[CapturedCall] = (),
) -> Plan:
    """One task per entry point: collect its docstring/synthesised scenarios, add its file
    scenarios, profile them all. Scenario files may also target names discovery did not list."""
    discovery = found.discovery
    known = [
        module_failure(module, error, discovery.missing_dependencies.get(module, ""))
        for module, error in sorted(discovery.import_failures.items())
        if module not in done
    ]
    file_specs: dict[str, list[ScenarioSpec]] = defaultdict(list)
    for spec in found.specs:
        file_specs[spec.qualname].append(spec)
    calls: dict[str, list[CapturedCall]] = defaultdict(list)
    for call in captured:
        calls[call.qualname].append(call)
    entries = {entry.qualname: entry for entry in discovery.entry_points}
    if options.only:
        entries = {name: entry for name, entry in entries.items() if name in options.only}
        file_specs = defaultdict(list, {k: v for k, v in file_specs.items() if k in options.only})
    for qualname in sorted(set(file_specs) - set(entries)):
        module = qualname.rsplit(".", 1)[0]
        entries[qualname] = EntryPoint(qualname, discovery.package, module, EntryKind.FUNCTION)
    requests, skipped = [], 0
    for qualname, entry in entries.items():
        if qualname in done:
            skipped += 1
            continue
        request = ProfileEntry(
            package=discovery.package,
            entry=entry,
            specs=file_specs.get(qualname, []),
            docstrings=options.docstrings,
            synthesize=options.synthesize,
            sizes=list(options.sizes),
            profile=profile,
            sources=options.argument_sources,
            captured=calls.get(qualname, []),
        )
        requests.append(request)
    return Plan(requests, known, skipped)
