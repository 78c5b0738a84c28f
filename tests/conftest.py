"""Suite-wide guards: no profiler hook, monitoring tool or child process may outlive a test."""

from __future__ import annotations

import atexit
import multiprocessing
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from fakeclock import clock  # noqa: F401 (a fixture: the timing pass's fake clock)

FIXTURES = Path(__file__).parent / "fixtures"
# The fixture packages (tiny_pkg, discover_pkg, groundtruth_pkg, ...) import by name in tests;
# workers get the same directory through ScanOptions.python_path.
sys.path.insert(0, str(FIXTURES))
# Delay traces of language servers started by tests land here, not in the user's cache.
if not os.environ.get("APIPROF_DELAYS_DIR"):
    os.environ["APIPROF_DELAYS_DIR"] = tempfile.mkdtemp(prefix="apiprof-test-delays-")
    atexit.register(shutil.rmtree, os.environ["APIPROF_DELAYS_DIR"], True)


def _monitoring_tools() -> list[str]:
    if not hasattr(sys, "monitoring"):
        return []
    return [name for tool in range(6) if (name := sys.monitoring.get_tool(tool))]


@pytest.fixture(autouse=True)
def no_leaked_profiling_state():
    tools_before = _monitoring_tools()
    yield
    assert sys.getprofile() is None, "a test left a profile hook installed"
    assert (
        sys.gettrace() is None
        or "coverage" in repr(sys.gettrace())
        or "pydevd" in repr(sys.gettrace())
    )
    assert _monitoring_tools() == tools_before, "a test left a sys.monitoring tool registered"
    leftover = [p for p in multiprocessing.active_children() if p.is_alive()]
    assert not leftover, f"a test left worker processes running: {leftover}"
