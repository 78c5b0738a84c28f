"""Running a package's own pytest suite inside a worker, as real suites come.

Real suites carry options in their configuration (``addopts`` in pytest.ini, pyproject.toml,
tox.ini or setup.cfg) that need plugins the scanning environment may lack — ``--cov`` without
pytest-cov makes pytest refuse to start. Options of plugins that are not installed are dropped
(and the report says which); a suite whose options still do not parse runs without its
``addopts``. Suites import the package from wherever they like (the installed copy, the source
tree beside them, an editable install): the warm-up run's argument capture matches entry points
by where their code lives inside the package, and the profiled runs look the entry points up
after the suite has imported them.
"""

from __future__ import annotations

import configparser
import contextlib
import importlib.util
import io
import os
import re
import shlex
import sys
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiprof.engine.scenarios.capture import CapturedCall, Recorder, recorder_for
from apiprof.engine.scenarios.suitecapture import ORIGIN, LateRecorder
from apiprof.engine.scenarios.suitefailures import CheapFailures
from apiprof.engine.scenarios.thinning import CASES_PER_TEST, LARGE_SUITE, sampled_cases

PLUGIN_OPTIONS: dict[str, str] = {
    "--cov": "pytest_cov",
    "--no-cov": "pytest_cov",
    "-n": "xdist",
    "--numprocesses": "xdist",
    "--dist": "xdist",
    "--maxprocesses": "xdist",
    "--boxed": "xdist",
    "--timeout": "pytest_timeout",
    "--benchmark": "pytest_benchmark",
    "--reruns": "pytest_rerunfailures",
    "--only-rerun": "pytest_rerunfailures",
    "--html": "pytest_html",
    "--self-contained-html": "pytest_html",
    "--mypy": "pytest_mypy",
    "--flake8": "pytest_flake8",
    "--black": "pytest_black",
    "--isort": "pytest_isort",
    "--pylint": "pytest_pylint",
    "--randomly": "pytest_randomly",
    "--doctest-plus": "pytest_doctestplus",
    "--doctest-rst": "pytest_doctestplus",
    "--mpl": "pytest_mpl",
    "--asyncio-mode": "pytest_asyncio",
    "--memray": "pytest_memray",
    "--codspeed": "pytest_codspeed",
}
"""Option prefixes of common pytest plugins, and the module that must be importable for them."""

TAKES_VALUE = frozenset(
    {
        "-n",
        "--numprocesses",
        "--dist",
        "--cov-report",
        "--cov-config",
        "--cov-fail-under",
        "--timeout",
        "--reruns",
        "--html",
        "--randomly-seed",
        "-p",
        "--asyncio-mode",
        "--maxprocesses",
    }
)
"""Options whose value may come as the next word (``-n 4``)."""


QUIET_WARNINGS = [
    "-W",
    "ignore::pytest.PytestDeprecationWarning",
    "-W",
    "ignore::pytest.PytestConfigWarning",
    "-W",
    "ignore::pytest.PytestUnknownMarkWarning",
]
"""A suite's ``filterwarnings = error`` must not turn warnings of plugins installed here (not
the suite's own choice), or about marks of plugins that are not, into errors before a single
test runs."""

UNKNOWN_MARK = re.compile(r"'(\w+)' not found in `markers` configuration option")
"""How ``--strict-markers`` refuses a mark nobody registered (one of an absent plugin's)."""

MAX_RETRIES = 4
"""Runs of the warm-up that may be repeated after adjusting options pytest refused."""


@dataclass
class SuiteArguments:
    args: list[str]
    notes: list[str] = field(default_factory=list)


def suite_arguments(path: str) -> SuiteArguments:
    """pytest arguments for the suite at ``path``: quiet, no cache written, and the ini file's
    ``addopts`` without options of plugins that are not installed."""
    # --basetemp: tmp_path folders go to the worker's own temporary directory, without the user
    # lookup that naming pytest's usual folder needs (the sandbox refuses the nscd socket)
    basetemp = os.path.join(tempfile.gettempdir(), "pytest-suite")
    args = [path, "-q", "-p", "no:cacheprovider", "-p", "no:faulthandler", *QUIET_WARNINGS]
    args += ["--basetemp", basetemp]
    found = read_addopts(Path(path))
    if found is None:
        return SuiteArguments(args)
    addopts, source = found
    kept, dropped = filter_options(addopts)
    if not dropped:
        return SuiteArguments(args)
    notes = [
        f"dropped {' '.join(words)} from the addopts of {source}: pytest plugin {module!r} "
        "is not installed here"
        for module, words in dropped.items()
    ]
    return SuiteArguments([*args, "-o", f"addopts={shlex.join(kept)}"], notes)


def read_addopts(start: Path) -> tuple[list[str], str] | None:
    """``addopts`` of the pytest configuration that applies at ``start`` and its file name,
    searched upward as pytest does (pytest.ini, pyproject.toml, tox.ini, setup.cfg)."""
    directory = start if start.is_dir() else start.parent
    for folder in (directory, *directory.parents):
        for name, read in _READERS:
            candidate = folder / name
            if candidate.is_file():
                try:
                    value = read(candidate)
                except (OSError, ValueError, configparser.Error, tomllib.TOMLDecodeError):
                    continue
                if value is not None:
                    return value, str(candidate)
    return None


def _ini_section(section: str) -> Callable[[Path], list[str] | None]:
    def read(path: Path) -> list[str] | None:
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(path, encoding="utf-8")
        if not parser.has_section(section):
            return None
        return shlex.split(parser.get(section, "addopts", fallback=""))

    return read


def _pyproject(path: Path) -> list[str] | None:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    options = data.get("tool", {}).get("pytest", {}).get("ini_options")
    if options is None:
        return None
    addopts = options.get("addopts", "")
    return list(addopts) if isinstance(addopts, list) else shlex.split(addopts)


_READERS: list[tuple[str, Callable[[Path], list[str] | None]]] = [
    ("pytest.ini", _ini_section("pytest")),
    (".pytest.ini", _ini_section("pytest")),
    ("pyproject.toml", _pyproject),
    ("tox.ini", _ini_section("pytest")),
    ("setup.cfg", _ini_section("tool:pytest")),
]


def filter_options(words: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """``words`` without the options of plugins that cannot be imported here: (kept, dropped
    words by plugin module)."""
    kept: list[str] = []
    dropped: dict[str, list[str]] = {}
    index = 0
    while index < len(words):
        word = words[index]
        option = word.split("=", 1)[0]
        takes_next = (
            option in TAKES_VALUE
            and "=" not in word
            and index + 1 < len(words)
            and not words[index + 1].startswith("-")
        )
        group = [word, words[index + 1]] if takes_next else [word]
        module = _plugin_of(option, group)
        if module and not _importable(module):
            dropped.setdefault(module, []).extend(group)
        else:
            kept.extend(group)
        index += len(group)
    return kept, dropped


def _plugin_of(option: str, group: list[str]) -> str:
    if option == "-p" and len(group) == 2 and not group[1].startswith("no:"):
        return group[1]
    if option.startswith("-p") and len(option) > 2 and not option[2:].startswith("no:"):
        return option[2:]
    for prefix, module in PLUGIN_OPTIONS.items():
        if option == prefix or (prefix.startswith("--") and option.startswith(prefix + "-")):
            return module
    return ""


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class TestTally:
    """A pytest plugin that counts the outcomes of one run of a test suite, and tells the
    argument recorder (if any) which test is running."""

    __test__ = False  # not a test class, whatever pytest collects

    def __init__(
        self,
        recorder: Recorder | None = None,
        marks: Sequence[str] = (),
        selected: frozenset[str] | None = None,
        stop_at: float = 0.0,
        after_test: Callable[[], None] | None = None,
        sample: bool = False,
    ) -> None:
        self.outcomes: Counter[str] = Counter(passed=0, failed=0, errors=0, skipped=0)
        self.exit_code = -1
        self.recorder = recorder
        self.marks = marks
        self.selected = selected  # node ids to run; None: every test collected
        self.stop_at = stop_at  # time.monotonic() past which no further test starts; 0: none
        self.stopped = False  # the run was cut short at stop_at
        self.after_test = after_test  # called when each test is over (sends what it captured)
        self.sample = sample  # a large suite runs a sample of each parametrized test's cases
        self.collected = 0  # tests collected, when a sample of them ran
        self.sampled: list[str] | None = None  # node ids of that sample
        self.files: dict[str, str] = {}  # node id -> the file that holds the test
        self.durations: Counter[str] = Counter()  # node id -> seconds (setup, call, teardown)
        self.failures: dict[str, str] = {}  # node id -> why it failed or errored (first time)
        self.rootdir = ""  # what node ids are relative to
        self.cwd = ""  # the worker's own, given back when the session is over
        self.added_path = False  # the rootdir was put on sys.path for the session
        self.session: Any = None

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        chosen = self.selected
        if chosen is None and self.sample and len(items) > LARGE_SUITE:
            sample = sampled_cases([item.nodeid for item in items])
            if len(sample) < len(items):  # else no test has many cases: the suite runs whole
                self.sampled, self.collected, chosen = sample, len(items), frozenset(sample)
        if chosen is None:
            return
        kept = [item for item in items if item.nodeid in chosen]
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in chosen])
        items[:] = kept

    def pytest_configure(self, config: Any) -> None:
        self.rootdir = str(config.rootpath)
        for mark in self.marks:  # marks of absent plugins, which --strict-markers refused
            config.addinivalue_line("markers", f"{mark}: registered by apiprof-scan")
        # from the project's root, as people run pytest: suites open their data files by
        # paths relative to it ('tests/x.po'); writes there are still outside the sandbox
        self.cwd = os.getcwd()
        with contextlib.suppress(OSError):
            os.chdir(config.rootpath)
        # and importable from there, as `python -m pytest` makes it (`from tests import x`)
        if self.rootdir not in sys.path:
            sys.path.append(self.rootdir)
            self.added_path = True

    def pytest_unconfigure(self, config: Any) -> None:
        with contextlib.suppress(OSError):
            os.chdir(self.cwd or os.getcwd())
        if self.added_path:
            with contextlib.suppress(ValueError):
                sys.path.remove(self.rootdir)

    def pytest_sessionstart(self, session: Any) -> None:
        self.session = session

    def pytest_runtest_setup(self, item: Any) -> None:
        self.files[item.nodeid] = str(item.path)
        if self.recorder is not None:
            self.recorder.origin = f"{ORIGIN}{item.nodeid}"

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        if self.after_test is not None:
            self.after_test()
        if self.stop_at and time.monotonic() > self.stop_at and self.session is not None:
            self.session.shouldstop = "apiprof-scan: the --tests-timeout is near"
            self.stopped = True

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.durations[report.nodeid] += report.duration
        if report.failed:
            self.outcomes["failed" if report.when == "call" else "errors"] += 1
            reason = report.longreprtext.strip().splitlines()
            self.failures.setdefault(report.nodeid, reason[-1] if reason else report.when)
        elif report.skipped:
            self.outcomes["skipped"] += 1
        elif report.when == "call":
            self.outcomes["passed"] += 1

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.outcomes["errors"] += 1


@dataclass
class SuiteRunner:
    """Runs the suite in this process, keeping outcomes and times: the warm-up here, the
    profiled runs with :mod:`~apiprof.engine.scenarios.suitepasses`."""

    path: str
    package: str
    output: io.StringIO = field(default_factory=io.StringIO)
    runs: list[TestTally] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)  # registered for the suite (see adjusted)
    recorder: Recorder | None = None  # what the warm-up saw
    # wall seconds by step: warm_up, replay_check (which captures replay, deciding what the
    # profiled runs need), profiled_collection (their session's start-up and collection) and
    # profiled_runs (all of them; each one's time is in ``seconds``)
    phases: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        prepared = suite_arguments(self.path)
        self.args, self.notes = prepared.args, list(prepared.notes)

    def run(
        self,
        recorder: Recorder | None = None,
        stop_at: float = 0.0,
        args: Sequence[str] = (),
        plugins: Sequence[object] = (),
        selected: frozenset[str] | None = None,
        after_test: Callable[[], None] | None = None,
        sample: bool = False,
    ) -> TestTally:
        """One pytest session (``args`` instead of the suite's own, ``plugins`` besides the
        tally); the first one is retried after adjusting options pytest refused."""
        import pytest

        # sample (and select) what the suite's own options (-m, -k) left: after other plugins;
        # marked here, not where the class is defined, so that workers import pytest only for
        # a suite
        pytest.hookimpl(trylast=True)(TestTally.pytest_collection_modifyitems)
        # no __pycache__ beside the suite's files: assertion rewriting would try to write there
        sys.dont_write_bytecode = True
        for _ in range(MAX_RETRIES + 1):
            tally = TestTally(recorder, self.marks, selected, stop_at, after_test, sample)
            mark = len(self.output.getvalue())
            started = time.perf_counter()
            with contextlib.redirect_stdout(self.output), contextlib.redirect_stderr(self.output):
                code = pytest.main(
                    list(args or self.args), plugins=[tally, CheapFailures(), *plugins]
                )
            tally.exit_code = int(code)
            if self.runs or not self.adjusted(tally, self.output.getvalue()[mark:]):
                break
        if not self.runs:
            self.seconds.append(time.perf_counter() - started)
        self.runs.append(tally)
        return tally

    def adjusted(self, tally: TestTally, output: str) -> bool:
        """Whether the first run's refusal was one apiprof can fix, and the options are fixed:
        options it cannot place (the suite then runs without its addopts), marks of plugins
        that are not installed under ``--strict-markers`` (registered)."""
        if (
            tally.exit_code == 4
            and "unrecognized arguments" in output
            and "addopts=" not in self.args
        ):
            self.notes.append(
                "pytest rejected the suite's configured options "
                f"({self.tail(1)}); ran it without its addopts"
            )
            self.args = [*self.args, "-o", "addopts="]
            return True
        marks = sorted(set(UNKNOWN_MARK.findall(output)) - set(self.marks))
        if marks and tally.exit_code in (2, 3, 4):
            self.marks += marks
            self.notes.append(
                f"registered the mark(s) {', '.join(marks)} that the suite uses but no installed "
                "plugin defines (--strict-markers refused them)"
            )
            return True
        return False

    def warm_up(
        self,
        qualnames: Sequence[str],
        capture: bool,
        stop_at: float = 0.0,
        send: Callable[[list[CapturedCall]], None] | None = None,
    ) -> list[CapturedCall]:
        """The first, unprofiled run: imports, collection, assertion rewriting — and the tests
        that reach each entry point, with ``capture`` the arguments they pass, recorded from the
        end of collection on (:mod:`.suitecapture`): the package is not imported before the
        suite imports the copy it means to test. Past
        ``stop_at`` (``time.monotonic()``) no further test starts. ``send`` gets the calls each
        test captured as soon as it is over (and the rest at the end): a worker killed in the
        middle of a long suite still handed over what the tests before had passed."""
        forget_package(self.package)  # a copy imported before is not necessarily the suite's
        late = LateRecorder(qualnames, arguments=capture)

        def send_fresh() -> None:
            recorder = late.recorder
            if send is not None and recorder is not None and recorder.fresh:
                send(recorder.take_fresh())

        try:
            first = self.run(None, stop_at, plugins=[late], after_test=send_fresh, sample=True)
        finally:
            late.stop()
        send_fresh()  # calls made outside a test (session fixtures' teardown)
        # a session that collected nothing: the entry points as the suite's path finds them
        recorder = late.recorder or recorder_for(qualnames, arguments=capture)
        self.recorder = recorder
        self.phases["warm_up"] = self.seconds[0]
        if first.sampled is not None:
            self.notes.append(
                f"the suite collected {first.collected} tests: its warm-up ran "
                f"{len(first.durations)} of them, at most {CASES_PER_TEST} cases of each "
                "parametrized test (the outcomes are theirs)"
            )
        if first.stopped:
            ran = sum(first.outcomes.values())
            self.notes.append(
                f"the warm-up run was stopped after {ran} tests ({self.seconds[0]:.0f} s) to stay "
                "within --tests-timeout; what those tests passed to entry points is replayed"
            )
        return recorder.results()

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the block's wall time to ``phases[phase]``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.phases[phase] = self.phases.get(phase, 0.0) + time.perf_counter() - started

    def tail(self, lines: int = 3) -> str:
        text = [line for line in self.output.getvalue().splitlines() if line.strip()]
        return " | ".join(text[-lines:])[:400]

    def problem(self) -> str:
        """Why the suite gave nothing to measure ("" when tests ran)."""
        first = self.runs[0]
        if any(first.outcomes[k] for k in ("passed", "failed")):
            return ""
        tail = self.tail()
        return f"pytest exited with code {first.exit_code} without running a test" + (
            f": {tail}" if tail else ""
        )


def forget_package(package: str) -> None:
    """Drop the package's modules from ``sys.modules`` so the next import finds them anew."""
    top = package.split(".")[0]
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        del sys.modules[name]
