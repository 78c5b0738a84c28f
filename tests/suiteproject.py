"""The fixture project whose own test suite ``--tests`` runs (``suite_project``): where it is,
its entry points, and a copy of its package for the scan to import (the suite imports its own
``src/`` tree, as a checkout's suite does)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

PROJECT = Path(__file__).parent / "fixtures" / "suite_project"
SUITE = PROJECT / "tests"
ENTRY_POINTS = [
    "suite_pkg.Journal",
    "suite_pkg.Journal.latest",
    "suite_pkg.Ledger",
    "suite_pkg.Ledger.total",
    "suite_pkg.count_lines",
    "suite_pkg.count_words",
    "suite_pkg.parse_record",
    "suite_pkg.save_lines",
]


def installed_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second copy of suite_pkg, the one the scan imports."""
    folder = tmp_path_factory.mktemp("installed")
    shutil.copytree(PROJECT / "src" / "suite_pkg", folder / "suite_pkg")
    return folder
