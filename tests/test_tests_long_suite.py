"""``--tests`` on suites too long for their ``--tests-timeout``: what the tests captured before
the worker was stopped still arrives (sent test by test), and the profiled runs rerun only the
tests they need — the cheapest that reached each entry point they measure."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from suitehelp import suite_only_options

from apiprof.engine.scan import scan

PROJECT = Path(__file__).parent / "fixtures" / "suite_project"

NEVER_ENDS = """
import signal
import time

from suite_pkg import count_words, parse_record


def test_counts_words():
    assert count_words("a b a") == {"a": 2, "b": 1}


def test_parses_a_record():
    assert parse_record("item=tea;qty=2") == {"item": "tea", "qty": "2"}


def test_never_ends():
    # the worker's own alarm cannot interrupt it: only the scanner's --tests-timeout ends it
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    while True:
        time.sleep(0.5)
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A copy of suite_pkg for the scan to import."""
    folder = tmp_path_factory.mktemp("installed")
    shutil.copytree(PROJECT / "src" / "suite_pkg", folder / "suite_pkg")
    return folder


def test_a_suite_stopped_by_the_timeout_still_hands_over_what_its_tests_captured(
    installed, tmp_path
):
    suite = tmp_path / "endless_tests"
    suite.mkdir()
    (suite / "test_endless.py").write_text(NEVER_ENDS, encoding="utf-8")
    options = dataclasses.replace(
        suite_only_options(suite, installed, capture=True), tests_timeout=20.0
    )
    summary = scan("suite_pkg", db_path=tmp_path / "endless.db", options=options)
    assert summary.tests.status == "timed_out" and summary.tests.measurements == {}
    captured = sorted(c.qualname for c in summary.tests.captured if c.payload)
    assert captured == ["suite_pkg.count_words", "suite_pkg.parse_record"]
    # replayed as ordinary scenarios: profiled although the suite never finished
    missed = {m.qualname for m in summary.not_profiled}
    assert not missed & set(captured)
    assert any("arguments its warm-up captured are replayed" in w for w in summary.tests.warnings)


def test_the_profiled_runs_take_the_quickest_tests_that_reach_what_they_measure():
    from apiprof.engine.scenarios.suitepasses import cheapest_tests

    durations = {"t.py::slow": 9.0, "t.py::quick": 0.1, "t.py::shared": 0.5, "t.py::other": 0.2}
    reached = {
        "pkg.f": ["tests:t.py::slow", "tests:t.py::quick"],  # the first to reach it is slow
        "pkg.g": ["tests:t.py::shared"],  # only one test reaches g ...
        "pkg.h": ["tests:t.py::other", "tests:t.py::shared"],  # ... and h too: it is shared
        "pkg.k": ["doc:pkg.k#1"],  # a docstring example, not a test
    }
    assert cheapest_tests(reached, durations) == {"t.py::quick", "t.py::shared"}


def test_a_suite_worker_cannot_send_times_that_are_not_durations():
    from apiprof.engine.isolation.contract import suite_problem
    from apiprof.engine.isolation.protocol import RunSuite, SuiteFinished

    request = RunSuite("pkg", "/tests", "tests:tests", ["pkg.f"])
    good = SuiteFinished(runs=1, exit_code=0, outcomes={}, seconds=[2.0, 5.0], phases={"x": 1.0})
    assert suite_problem(request, good) == ""
    for bad in ({"seconds": [float("nan")]}, {"phases": {"warm_up": -1.0}}):
        reply = dataclasses.replace(good, **bad)
        assert "not durations" in suite_problem(request, reply)
    many = dataclasses.replace(good, phases={str(i): 1.0 for i in range(50)})
    assert "phase names" in suite_problem(request, many)
