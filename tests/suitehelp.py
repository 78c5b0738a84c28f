"""Scan options shared by the ``--tests`` tests (tests/test_tests_source.py,
tests/test_tests_real_suite.py)."""

from __future__ import annotations

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
