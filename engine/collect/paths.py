"""Where collection keeps its state: ``APIPROF_HOME``, else the platform's user data directory.

The ``apiprof-collect.pth`` start-up hook computes the same default itself (it runs before any
apiprof module may be imported); a test keeps the two in step.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

HOME_ENV = "APIPROF_HOME"


def default_home(environ: Mapping[str, str] = os.environ) -> Path:
    """The platform's per-user data directory for apiprof (XDG on Linux and BSDs)."""
    if os.name == "nt":
        base = environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    else:
        base = environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "apiprof"


def collect_home(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get(HOME_ENV) or default_home(environ))


@dataclass(frozen=True)
class Layout:
    """The files under one apiprof home."""

    root: Path

    @classmethod
    def current(cls, environ: Mapping[str, str] = os.environ) -> Layout:
        return cls(collect_home(environ))

    @property
    def enabled_flag(self) -> Path:
        """Present while ``apiprof collect enable`` is in force (the hook checks only this)."""
        return self.root / "collect-enabled"

    @property
    def config(self) -> Path:
        return self.root / "collect.json"

    @property
    def spool(self) -> Path:
        """Summaries waiting for upload, one batch per file."""
        return self.root / "spool"

    @property
    def rejected(self) -> Path:
        """Batches the service refused (kept for inspection, never re-sent)."""
        return self.root / "rejected"

    @property
    def slots(self) -> Path:
        """One lock file per program allowed to collect at once."""
        return self.root / "slots"

    @property
    def state(self) -> Path:
        """Measured facts about this machine and the last upload."""
        return self.root / "state"

    @property
    def upload_lock(self) -> Path:
        return self.root / "upload.lock"

    @property
    def reference(self) -> Path:
        """Where ``apiprof sync`` keeps the aggregate, the default reference for collection."""
        return self.root / "reference.db"
