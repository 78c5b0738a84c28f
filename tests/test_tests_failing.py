"""Failing tests under ``--tests``: described in one line (no traceback formatted under the
profiler's hooks), left out of the profiled runs where a passing test reaches the same entry
points, kept — and said to be kept — where they are the only ones reaching one."""

from __future__ import annotations

from pathlib import Path

import pytest
from suitehelp import run_printing_json, suite_only_options
from suiteproject import installed_copy

from apiprof.engine.scan import scan
from apiprof.engine.scenarios.suitefailures import failure_notes, unneeded_failures
from apiprof.model.records import Metric

FAILING_SUITE = """
import pytest

from suite_pkg import count_words, parse_record


@pytest.fixture
def broken():
    raise RuntimeError("a fixture that cannot be set up")


def test_counts_words():
    assert count_words("a b a") == {"a": 2, "b": 1}


def test_counts_words_then_fails():
    count_words("x y")
    assert 1 + 1 == 3, "fails after its call"


def test_the_only_one_parsing_fails():
    parse_record("a=1;b=2")
    raise ValueError("the only test reaching parse_record fails")


def test_with_a_broken_fixture(broken):
    count_words("never")
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    return installed_copy(tmp_path_factory)


@pytest.fixture(scope="module")
def failing_scan(installed, tmp_path_factory):
    """Only the suite measures anything (no capture replays)."""
    folder = tmp_path_factory.mktemp("failing")
    suite = folder / "tests"
    suite.mkdir()
    (suite / "test_failing.py").write_text(FAILING_SUITE, encoding="utf-8")
    options = suite_only_options(suite, installed, capture=False)
    return scan("suite_pkg", db_path=folder / "failing.db", options=options)


def test_failures_are_reported_in_one_line_with_where_they_were_raised(failing_scan):
    suite = failing_scan.tests
    assert suite.outcomes == {"passed": 1, "failed": 2, "errors": 1, "skipped": 0}
    failures = {node.rpartition("::")[2]: why for node, why in suite.failures.items()}
    assert failures == {
        "test_counts_words_then_fails": "AssertionError: fails after its call (test_failing.py:18)",
        "test_the_only_one_parsing_fails": (
            "ValueError: the only test reaching parse_record fails (test_failing.py:23)"
        ),
        "test_with_a_broken_fixture": (
            "RuntimeError: a fixture that cannot be set up (test_failing.py:9)"
        ),
    }
    assert suite.to_json()["failures"] == suite.failures
    [warning] = [w for w in suite.warnings if "failed" in w]
    assert "2 test(s) failed and 1 errored" in warning
    assert "test_counts_words_then_fails: AssertionError: fails after its call" in warning


def test_a_failing_test_is_profiled_only_where_no_passing_test_reaches_its_entry_point(
    failing_scan,
):
    suite = failing_scan.tests
    assert suite.status == "ran" and suite.reached == [
        "suite_pkg.count_words",
        "suite_pkg.parse_record",
    ]
    # count_words: called once per run — by the passing test alone; the failing tests that
    # also call it did not run again
    calls = [m for m in suite.measurements["suite_pkg.count_words"] if m.metric == Metric.CALLS]
    assert calls and all(m.histogram.total == m.histogram.count for m in calls)  # all 1
    # parse_record: only a failing test reaches it; what it measured before failing is kept
    assert any(m.metric == Metric.ALLOC_INCL for m in suite.measurements["suite_pkg.parse_record"])
    assert "suite_pkg.parse_record" not in {m.qualname for m in failing_scan.not_profiled}
    notes = " | ".join(suite.notes)
    assert "2 test(s) that failed in the warm-up were left out of the profiled runs" in notes
    assert (
        "1 test(s) that failed in the warm-up ran in the profiled runs as the only tests seen "
        "reaching an entry point (e.g. "
    ) in notes and "test_failing.py::test_the_only_one_parsing_fails): the calls they" in notes


def test_pytest_formats_no_traceback_of_a_failure(tmp_path):
    """The report of a failure is built without reading the failing frames' source (pytest's
    own formatting reads and parses every frame's file): deleting the file before the report
    is made still gives the one-line reason."""
    (tmp_path / "test_gone.py").write_text(
        "import os\n\ndef test_gone():\n    os.remove(__file__)\n    raise KeyError('k')\n",
        encoding="utf-8",
    )
    script = f"""
import json, sys
from apiprof.engine.scenarios.testrun import SuiteRunner
runner = SuiteRunner({str(tmp_path)!r}, "json")
tally = runner.run()
print(json.dumps({{"failures": tally.failures, "output": runner.output.getvalue()}}))
"""
    found = run_printing_json(script, tmp_path)
    assert list(found["failures"].values()) == ["KeyError: 'k' (test_gone.py:5)"]
    assert "raise KeyError" not in found["output"]  # no source line was shown


def test_which_failing_tests_can_be_left_out():
    reached = {
        "pkg.a": ["tests:t.py::pass_a", "tests:t.py::fail_1"],
        "pkg.b": ["tests:t.py::fail_2"],
        "pkg.c": ["doc:pkg.c#1"],
    }
    failing = {"t.py::fail_1", "t.py::fail_2", "t.py::fail_3"}
    assert unneeded_failures(failing, reached, ["pkg.a", "pkg.b", "pkg.c"]) == {
        "t.py::fail_1",
        "t.py::fail_3",  # reached no entry point at all
    }


def test_a_test_failing_only_when_profiled_is_named():
    notes = failure_notes({"t::a": "x"}, (), ["t::a", "t::b"], {"t::b": "OSError: no (f.py:1)"})
    assert notes[-1].startswith(
        "1 test(s) passed in the warm-up but failed in the profiled runs "
        "(e.g. t::b: OSError: no (f.py:1))"
    )
