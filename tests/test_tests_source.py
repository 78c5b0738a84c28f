"""`apiprof-scan PACKAGE --tests PATH`: the package's own pytest suite as one scenario."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from suitehelp import suite_only_options

from apiprof.db import query
from apiprof.db.schema import open_db
from apiprof.engine.isolation.pool import Task, TaskResult
from apiprof.engine.isolation.protocol import Failed, RunSuite
from apiprof.engine.isolation.worker import Worker
from apiprof.engine.scan import ScanOptions, ScanProgress, scan
from apiprof.engine.testsuite import SuiteRun, describe_suite_problems
from apiprof.errors import UsageError
from apiprof.model.records import Coverage, Failure, Metric

FIXTURES = Path(__file__).parent / "fixtures"
SUITE = FIXTURES / "tiny_pkg_tests"
SCENARIO = "tests:tiny_pkg_tests"
REACHED = {
    "tiny_pkg.sort_numbers",
    "tiny_pkg.join_words",
    "tiny_pkg.Box",
    "tiny_pkg.Box.area",
    "tiny_pkg.Box.scaled",
    "tiny_pkg.total_area",
}


@pytest.fixture(scope="module")
def tests_only_scan(tmp_path_factory):
    """tiny_pkg with every other scenario source off: only the test suite can profile anything."""
    path = tmp_path_factory.mktemp("tests-source") / "tiny.db"
    options = suite_only_options(SUITE, FIXTURES, capture=False)
    events: list[ScanProgress] = []
    summary = scan("tiny_pkg", db_path=path, options=options, progress=events.append)
    return path, summary, events


def test_entry_points_only_the_tests_reach_become_profiled(tests_only_scan):
    _, summary, events = tests_only_scan
    assert summary.status == "finished"
    assert "tests" in [e.stage for e in events]
    profiled = REACHED - {r.qualname for r in summary.not_profiled}
    assert profiled == REACHED and summary.profiled == len(REACHED)
    unreached = {r.qualname: r.status for r in summary.not_profiled}
    assert unreached == {
        "tiny_pkg.repeat_text": Coverage.NO_ARGUMENTS,
        "tiny_pkg.Box.square": Coverage.NO_ARGUMENTS,
    }
    suite = summary.tests
    assert suite.status == "ran" and suite.scenario_id == SCENARIO
    assert set(suite.reached) == REACHED and suite.only_by_tests == REACHED
    assert suite.runs >= 2  # the allocation pass and at least one timing pass


def test_every_reached_entry_point_has_tests_measurements_with_counts(tests_only_scan):
    path, _, _ = tests_only_scan
    db = open_db(path, readonly=True)
    try:
        rows = db.execute(
            "SELECT qualname, metric, SUM(count), SUM(sum) FROM buckets WHERE scenario_id = ? GROUP BY qualname, metric",
            [SCENARIO],
        ).fetchall()
        counts = {(q, m): (n, total) for q, m, n, total in rows}
        assert {q for q, _ in counts} == REACHED
        for qualname in REACHED:
            for metric in (Metric.CALLS, Metric.ALLOC_INCL, Metric.WALL, Metric.CPU):
                assert counts.get((qualname, str(metric)), (0, 0))[0] > 0, (qualname, metric)
        # calls per run of the suite: Box.scaled 20 times by one test; sort_numbers once, by
        # test_sort_numbers: the test failing on purpose also calls it, but failed in the
        # warm-up and is left out of the profiled runs (a passing test reaches what it reaches)
        assert (
            counts[("tiny_pkg.sort_numbers", "calls_per_run")][1]
            == counts[("tiny_pkg.sort_numbers", "calls_per_run")][0]
        )
        assert (
            counts[("tiny_pkg.Box.scaled", "calls_per_run")][1]
            == 20 * counts[("tiny_pkg.Box.scaled", "calls_per_run")][0]
        )
        sources = {
            r[0]
            for r in db.execute("SELECT DISTINCT source FROM scenarios WHERE id = ?", [SCENARIO])
        }
        assert sources == {"tests"}
        assert any(
            p.scenario_id == SCENARIO for p in query.scenario_breakdown(db, "tiny_pkg.total_area")
        )
    finally:
        db.conn.close()


def test_failing_and_refused_tests_are_counted_not_fatal(tests_only_scan):
    _, summary, _ = tests_only_scan
    suite = summary.tests
    assert suite.outcomes == {"passed": 3, "failed": 2, "errors": 0, "skipped": 0}
    assert any("tried to spawn a process" in reason for reason in suite.blocked)
    assert any("2 test(s) failed" in w for w in suite.warnings)
    document = summary.to_json()["tests"]
    assert (
        document["reached"] == len(REACHED) and document["failed"] == 2 and document["passed"] == 3
    )
    assert document["only_by_tests"] == sorted(REACHED)


def test_a_missing_tests_path_is_a_usage_error_naming_it(tmp_path):
    missing = tmp_path / "no-such-tests"
    with pytest.raises(UsageError, match="no-such-tests: no such test file or directory"):
        scan("tiny_pkg", db_path=tmp_path / "x.db", options=ScanOptions(tests=str(missing)))
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from apiprof.cli import scan_main; sys.exit(scan_main())",
            "tiny_pkg",
            "--tests",
            str(missing),
            "--db",
            str(tmp_path / "x.db"),
            "--quiet",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2, out.stderr
    assert (
        f"{missing}: no such test file or directory" in out.stderr and "Traceback" not in out.stderr
    )


def test_resume_repeats_the_tests_option():
    assert "tests" in ScanOptions.RESUMED_FIELDS
    stored = ScanOptions(tests="/abs/suite").to_json()
    assert ScanOptions.from_json(stored).tests == "/abs/suite"


def test_without_pytest_the_worker_reports_it_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "pytest", None)  # `import pytest` now raises ImportError
    worker = Worker(None, 512, send=lambda task_id, message: None)
    request = RunSuite("tiny_pkg", str(SUITE), SCENARIO)
    reply = worker.handle(request)
    assert isinstance(reply, Failed) and reply.failure.kind == Coverage.SKIPPED
    reason = reply.failure.reason
    assert "pytest is not installed" in reason and "without --tests" in reason
    suite = SuiteRun(str(SUITE), SCENARIO, status="unavailable")
    [warning] = describe_suite_problems(suite, TaskResult(Task("single", request), reply), 900)
    assert "pytest is not installed" in warning


def test_a_suite_past_its_timeout_is_dropped_with_a_warning():
    suite = SuiteRun(str(SUITE), SCENARIO, status=str(Coverage.TIMED_OUT))
    why = Failure(Coverage.TIMED_OUT, "ran past the 5 s scenario timeout")
    result = TaskResult(Task("single", RunSuite("tiny_pkg", str(SUITE), SCENARIO)), lost=why)
    [warning] = describe_suite_problems(suite, result, 5)
    assert "--tests-timeout (5 s)" in warning and "nothing from it was stored" in warning
