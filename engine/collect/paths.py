"""The files under the apiprof home (:mod:`~apiprof.engine.collect.home` says where that is)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from apiprof.engine.collect.home import home_dir


@dataclass(frozen=True)
class Layout:
    """The files under one apiprof home."""

    root: Path

    @classmethod
    def current(cls, environ: Mapping[str, str] = os.environ) -> Layout:
        return cls(Path(home_dir(environ)))

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
