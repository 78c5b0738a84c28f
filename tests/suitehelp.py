"""Scan options shared by the ``--tests`` tests (tests/test_tests_source.py,
tests/test_tests_real_suite.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from apiprof.engine.scan import ScanOptions


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
