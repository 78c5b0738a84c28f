"""Small facts kept between runs: this machine's speed index per interpreter, the last upload."""

from __future__ import annotations

import json
import platform
import sys
import time
from typing import Any

from apiprof.engine.collect.paths import Layout
from apiprof.engine.collect.spool import write_atomic


def _interpreter_key() -> str:
    return f"{sys.implementation.name}-{platform.python_version()}-{platform.machine()}"


def _read(layout: Layout, name: str) -> dict[str, Any]:
    try:
        data = json.loads((layout.state / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(layout: Layout, name: str, data: dict[str, Any]) -> None:
    write_atomic(layout.state / name, json.dumps(data, indent=2, sort_keys=True).encode())


def machine_speed(layout: Layout) -> float | None:
    """The stored speed index of this machine for the running interpreter, if measured."""
    value = _read(layout, "machine.json").get(_interpreter_key())
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def save_machine_speed(layout: Layout, speed_ns: float) -> None:
    data = _read(layout, "machine.json")
    data[_interpreter_key()] = speed_ns
    _write(layout, "machine.json", data)


SETUP_COST_FILE = "setup-cost-ns"
"""CPU the collector's start-up took last time, as plain text: read at start-up without json."""


def save_setup_cost(layout: Layout, cost_ns: int) -> None:
    write_atomic(layout.state / SETUP_COST_FILE, str(int(cost_ns)).encode())


def save_program_cost(layout: Layout, report: dict[str, Any]) -> None:
    """What collection cost the last collected program that ended (its own accounting)."""
    _write(layout, "last-program.json", {"finished_at": time.time(), **report})


def last_program_cost(layout: Layout) -> dict[str, Any]:
    return _read(layout, "last-program.json")


def last_upload(layout: Layout) -> dict[str, Any]:
    return _read(layout, "upload.json")


def save_upload(layout: Layout, summary: dict[str, Any]) -> None:
    _write(layout, "upload.json", {"finished_at": time.time(), **summary})
