"""``--tests`` on suites too long for their ``--tests-timeout``: what the tests captured before
the worker was stopped still arrives (sent test by test), and the profiled runs rerun only the
tests they need — the cheapest that reached each entry point they measure."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from suitehelp import run_printing_json, suite_only_options
from suiteproject import installed_copy

from apiprof.engine.scan import scan

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
    return installed_copy(tmp_path_factory)


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


def test_a_parametrized_test_is_sampled_evenly_in_a_large_suite():
    from apiprof.engine.scenarios.thinning import sampled_cases

    cases = [f"t.py::test_v[{i}]" for i in range(100)]
    nodes = ["t.py::test_plain", *cases, "t.py::test_small[a]", "t.py::test_small[b]"]
    kept = sampled_cases(nodes, per_test=5)
    assert kept[0] == "t.py::test_plain" and kept[-2:] == nodes[-2:]  # order kept, small ones whole
    assert kept[1:-2] == [f"t.py::test_v[{i}]" for i in (0, 25, 50, 74, 99)]


PARAMETRIZED = """
import pytest

from suite_pkg import count_lines, count_words


@pytest.mark.parametrize("n", range(30))
def test_counts_words(n):
    assert count_words("a " * n) == ({"a": n} if n else {})


def test_counts_lines(tmp_path):
    (tmp_path / "f.txt").write_text("x\\ny\\n")
    with (tmp_path / "f.txt").open() as stream:
        assert count_lines(stream) == 2
"""


def test_a_large_suites_warm_up_and_profiled_runs_run_a_sample_of_its_cases(installed, tmp_path):
    suite = tmp_path / "parametrized_tests"
    suite.mkdir()
    (suite / "test_many.py").write_text(PARAMETRIZED, encoding="utf-8")
    script = f"""
import json, sys
sys.path.insert(0, {str(installed)!r})
from apiprof.engine.scenarios import suitepasses, testrun
testrun.LARGE_SUITE = 20  # 31 tests make a large suite here
runner = testrun.SuiteRunner({str(suite)!r}, "suite_pkg")
names = ["suite_pkg.count_words", "suite_pkg.count_lines"]
captured = runner.warm_up(names, capture=True)
plan = suitepasses.plan_profiled_runs(runner, names, captured)
suitepasses.run_profiled(runner, plan, lambda run_once: run_once())
print(json.dumps({{
    "outcomes": [dict(run.outcomes) for run in runner.runs], "notes": runner.notes,
    "captured": len([c for c in captured if c.qualname == "suite_pkg.count_words"]),
}}))
"""
    found = run_printing_json(script, tmp_path)
    warm, profiled = found["outcomes"]
    assert warm == {"passed": 11, "failed": 0, "errors": 0, "skipped": 0}
    # a sampled suite is large: only the test of what does not replay (an open file) reruns
    assert profiled == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}
    assert any(
        "collected 31 tests: its warm-up ran 11 of them, at most 10 cases" in note
        for note in found["notes"]
    )
    assert any(
        note.startswith("it is large, so the suite was not profiled whole")
        for note in found["notes"]
    )
    assert found["captured"] == 3  # capture keeps a few distinct calls: the sample is plenty


def test_a_large_suite_without_many_cases_of_one_test_runs_whole(installed, tmp_path):
    suite = tmp_path / "flat_tests"
    suite.mkdir()
    tests = "".join(
        f"def test_{i}():\n    assert count_words('a') == {{'a': 1}}\n\n" for i in range(25)
    )
    (suite / "test_flat.py").write_text("from suite_pkg import count_words\n\n" + tests)
    script = f"""
import json, sys
sys.path.insert(0, {str(installed)!r})
from apiprof.engine.scenarios import testrun
testrun.LARGE_SUITE = 20
runner = testrun.SuiteRunner({str(suite)!r}, "suite_pkg")
runner.warm_up(["suite_pkg.count_words"], capture=True)
print(json.dumps({{"outcomes": dict(runner.runs[0].outcomes), "notes": runner.notes}}))
"""
    found = run_printing_json(script, tmp_path)
    assert found["outcomes"]["passed"] == 25
    assert not any("collected" in note for note in found["notes"])
