"""The profile database as the Sphinx build sees it: checked once, read lazily, cached per process.

The database is inspected once when the builder starts (in the main process, before parallel
readers fork), so a missing or corrupt file produces exactly one warning. Readers open their
own read-only connection on first use — SQLite connections must not cross a fork.
"""

from __future__ import annotations

import os
import sqlite3
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from apiprof.db import query
from apiprof.db.query import ApiSummary
from apiprof.db.schema import open_db
from apiprof.errors import DatabaseError

logger = logging.getLogger(__name__)

_PROFILES: weakref.WeakKeyDictionary[BuildEnvironment, Profiles] = weakref.WeakKeyDictionary()


def db_path(confdir: str | Path, setting: str) -> Path:
    """``apiprof_db`` resolved against the directory holding conf.py."""
    return Path(confdir, setting)


def stamp_db(path: Path) -> tuple | None:
    """What identifies the database's contents: the file's time and size plus the data version
    (which also sees commits still in the write-ahead log)."""
    if not path.exists():
        return None
    stat = path.stat()
    try:
        db = open_db(path, readonly=True)
        try:
            return (stat.st_mtime_ns, stat.st_size, tuple(query.data_version(db)))
        finally:
            db.close()
    except (DatabaseError, sqlite3.Error):
        return (stat.st_mtime_ns, stat.st_size)


@dataclass
class Profiles:
    """Read-only access to one database for one build; ``error`` is set when it is unusable."""

    path: Path
    stamp: tuple | None = None
    error: str = ""
    _db: sqlite_utils.Database | None = None
    _pid: int = 0
    _cache: dict[str, ApiSummary | None] = field(default_factory=dict)
    _aliases: dict[str, str] | None = None

    @property
    def usable(self) -> bool:
        return not self.error

    def connection(self) -> sqlite_utils.Database:
        if self._db is None or self._pid != os.getpid():
            self._db, self._pid = open_db(self.path, readonly=True), os.getpid()
        return self._db

    def check(self) -> None:
        """Open the database once; remember (and warn about) why it cannot be used."""
        try:
            db = self.connection()
            query.data_version(db)
        except (DatabaseError, sqlite3.Error) as exc:
            self.fail(str(exc) if isinstance(exc, DatabaseError) else f"{self.path}: {exc}")

    def fail(self, reason: str) -> None:
        if self.error:
            return
        self.error = reason
        self._cache.clear()
        self._aliases = {}
        logger.warning(
            "apiprof: cost summaries are left out of this build: %s",
            reason,
            type="apiprof",
            subtype="database",
        )

    def lookup(self, name: str) -> ApiSummary | None:
        """Summary for a documented name (aliases followed); None when unknown or unusable.

        The first lookup loads every summary in a handful of batched queries (documents
        usually show most of a database's APIs); later lookups are dictionary reads.
        """
        if self.error:
            return None
        try:
            if self._aliases is None:
                self._preload(self.connection())
            return self._cache.get(self._aliases.get(name, name))
        except (DatabaseError, sqlite3.Error) as exc:
            self.fail(f"{self.path}: {exc}")
            return None

    def _preload(self, db: sqlite_utils.Database) -> None:
        self._cache = query.all_summaries(db)
        self._aliases = dict(db.execute("SELECT alias, qualname FROM aliases").fetchall())

    def read(self, reader, *args):
        """Run a :mod:`apiprof.db.query` function on the connection; None if the database fails."""
        if self.error:
            return None
        try:
            return reader(self.connection(), *args)
        except (DatabaseError, sqlite3.Error) as exc:
            self.fail(f"{self.path}: {exc}")
            return None

    def close(self) -> None:
        if self._db is not None and self._pid == os.getpid():
            self._db.close()
        self._db = None


def start_profiles(app: Sphinx) -> Profiles:
    """Inspect the configured database at builder start (main process, before any fork)."""
    return _start(app.env, db_path(app.confdir, app.config.apiprof_db))


def _start(env: BuildEnvironment, path: Path) -> Profiles:
    profiles = Profiles(path, stamp=stamp_db(path))
    profiles.check()
    _PROFILES[env] = profiles
    return profiles


def profiles_for(env: BuildEnvironment) -> Profiles:
    """The build's database view (started lazily if the builder hook did not run)."""
    return _PROFILES.get(env) or _start(env, db_path(env.srcdir, env.config.apiprof_db))


def close_profiles(app: Sphinx, _exception: BaseException | None = None) -> None:
    profiles = _PROFILES.pop(app.env, None)
    if profiles is not None:
        profiles.close()
