"""Scan options and database reads shared by the ``--tests`` tests (tests/test_tests_source.py,
tests/test_tests_real_suite.py, tests/test_tests_temp_paths.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from apiprof.db.schema import open_db
from apiprof.engine.scan import ScanOptions
from apiprof.model.records import ScenarioSource


def suite_only_options(tests: Path, python_path: Path, *, capture: bool) -> ScanOptions:
    """Options under which only the ``--tests`` suite (and, with ``capture``, the arguments
    captured from it) can profile anything: every other scenario source is off."""
    return ScanOptions(
        docstrings=False,
        synthesize=False,
        capture=capture,
        bundled_scenarios=False,
        repeat=3,
        tests=str(tests),
        python_path=(str(python_path),),
    )


def run_printing_json(script: str, cwd: Path) -> dict:
    """Run ``script`` in a Python of its own (pytest inside pytest would share sys.modules);
    the JSON its last line prints."""
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def measured_by_replays(db_path: Path) -> set[str]:
    """The entry points a scenario replaying captured arguments has measurements of."""
    db = open_db(db_path, readonly=True)
    try:
        rows = db.execute(
            "SELECT DISTINCT s.qualname FROM scenarios s JOIN buckets b "
            "ON b.scenario_id = s.id AND b.qualname = s.qualname WHERE s.source = ?",
            [str(ScenarioSource.CAPTURED)],
        ).fetchall()
    finally:
        db.conn.close()
    return {qualname for (qualname,) in rows}
