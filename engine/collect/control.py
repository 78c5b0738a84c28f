"""What ``apiprof collect enable|disable|status|purge`` do, as library functions."""

from __future__ import annotations

import os
import site
import sqlite3
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from apiprof.engine.collect.config import (
    COLLECT_ENV,
    CollectConfig,
    config_problems,
    load_config,
    save_config,
)
from apiprof.engine.collect.paths import Layout
from apiprof.engine.collect.slots import slots_in_use
from apiprof.engine.collect.spool import spool_bytes, spooled
from apiprof.engine.collect.state import (
    last_program_cost,
    last_upload,
    machine_speed,
    save_machine_speed,
)
from apiprof.engine.measure.speed import machine_speed_ns
from apiprof.errors import UsageError

HOOK_NAME = "apiprof-collect.pth"


@dataclass(frozen=True)
class CollectStatus:
    home: Path
    enabled: bool  # `apiprof collect enable` in force
    forced: str  # APIPROF_COLLECT of this environment ("" if unset)
    hook: Path | None  # the start-up hook this interpreter runs, None if missing
    config: CollectConfig
    problems: list[str]
    reference: Path | None  # None with a configured API list
    candidates: int | None  # entry points the reference offers (None: unreadable or missing)
    spool_files: int
    spool_bytes: int
    rejected: int
    collecting_now: int
    machine_speed_ns: float | None
    last_upload: dict[str, Any] = field(default_factory=dict)
    last_program: dict[str, Any] = field(default_factory=dict)  # its collection cost

    @property
    def active(self) -> bool:
        """Whether a program started now in this environment would be collected."""
        if self.hook is None or self.forced == "0":
            return False
        return bool(self.forced) or self.enabled

    def to_json(self) -> dict[str, Any]:
        config = self.config.to_json()
        config["token"] = "***" if config["token"] else ""
        return {
            "home": str(self.home),
            "enabled": self.enabled,
            "active": self.active,
            "forced": self.forced,
            "hook": str(self.hook) if self.hook else None,
            "config": config,
            "problems": self.problems,
            "reference": str(self.reference) if self.reference else None,
            "candidates": self.candidates,
            "spool_files": self.spool_files,
            "spool_bytes": self.spool_bytes,
            "rejected": self.rejected,
            "collecting_now": self.collecting_now,
            "machine_speed_ns": self.machine_speed_ns,
            "last_upload": self.last_upload,
            "last_program": self.last_program,
        }


def _site_dirs() -> list[Path]:
    dirs = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    return [Path(d) for d in dict.fromkeys(dirs) if d]


def find_hook() -> Path | None:
    """The start-up hook this interpreter processes at start-up, if installed."""
    for directory in _site_dirs():
        candidate = directory / HOOK_NAME
        if candidate.is_file():
            return candidate
    return None


def install_hook() -> Path:
    """Put the start-up hook into this environment's site-packages (installs normally ship it;
    this repairs one that does not, such as a copy made without pip)."""
    target = Path(sysconfig.get_paths()["purelib"]) / HOOK_NAME
    text = resources.files("apiprof.engine.collect").joinpath(HOOK_NAME).read_text("utf-8")
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"cannot install the start-up hook into {target.parent} ({exc.strerror}); "
            "reinstall apiprof with pip into this environment"
        ) from None
    return target


def _candidates(path: Path) -> int | None:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM entry_points").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def collect_status(layout: Layout, environ: Mapping[str, str] = os.environ) -> CollectStatus:
    config = load_config(layout, environ)
    reference = None if config.apis else config.reference_path(layout)
    rejected = len(list(layout.rejected.glob("*.json"))) if layout.rejected.is_dir() else 0
    return CollectStatus(
        home=layout.root,
        enabled=layout.enabled_flag.exists(),
        forced=environ.get(COLLECT_ENV, ""),
        hook=find_hook(),
        config=config,
        problems=config_problems(layout, environ),
        reference=reference,
        candidates=len(config.apis)
        if config.apis
        else (_candidates(reference) if reference and reference.is_file() else None),
        spool_files=len(spooled(layout)),
        spool_bytes=spool_bytes(layout),
        rejected=rejected,
        collecting_now=slots_in_use(layout, config.max_programs),
        machine_speed_ns=machine_speed(layout),
        last_upload=last_upload(layout),
        last_program=last_program_cost(layout),
    )


def enable(layout: Layout, changes: Mapping[str, Any]) -> tuple[CollectStatus, Path | None]:
    """Save ``changes`` to the settings, measure this machine's speed index, make sure the
    start-up hook is installed and turn collection on; returns the status and, if the hook had
    to be installed, where."""
    save_config(layout, changes)
    save_machine_speed(layout, machine_speed_ns())
    installed = install_hook() if find_hook() is None else None
    layout.root.mkdir(parents=True, exist_ok=True)
    layout.enabled_flag.write_text("collection enabled by `apiprof collect enable`\n")
    return collect_status(layout), installed


def disable(layout: Layout) -> CollectStatus:
    layout.enabled_flag.unlink(missing_ok=True)
    return collect_status(layout)
