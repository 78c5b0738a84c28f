"""``--tests`` on a suite laid out as real projects' are (tests/fixtures/suite_project): a src/
tree the suite imports instead of the scanned copy, pytest-cov options and marks without
pytest-cov, ``filterwarnings = error``, a data file beside the tests, ``tmp_path``."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from suitehelp import measured_by_replays, run_printing_json, suite_only_options
from suiteproject import ENTRY_POINTS, PROJECT, SUITE, installed_copy

from apiprof.engine.isolation.protocol import SuiteFinished
from apiprof.engine.scan import scan
from apiprof.engine.scenarios import temppaths
from apiprof.engine.scenarios.capture import location_of
from apiprof.engine.scenarios.testrun import suite_arguments
from apiprof.engine.testsuite import status_of


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    return installed_copy(tmp_path_factory)


@pytest.fixture(scope="module")
def suite_scan(installed, tmp_path_factory):
    """Only the suite and the arguments captured from it can profile anything."""
    path = tmp_path_factory.mktemp("suite-scan") / "suite.db"
    options = suite_only_options(SUITE, installed, capture=True)
    return path, scan("suite_pkg", db_path=path, options=options)


def test_a_real_layout_suite_runs_clean_in_the_sandbox_and_profiles_everything(suite_scan):
    _, summary = suite_scan
    suite = summary.tests
    assert summary.not_profiled == [] and summary.profiled == len(ENTRY_POINTS)
    assert suite.status == "ran" and sorted(suite.reached) == ENTRY_POINTS
    # a short suite is profiled whole: collected once more, run once per profiler pass
    assert suite.runs >= 2 and len(suite.seconds) == suite.runs + 1
    # where the time went, step by step
    steps = {"warm_up", "replay_check", "profiled_collection", "profiled_runs"}
    assert set(suite.phases) == steps == set(suite.to_json()["seconds_by_phase"])
    assert suite.phases["warm_up"] == suite.seconds[0]
    assert suite.phases["profiled_runs"] == pytest.approx(sum(suite.seconds[1:]))
    # the data file was read, tmp_path written, no mark refused, nothing else refused
    assert suite.outcomes == {"passed": 6, "failed": 0, "errors": 0, "skipped": 0}
    assert suite.blocked == [] and suite.warnings == []


def test_what_apiprof_changed_to_run_the_suite_is_said(suite_scan):
    notes = suite_scan[1].tests.notes
    assert any(
        "dropped --cov=suite_pkg --cov-report=term-missing" in note and "pytest_cov" in note
        for note in notes
    )
    assert any("registered the mark(s) no_cover" in note for note in notes)


def test_arguments_captured_from_the_source_tree_copy_are_replayed(suite_scan):
    path, summary = suite_scan
    copied = [name for name in ENTRY_POINTS if name != "suite_pkg.count_lines"]  # an open file
    assert summary.tests.to_json()["captured_entry_points"] == len(copied)
    # save_lines got pytest's tmp_path: replayed in a temporary folder of its own worker
    assert sorted(measured_by_replays(path)) == copied


def test_a_long_suite_is_profiled_only_where_replays_cannot_measure(installed, tmp_path):
    """Selection, one collection for all profiled runs, the stop at the deadline — in a
    process of its own."""
    script = f"""
import json, sys, time
sys.path.insert(0, {str(installed)!r})
from apiprof.engine.scenarios import suitepasses, testrun
suitepasses.SELECT_AFTER_SECONDS = 0.0  # every suite counts as long
runner = testrun.SuiteRunner({str(SUITE)!r}, "suite_pkg")
captured = runner.warm_up({ENTRY_POINTS!r}, capture=True)
imported = sys.modules["suite_pkg"].__file__
plan = suitepasses.plan_profiled_runs(runner, {ENTRY_POINTS!r}, captured)

def work(run_once):
    run_once()
    run_once()
    return "done"

result = suitepasses.run_profiled(runner, plan, work).results
late = suitepasses.run_profiled(runner, plan, work, deadline=time.monotonic() - 1)
print(json.dumps({{
    "imported": imported,
    "captured": sorted({{c.qualname for c in captured if c.payload}}),
    "journal": [c.shown for c in captured if c.qualname == "suite_pkg.Journal"],
    "ledger_origins": [c.origin for c in captured if c.qualname == "suite_pkg.Ledger"],
    "targets": plan.targets, "selected": sorted(plan.selected), "files": plan.files,
    "result": result, "late": [late.chunks, late.planner.skipped], "runs": len(runner.seconds),
    "outcomes": [dict(run.outcomes) for run in runner.runs],
    "notes": runner.notes,
}}))
"""
    found = run_printing_json(script, tmp_path)
    assert found["imported"].startswith(str(PROJECT / "src"))
    copied = [name for name in ENTRY_POINTS if name != "suite_pkg.count_lines"]
    assert found["captured"] == copied
    # Journal is built through Ledger's __init__: each class keeps its own constructions
    assert found["journal"] == ["([{'item': 'tea', 'qty': '2'}, {'item': 'jam', 'qty': '5'}])"]
    assert found["ledger_origins"] == [
        "tests:tests/test_suite_pkg.py::test_ledger_totals_parsed_records"
    ]
    # everything replays but count_lines (an open file): only its test is profiled
    assert found["targets"] == ["suite_pkg.count_lines"]
    assert found["selected"] == ["tests/test_suite_pkg.py::test_count_lines_of_an_open_file"]
    assert found["files"] == [str(SUITE / "test_suite_pkg.py")]
    assert found["result"] == ["done"] and found["runs"] == 3  # the warm-up and two runs
    warm, profiled, _ = found["outcomes"]
    assert warm["passed"] == 6 and profiled == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}
    # past the deadline, no chunk starts: the test is skipped as not fitting
    assert found["late"] == [0, found["selected"]]
    assert any(
        "7 entry point(s) it reached are measured by replaying" in note
        and "ran only 1 of its 6 tests, the quickest" in note
        for note in found["notes"]
    )


def test_a_warm_up_past_its_deadline_stops_after_the_test_under_way(installed, tmp_path):
    script = f"""
import json, sys, time
sys.path.insert(0, {str(installed)!r})
from apiprof.engine.scenarios import testrun
runner = testrun.SuiteRunner({str(SUITE)!r}, "suite_pkg")
captured = runner.warm_up({ENTRY_POINTS!r}, capture=True, stop_at=time.monotonic())
print(json.dumps({{
    "captured": sorted({{c.qualname for c in captured if c.payload}}),
    "outcomes": dict(runner.runs[0].outcomes), "notes": runner.notes,
}}))
"""
    found = run_printing_json(script, tmp_path)
    assert found["captured"] == ["suite_pkg.count_words"]  # the first test's call
    assert found["outcomes"] == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}
    assert any("warm-up run was stopped after 1 tests" in note for note in found["notes"])


def test_plugin_options_are_dropped_and_the_suite_gets_its_own_basetemp():
    prepared = suite_arguments(str(SUITE))
    overridden = prepared.args[prepared.args.index("-o") + 1]
    assert overridden == "addopts=-ra --strict-markers"
    basetemp = prepared.args[prepared.args.index("--basetemp") + 1]
    assert basetemp.startswith(tempfile.gettempdir())


def test_temporary_paths_travel_with_their_content(tmp_path, monkeypatch):
    capturing, replaying = tmp_path / "capturing", tmp_path / "replaying"
    capturing.mkdir()
    replaying.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(capturing))
    folder = capturing / "pytest-suite" / "test_x0"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.txt").write_text("alpha")
    data = temppaths.dumps((folder, str(folder / "sub" / "a.txt")), {"out": folder / "new.txt"})
    shutil.rmtree(capturing / "pytest-suite")
    (folder.parent / "gone").mkdir(parents=True)  # the original state must not matter

    monkeypatch.setattr(tempfile, "tempdir", str(replaying))
    (path, text), kwargs = temppaths.loads(data)
    assert isinstance(path, Path) and path.is_relative_to(replaying)
    assert (path / "sub" / "a.txt").read_text() == "alpha"
    assert isinstance(text, str) and Path(text).read_text() == "alpha"
    assert not kwargs["out"].exists() and kwargs["out"].parent.is_dir()
    (path / "extra").write_text("left by a replay")
    (path2, _), _ = temppaths.loads(data)  # every replay starts from the captured state
    assert path2 == path and sorted(os.listdir(path)) == ["sub"]


def test_a_temporary_folder_too_large_to_carry_is_a_capture_problem(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * (temppaths.MAX_SNAPSHOT + 1))
    with pytest.raises(temppaths.TempPathTooLarge, match="too large to copy"):
        temppaths.dumps((big,), {})
    outside = "/etc/hostname"  # not under the temporary folder: pickled as it is
    assert temppaths.snapshot(outside, str(tmp_path)) is None


def test_single_module_distributions_are_located_by_their_file():
    def code_at(filename: str):
        return compile("def f(): pass", filename, "exec").co_consts[0]

    tops = frozenset({"six", "pkg"})
    assert location_of(code_at("/src/six-1.17.0/six.py"), tops) == ("six.py", "f")
    assert location_of(code_at("/venv/site-packages/six.py"), tops) == ("six.py", "f")
    # a package's folder wins over a module of the same name inside it
    assert location_of(code_at("/src/pkg/pkg.py"), tops) == ("pkg/pkg.py", "f")
    assert location_of(code_at("/src/other.py"), tops) == ("", "")


def test_profiled_runs_that_cannot_fit_are_skipped_and_the_captures_handed_over(
    installed, tmp_path
):
    """A timeout would lose even the captured arguments: when the profiled runs cannot fit, the
    worker skips them (worker in a process of its own)."""
    script = f"""
import json, sys
sys.path.insert(0, {str(installed)!r})
from apiprof.engine.isolation.protocol import RunSuite
from apiprof.engine.isolation.worker import Worker
from apiprof.engine.scenarios import suitepasses
suitepasses.LEAST_SLOWDOWN = 10**9  # runs that could never fit
sent = []  # what the worker sends before its final reply
worker = Worker(None, 512, send=lambda task_id, message: sent.append(message))
reply = worker.handle(RunSuite("suite_pkg", {str(SUITE)!r}, "tests:tests", {ENTRY_POINTS!r}, budget=600))
print(json.dumps({{
    "runs": reply.runs, "problem": reply.problem, "measured": len(reply.measurements),
    "captured": sorted({{c.qualname for m in sent for c in m.calls if c.payload}}),
    "passed": reply.outcomes["passed"],
}}))
"""
    found = run_printing_json(script, tmp_path)
    assert found["runs"] == 0 and found["measured"] == 0 and found["passed"] == 6
    assert "so they were skipped (raise --tests-timeout" in found["problem"]
    assert found["captured"] == [name for name in ENTRY_POINTS if name != "suite_pkg.count_lines"]


def test_the_suite_status_says_whether_profiled_runs_were_needed_and_fitted():
    ran = {"passed": 3, "failed": 1}
    assert status_of(SuiteFinished(runs=3, exit_code=1, outcomes=ran)) == "ran"
    assert status_of(SuiteFinished(runs=0, exit_code=1, outcomes=ran)) == "replayed"
    late = SuiteFinished(runs=1, exit_code=1, outcomes=ran, problem="could not finish")
    assert status_of(late) == "unprofiled"
    nothing = SuiteFinished(runs=0, exit_code=4, outcomes={"errors": 1}, problem="no test ran")
    assert status_of(nothing) == "failed"


def test_a_replayed_generator_function_is_measured_while_it_is_iterated():
    """Calling a generator function runs none of its code: the replay drains what it returns."""
    import base64
    import difflib
    import pickle

    from apiprof.engine.measure import profiler
    from apiprof.engine.scenarios.capture import CapturedCall
    from apiprof.engine.scenarios.replayed import captured_spec
    from apiprof.engine.scenarios.spec import compile_scenario

    payload = base64.b64encode(pickle.dumps(((["a", "b"], ["a", "c"]), {}))).decode("ascii")
    call = CapturedCall("difflib.unified_diff", payload, "tests:test_diff.py::test_x")
    run = compile_scenario(captured_spec(call, 1), None)
    target = profiler.Target("difflib.unified_diff", difflib.unified_diff)
    report = profiler.profile(run, [target], scenario_id="captured", repeat=2, max_seconds=5)
    assert report.seen == {"difflib.unified_diff"}


DIES_IN_PROFILED_RUNS = """
import os
from pathlib import Path

from suite_pkg import count_lines, count_words


def test_counts_words():
    assert count_words("a b a") == {"a": 2, "b": 1}


def test_counts_lines_then_dies_when_run_again():
    # an open file cannot be copied: its test is profiled however long the warm-up took
    runs = int(os.environ.get("APIPROF_TEST_RUNS", "0")) + 1
    os.environ["APIPROF_TEST_RUNS"] = str(runs)
    with Path(__file__).open(encoding="utf-8") as stream:
        assert count_lines(stream) > 1
    if runs > 1:  # the profiled runs: the worker dies
        os._exit(3)
"""


def test_arguments_captured_before_the_worker_died_are_still_replayed(installed, tmp_path):
    suite = tmp_path / "dying_tests"
    suite.mkdir()
    (suite / "test_dies.py").write_text(DIES_IN_PROFILED_RUNS, encoding="utf-8")
    options = suite_only_options(suite, installed, capture=True)
    summary = scan("suite_pkg", db_path=tmp_path / "dying.db", options=options)
    assert summary.tests.status == "crashed" and summary.tests.measurements == {}
    assert [c.qualname for c in summary.tests.captured if c.payload] == ["suite_pkg.count_words"]
    assert "suite_pkg.count_words" not in {m.qualname for m in summary.not_profiled}
