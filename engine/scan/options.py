"""What shapes a scan (:class:`ScanOptions`, stored with the scan so ``resume`` repeats it),
and the checks of the user's input that must fail before any worker starts."""

from __future__ import annotations

import importlib.machinery
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from apiprof import errors
from apiprof.engine.isolation.confine import (
    Isolation,
    package_location,
)
from apiprof.engine.isolation.pool import Start, WorkerOptions
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, ScenarioSpec
from apiprof.engine.scenarios.synth import SOURCES
from apiprof.engine.testsuite import resolve_suite_path, suite_root

BUNDLED_SCENARIOS = Path(__file__).parent.parent / "scenarios" / "packs"
"""Scenario files apiprof ships for packages no automatic source covers well (``<package>.toml``)."""


@dataclass(frozen=True)
class ScanOptions:
    """Everything that shapes a scan. Stored with the scan (JSON) so ``resume`` repeats it."""

    scenario_files: tuple[str, ...] = ()
    bundled_scenarios: bool = True  # add the scenario file apiprof ships for the package, if any
    docstrings: bool = True  # run ``>>>`` examples as scenarios
    synthesize: bool = True  # synthesise arguments from annotations and defaults
    # where argument types come from besides annotations (each switchable: --no-stubs ...)
    stubs: bool = True  # .pyi stubs: the package's own, types-* packages, jedi's typeshed
    docstring_types: bool = True  # :param int x:, numpydoc and Google sections
    examples: bool = True  # literal arguments the package's own text passes (Marker('...'))
    subclasses: bool = True  # concrete subclasses and factories for classes that won't build
    observed: bool = True  # values the package's entry points return, where one is wanted
    nodes: bool = True  # tree nodes from their classes' child lists; visit_X takes an X
    patterns: bool = True  # matches of the package's own regular expressions, texts they accept
    package_data: bool = True  # the package's own data files for path, file and bytes parameters
    heuristics: bool = True  # parameter names, how the body uses them, sibling defaults
    # a method reading what only a sibling method sets gets that sibling called first
    prepare: bool = True
    capture: bool = True  # arguments recorded from docstring examples and the --tests suite
    # arguments the package passes mid-stream while its working scenarios run, for the entry
    # points nothing else could call
    self_drive: bool = True
    # after every variant is rejected, mend the arguments from what the exception asks for
    repair: bool = True
    # objects the package's related working calls return or hold, for what nothing else calls
    results: bool = True
    sizes: tuple[int, ...] = DEFAULT_SIZES  # input sizes for synthesised sized scenarios
    # minimum measured runs per scenario size and pass (a scenario file may say otherwise)
    repeat: int = 20
    max_seconds: float = 2.0  # cap per pass, scenario and size (an expensive call keeps 1 run)
    time_budget: float = 0.01  # seconds of runs per timing pass, scenario and size
    jobs: int = 1
    call_timeout: float = 10.0  # seconds for one call of a scenario
    # seconds for all scenarios of one entry point; the worker is then killed
    scenario_timeout: float = 120.0
    # seconds for importing the package and listing its entry points
    discovery_timeout: float = 300.0
    memory_mb: int = 2048  # address-space cap per worker
    # the audit-hook sandbox guard (resource limits and temp cwd apply regardless)
    guard: bool = True
    python_path: tuple[str, ...] = ()  # extra import paths for workers (e.g. a source checkout)
    # seconds to wait while another process holds the database's write lock
    db_timeout: float = 30.0
    # the package's pytest suite (file or directory), profiled as one scenario; "" = off
    tests: str = ""
    # seconds for every run of the test suite together; the worker is then killed
    tests_timeout: float = 900.0
    # "auto" (strict where possible, else process, said loudly), "strict" (or refuse), "process"
    isolation: str = Isolation.AUTO.value
    # entry points per worker: 1 = a fresh worker for each (more only to measure what that costs)
    tasks_per_worker: int = 1
    # how workers start: "zygote" (forked from a confined process that started once) or "fresh"
    worker_start: str = Start.ZYGOTE.value
    # profile only these entry points (qualified names); empty = every one discovered
    only: tuple[str, ...] = ()

    # Options a resumed scan takes from the original (they decide which scenarios exist).
    RESUMED_FIELDS = (
        "scenario_files",
        "bundled_scenarios",
        "docstrings",
        "synthesize",
        *SOURCES,
        "capture",
        "self_drive",
        "sizes",
        "repeat",
        "max_seconds",
        "time_budget",
        "tests",
        "only",
    )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScanOptions:
        known = {f.name for f in fields(cls)}
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
        return cls(**values)  # type: ignore[arg-type]  # stored by to_json, so the types match

    def scenario_files_for(self, package: str) -> tuple[str, ...]:
        """The user's scenario files plus, unless turned off, the one shipped for ``package``."""
        bundled = BUNDLED_SCENARIOS / f"{package.split('.')[0]}.toml"
        if self.bundled_scenarios and bundled.is_file():
            return (*self.scenario_files, str(bundled))
        return self.scenario_files

    @property
    def argument_sources(self) -> list[str]:
        """The enabled argument sources beyond annotations, as the worker names them."""
        return [name for name in SOURCES if getattr(self, name)]

    def worker_options(self, package: str = "") -> WorkerOptions:
        """How workers run; ``package`` (and the files the scan reads) must be readable in them."""
        paths = self.import_paths(package)
        env = {"PYTHONPATH": os.pathsep.join(paths)} if paths else {}
        location = package_location(package) if package else ""
        suite = suite_root(self.tests) if self.tests else ""  # run from its project's root
        readable = [*map(str, self.python_path), *self.scenario_files, suite, location]
        return WorkerOptions(
            memory_mb=self.memory_mb,
            call_timeout=self.call_timeout,
            scenario_timeout=self.scenario_timeout,
            guard=self.guard,
            env=env,
            isolation=Isolation(self.isolation),
            max_tasks=self.tasks_per_worker,
            start=Start(self.worker_start),
            readable=tuple(os.path.abspath(p) for p in readable if p),
        )

    def import_paths(self, package: str = "") -> list[str]:
        """Where workers import from, as ``python -m`` and pytest would from here: the current
        directory first when ``package`` is there (a package of the project being scanned;
        any other folder stays out of the workers' sandbox), then ``python_path`` and the
        inherited ``PYTHONPATH`` — every entry made absolute, since workers run in a sandbox
        directory of their own."""
        inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        here = [os.getcwd()] if package and importable_from(os.getcwd(), package) else []
        paths = [*here, *map(str, self.python_path), *inherited]
        return list(dict.fromkeys(os.path.abspath(path) for path in paths))

    def validate(self) -> None:
        problems = []
        if self.jobs < 1:
            problems.append("--jobs must be at least 1")
        if not self.sizes or any(s < 1 for s in self.sizes):
            problems.append("--sizes must be positive integers, e.g. 10,100,1000")
        if self.repeat < 1:
            problems.append("--min-runs must be at least 1")
        if not 0 <= self.time_budget <= self.max_seconds:
            problems.append(
                f"--time-budget must be between 0 and the per-pass cap ({self.max_seconds:g} s)"
            )
        if (
            min(
                self.call_timeout, self.scenario_timeout, self.discovery_timeout, self.tests_timeout
            )
            <= 0
        ):
            problems.append("timeouts must be positive numbers of seconds")
        if self.memory_mb < 64:
            problems.append("--memory-mb must be at least 64 (the interpreter alone needs some)")
        if self.isolation not in set(Isolation):
            problems.append(f"--isolation must be one of {', '.join(Isolation)}")
        if self.worker_start not in set(Start):
            problems.append(f"--worker-start must be one of {', '.join(Start)}")
        if self.tasks_per_worker < 1:
            problems.append("tasks_per_worker must be at least 1")
        if problems:
            raise errors.UsageError("; ".join(problems))


def importable_from(folder: str, package: str) -> bool:
    """Whether ``package``'s top-level module is in ``folder`` (found without importing it)."""
    try:
        return importlib.machinery.PathFinder.find_spec(package.split(".")[0], [folder]) is not None
    except (ImportError, ValueError):
        return False


def with_absolute_suite_path(options: ScanOptions) -> ScanOptions:
    """``options`` with ``tests`` made absolute (workers run elsewhere; resume runs from anywhere)."""
    return replace(options, tests=resolve_suite_path(options.tests)) if options.tests else options


def check_scenario_files(paths: Sequence[str]) -> list[ScenarioSpec]:
    """Parse every scenario file here (parsing runs no code) so a typo fails fast with
    file:line; the specs read here are the ones the scan trusts."""
    from apiprof.engine.scenarios.files import load_scenario_file

    specs = []
    for path in paths:
        if not Path(path).is_file():
            raise errors.ScenarioFileError(str(path), None, "no such scenario file; check the path")
        specs += load_scenario_file(path)
    return specs
