"""Suite-wide guards: no profiler hook, monitoring tool or child process may outlive a test."""

from __future__ import annotations

import multiprocessing
import sys

import pytest


def _monitoring_tools() -> list[str]:
    if not hasattr(sys, "monitoring"):
        return []
    return [name for tool in range(6) if (name := sys.monitoring.get_tool(tool))]


@pytest.fixture(autouse=True)
def no_leaked_profiling_state():
    tools_before = _monitoring_tools()
    yield
    assert sys.getprofile() is None, "a test left a profile hook installed"
    assert sys.gettrace() is None or "coverage" in repr(sys.gettrace()) or "pydevd" in repr(sys.gettrace())
    assert _monitoring_tools() == tools_before, "a test left a sys.monitoring tool registered"
    leftover = [p for p in multiprocessing.active_children() if p.is_alive()]
    assert not leftover, f"a test left worker processes running: {leftover}"
