"""End-to-end scans of fixture packages: tiny_pkg (well behaved) and hostile_pkg (not)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from apiprof.db import query
from apiprof.db.schema import open_db
from apiprof.engine.scan import ScanOptions, ScanProgress, scan
from apiprof.engine.scan.bucket import blocked_reason, combine_outcomes
from apiprof.errors import PackageNotFound, ScenarioFileError, UsageError
from apiprof.model.records import Coverage, Metric

FIXTURES = Path(__file__).parent / "fixtures"
TINY_SCENARIOS = str(FIXTURES / "tiny_pkg" / "scenarios.toml")
FAST = {"repeat": 3, "max_seconds": 5.0, "sizes": (10, 100, 1000), "python_path": (str(FIXTURES),)}


def tiny_options(**changes) -> ScanOptions:
    return ScanOptions(**{"scenario_files": (TINY_SCENARIOS,), **FAST, **changes})


def sample_counts(db_path) -> dict[tuple[str, str], int]:
    db = open_db(db_path, readonly=True)
    try:
        rows = db.execute(
            "SELECT qualname, metric, SUM(count) FROM buckets GROUP BY qualname, metric"
        ).fetchall()
        return {(q, m): n for q, m, n in rows}
    finally:
        db.conn.close()


@pytest.fixture(scope="session")
def tiny_db(tmp_path_factory):
    """tiny_pkg scanned once into a database shared by the tests that only read it."""
    path = tmp_path_factory.mktemp("tiny") / "tiny.db"
    events: list[ScanProgress] = []
    summary = scan("tiny_pkg", db_path=path, options=tiny_options(), progress=events.append)
    return path, summary, events


def test_tiny_pkg_is_profiled_completely(tiny_db):
    path, summary, _ = tiny_db
    assert summary.status == "finished"
    assert summary.discovered >= 7
    assert summary.profiled == summary.discovered, summary.not_profiled
    db = open_db(path, readonly=True)
    found = query.all_summaries(db, "tiny_pkg")
    assert {
        "tiny_pkg.sort_numbers",
        "tiny_pkg.Box",
        "tiny_pkg.Box.scaled",
        "tiny_pkg.total_area",
    } <= set(found)
    for name in ("tiny_pkg.sort_numbers", "tiny_pkg.join_words"):
        s = found[name]
        assert s.coverage == "profiled"
        assert s.histograms[Metric.CPU].count > 0 and s.histograms[Metric.ALLOC_INCL].count > 0
    assert (
        db.execute("SELECT status FROM scans WHERE id = ?", [summary.scan_id]).fetchone()[0]
        == "finished"
    )
    db.conn.close()


def test_sized_scenario_measures_every_size_and_fits_growth(tiny_db):
    path, _, _ = tiny_db
    db = open_db(path, readonly=True)
    sizes = {
        r[0]
        for r in db.execute(
            "SELECT DISTINCT size FROM buckets WHERE qualname = 'tiny_pkg.sort_numbers' "
            "AND scenario_id = 'file:scenarios.toml#sort-reversed'"
        )
    }
    assert sizes == {10, 100, 1000}
    fits = query.growth(db, "tiny_pkg.sort_numbers")
    assert any(
        f.scenario_id == "file:scenarios.toml#sort-reversed" and f.size_axis == "n" for f in fits
    )
    db.conn.close()


def test_progress_reports_every_entry_point(tiny_db):
    _, summary, events = tiny_db
    stages = [e.stage for e in events]
    assert stages[:2] == ["isolation", "calibrate"] and "discover" in stages
    assert stages[-1] == "done"
    finished = [e for e in events if e.stage == "profile" and e.qualname]
    assert len(finished) == summary.discovered
    assert finished[-1].done == finished[-1].total == summary.discovered


def test_scanning_again_doubles_the_counts(tiny_db, tmp_path):
    path, _, _ = tiny_db
    copy = tmp_path / "again.db"
    shutil.copy(path, copy)
    before = sample_counts(copy)
    scan("tiny_pkg", db_path=copy, options=tiny_options(jobs=2))
    after = sample_counts(copy)
    # calls and allocations are counted per call, so the same scenarios give the same counts
    deterministic = {k: v for k, v in before.items() if k[1] in (Metric.CALLS, Metric.ALLOC_INCL)}
    assert deterministic
    assert {k: after[k] for k in deterministic} == {k: 2 * v for k, v in deterministic.items()}


def test_an_interrupted_scan_keeps_its_results_and_resumes(tmp_path):
    path = tmp_path / "resume.db"
    seen: list[str] = []

    def interrupt_after_two(event: ScanProgress) -> None:
        if event.stage == "profile" and event.qualname:
            seen.append(event.qualname)
            if len(seen) == 2:
                raise KeyboardInterrupt

    options = tiny_options(scenario_files=())
    with pytest.raises(KeyboardInterrupt):
        scan("tiny_pkg", db_path=path, options=options, progress=interrupt_after_two)
    db = open_db(path, readonly=True)
    assert db.execute("SELECT status FROM scans").fetchall() == [("interrupted",)]
    stored = {r[0] for r in db.execute("SELECT qualname FROM coverage WHERE status = 'profiled'")}
    db.conn.close()
    assert set(seen) <= stored
    before = sample_counts(path)

    summary = scan("tiny_pkg", db_path=path, options=options, resume=True)
    assert summary.status == "finished"
    assert summary.resumed_skipped >= 2
    assert summary.profiled == summary.discovered
    after = sample_counts(path)
    for key, count in before.items():
        if key[0] in seen:
            assert after[key] == count, f"{key} was measured again on resume"
    db = open_db(path, readonly=True)
    assert db.execute("SELECT COUNT(*), MIN(status) FROM scans").fetchone() == (1, "finished")
    db.conn.close()
    with pytest.raises(UsageError, match="no unfinished scan"):
        scan("tiny_pkg", db_path=path, options=options, resume=True)


@pytest.fixture(scope="module")
def hostile_scan(tmp_path_factory):
    home = tmp_path_factory.mktemp("hostile")
    home.chmod(0o755)  # readable by the sandbox's uid when tests run as root
    shutil.copytree(FIXTURES / "hostile_pkg", home / "hostile_pkg")
    (home / "CANARY").write_text("alive")
    options = ScanOptions(
        repeat=3,
        max_seconds=2.0,
        jobs=2,
        call_timeout=1.0,
        scenario_timeout=8.0,
        memory_mb=512,
        python_path=(str(home),),
    )
    summary = scan("hostile_pkg", db_path=home / "hostile.db", options=options)
    return home, summary


def test_hostile_package_is_contained_and_each_failure_has_its_reason(hostile_scan):
    home, summary = hostile_scan
    assert summary.status == "finished"
    assert (home / "CANARY").read_text() == "alive"
    assert not (home / "written-by-hostile-pkg").exists()
    reasons = {
        r.qualname.removeprefix("hostile_pkg."): (r.status, r.reason) for r in summary.not_profiled
    }
    expected = {
        "delete_canary": (
            Coverage.BLOCKED,
            f"tried to delete {home / 'CANARY'} outside the sandbox",
        ),
        "write_outside": (Coverage.BLOCKED, "outside the sandbox"),
        "open_socket": (Coverage.BLOCKED, "tried to connect to 192.0.2.1:9"),
        "spawn_process": (Coverage.BLOCKED, "tried to spawn a process"),
        "segfault": (Coverage.CRASHED, "SIGSEGV"),
        "loop_forever": (Coverage.TIMED_OUT, "timeout"),
        # the CPU-time stop ends these, or the scanner when a busy machine gives the worker too
        # little CPU for that within the scenario timeout: either way, timed out
        "loop_ignoring_alarms": (
            Coverage.TIMED_OUT,
            ("did not answer the interrupt", "scenario timeout"),
        ),
        "spin_in_c": (Coverage.TIMED_OUT, ("did not answer the interrupt", "scenario timeout")),
        "loop_blocking_signals": (Coverage.TIMED_OUT, "scenario timeout"),
        "allocate_forever": (Coverage.MEMORY, "memory"),
    }
    for name, (status, expected_reasons) in expected.items():
        assert name in reasons, f"{name} missing from the report"
        assert reasons[name][0] == status, (name, reasons[name])
        if isinstance(expected_reasons, str):
            expected_reasons = (expected_reasons,)
        assert any(reason in reasons[name][1] for reason in expected_reasons), (name, reasons[name])


def test_hostile_package_good_functions_are_profiled_and_import_failure_reported(hostile_scan):
    home, summary = hostile_scan
    not_profiled = {r.qualname for r in summary.not_profiled}
    for good in ("hostile_pkg.add", "hostile_pkg.greet", "hostile_pkg.Counter.bump"):
        assert good not in not_profiled
    assert "hostile_pkg.broken" in summary.import_failures
    assert "refuses to be imported" in summary.import_failures["hostile_pkg.broken"]
    db = open_db(home / "hostile.db", readonly=True)
    assert query.summary(db, "hostile_pkg.add").histograms[Metric.CPU].count > 0
    status = db.execute(
        "SELECT status FROM coverage WHERE qualname = 'hostile_pkg.broken'"
    ).fetchone()
    assert status == ("import_failed",)
    db.conn.close()


def test_unknown_package_and_bad_scenario_file_fail_clearly(tmp_path):
    with pytest.raises(PackageNotFound, match="no_such_package_xyz"):
        scan("no_such_package_xyz", db_path=tmp_path / "x.db", options=ScanOptions(repeat=1))
    with pytest.raises(ScenarioFileError, match=r"bad_scenarios.toml:7: unknown key `size`"):
        scan(
            "tiny_pkg",
            db_path=tmp_path / "x.db",
            options=tiny_options(scenario_files=(str(FIXTURES / "bad_scenarios.toml"),)),
        )
    with pytest.raises(ScenarioFileError, match="no such scenario file"):
        scan(
            "tiny_pkg",
            db_path=tmp_path / "x.db",
            options=tiny_options(scenario_files=("missing.toml",)),
        )


def test_combine_outcomes_prefers_a_profile_then_the_most_telling_failure():
    assert combine_outcomes("f", [("crashed", "x"), ("profiled", "")]).status == Coverage.PROFILED
    record = combine_outcomes("f", [("no_arguments", "a"), ("blocked", "b"), ("crashed", "c")])
    assert (record.status, record.reason) == (Coverage.BLOCKED, "b")


def test_sizes_measured_before_a_timeout_are_kept(tmp_path):
    path = tmp_path / "explosive.db"
    options = tiny_options(
        scenario_files=(str(FIXTURES / "tiny_pkg" / "explosive_scenarios.toml"),),
        docstrings=False,
        synthesize=False,
        capture=False,
        bundled_scenarios=False,
        call_timeout=1.0,
    )
    summary = scan("tiny_pkg", db_path=path, options=options)
    assert "tiny_pkg.sort_numbers" not in {r.qualname for r in summary.not_profiled}
    db = open_db(path, readonly=True)
    try:
        sizes = {
            r[0]
            for r in db.execute(
                "SELECT DISTINCT size FROM buckets WHERE qualname = 'tiny_pkg.sort_numbers'"
            )
        }
        fits = db.execute(
            "SELECT points FROM growth WHERE qualname = 'tiny_pkg.sort_numbers' AND metric = 'wall_ns'"
        ).fetchall()
    finally:
        db.conn.close()
    assert sizes == {2, 4, 8}  # n = 1000 ran out of time; what came before it is stored
    assert fits == [(3,)]


def test_a_size_whose_calls_near_the_timeout_is_the_last_one_tried(tmp_path):
    path = tmp_path / "slowing.db"
    options = tiny_options(
        scenario_files=(str(FIXTURES / "tiny_pkg" / "slowing_scenarios.toml"),),
        docstrings=False,
        synthesize=False,
        capture=False,
        bundled_scenarios=False,
        call_timeout=1.0,
        max_seconds=0.5,
    )
    started = time.monotonic()
    summary = scan("tiny_pkg", db_path=path, options=options)
    assert "tiny_pkg.sort_numbers" not in {r.qualname for r in summary.not_profiled}
    db = open_db(path, readonly=True)
    try:
        sizes = {
            r[0]
            for r in db.execute(
                "SELECT DISTINCT size FROM buckets WHERE qualname = 'tiny_pkg.sort_numbers'"
            )
        }
    finally:
        db.conn.close()
    assert sizes == {
        2,
        4,
    }  # n = 4 took 0.3 s a call, over a fifth of the 1 s timeout: n = 8 was not started
    assert time.monotonic() - started < 60


def test_an_entry_point_that_went_online_says_it_needs_the_network():
    reasons = [
        "tried to look up the host 'example.com' (network access is blocked)",
        "tried to connect to the Unix socket /var/run/nscd/socket outside the sandbox",
    ]
    assert blocked_reason(reasons).startswith("needs network access, which the sandbox blocks")
    assert reasons[0] in blocked_reason(reasons)
    local = ["tried to write /etc/passwd outside the sandbox"]
    assert blocked_reason(local) == local[0]
