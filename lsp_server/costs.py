"""The cost index: API profiles from one or more databases, merged and cached in memory.

Editors ask for the same few hundred names over and over, a completion list at a time, so the
index answers from a per-name cache and fetches only the names it has not seen, in one batch
(primary-key lookups, never a scan of the database). Only the most recently used profiles stay in
memory: the session keeps what it shows as text, and a profile is dozens of histogram objects
that every full pass of the garbage collector would walk — in the middle of a request. A database file that changes on disk (its
inode, size or mtime, or those of its WAL file) drops that database's contribution on the next
request; a database that is missing is reported once and picked up when it appears.

Reads never leave a transaction open: every query is read to the end at once, so while the
editor idles a scan can checkpoint its WAL, and a file replaced by ``mv`` is reopened rather than
read through a stale WAL.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils

from apiprof.db.schema import open_db
from apiprof.errors import DatabaseError
from apiprof.lsp_server.profiles import CostProfile, load_profiles

log = logging.getLogger(__name__)

Fingerprint = tuple[int, ...]

MAX_CACHED_PROFILES = 256
"""Profiles kept in memory, most recently used first out last; names no database knows are all
remembered (a set of strings costs the garbage collector nothing to walk)."""

EDITOR_ADVICE = "set the `databases` option to another file"
"""How the editor's messages name a different database (the CLI says ``--db``)."""


def fingerprint(path: Path) -> Fingerprint | None:
    """Identity, mtime and size of the file, and mtime and size of its WAL (a write through the
    WAL may not touch the main file; ``mv`` over it changes the inode)."""
    try:
        main = os.stat(path)
    except OSError:
        return None
    try:
        wal = os.stat(f"{path}-wal")
        wal_state = (wal.st_mtime_ns, wal.st_size)
    except OSError:
        wal_state = (0, 0)
    return (main.st_dev, main.st_ino, main.st_mtime_ns, main.st_size, *wal_state)


@dataclass
class _Source:
    """One database file and what has been read from it since it last changed."""

    path: Path
    db: sqlite_utils.Database | None = None
    stamp: Fingerprint | None = None
    problem: str = ""  # why the database is unusable right now ("" when fine)
    # name → canonical (identity when no alias)
    aliases: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        if self.db is not None:
            self.db.conn.close()
        self.db = None
        self.aliases.clear()


class CostIndex:
    """Merged, cached profiles over ``paths`` (first database wins for descriptive fields)."""

    def __init__(self, paths: Iterable[Path], report: Callable[[str], None] | None = None) -> None:
        self._sources = [_Source(Path(p)) for p in dict.fromkeys(paths)]
        self._report = report or log.warning
        self._profiles: dict[str, CostProfile] = {}  # least recently used first
        self._unknown: set[str] = set()
        self.generation = 0  # increases whenever any database changed (for render caches)

    @property
    def paths(self) -> list[Path]:
        return [s.path for s in self._sources]

    def close(self) -> None:
        for source in self._sources:
            source.close()
        self._forget()

    def _forget(self) -> None:
        self._profiles.clear()
        self._unknown.clear()

    def refresh(self) -> bool:
        """Stat every database (a few µs each) and drop caches of the ones that changed."""
        changed = False
        for source in self._sources:
            stamp = fingerprint(source.path)
            if stamp == source.stamp and (source.db is not None or source.problem):
                continue
            changed = True
            source.close()
            self._open(source)
            # stamp after opening: a reader's first open of a WAL database creates the -wal file
            source.stamp = fingerprint(source.path)
        if changed:
            self._forget()
            self.generation += 1
        return changed

    def _open(self, source: _Source) -> None:
        try:
            source.db = open_db(source.path, readonly=True, another=EDITOR_ADVICE)
        except DatabaseError as exc:
            problem = str(exc)
            if problem != source.problem:
                self._report(problem)
            source.problem = problem
            return
        if source.problem:
            self._report(f"{source.path}: database is usable again")
        source.problem = ""

    def problems(self) -> list[str]:
        return [s.problem for s in self._sources if s.problem]

    def lookup(self, name: str) -> CostProfile | None:
        """Profile of a (possibly re-exported) dotted name, or None if no database knows it."""
        return self.lookup_many([name])[name]

    def lookup_many(self, names: Iterable[str]) -> dict[str, CostProfile | None]:
        """Batch lookup: cached names cost a dict access; the rest cost one batch per database."""
        found: dict[str, CostProfile | None] = {}
        missing = []
        profiles = self._profiles
        for name in names:
            if name in found:
                continue
            if name in self._unknown:
                found[name] = None
            elif (profile := profiles.pop(name, None)) is not None:
                found[name] = profiles[name] = profile  # now the most recently used
            else:
                missing.append(name)
        if missing:
            per_source = [self._fetch(source, missing) for source in self._sources]
            for name in missing:
                known = [p for fetched in per_source if (p := fetched.get(name)) is not None]
                if known:
                    found[name] = profiles[name] = functools.reduce(CostProfile.add, known)
                else:
                    found[name] = None
                    self._unknown.add(name)
            for name in list(
                itertools.islice(profiles, max(0, len(profiles) - MAX_CACHED_PROFILES))
            ):
                del profiles[name]
        return found

    def _fetch(self, source: _Source, names: list[str]) -> dict[str, CostProfile]:
        if source.db is None:
            return {}
        try:
            unknown = [n for n in names if n not in source.aliases]
            source.aliases.update(_canonical_names(source.db, unknown))
            canonical = [source.aliases[n] for n in names]
            fetched = load_profiles(source.db, list(dict.fromkeys(canonical)))
        except sqlite3.Error as exc:
            problem = f"{source.path}: cannot read the database ({exc}); is it being rewritten?"
            if problem != source.problem:
                self._report(problem)
            source.close()
            source.problem = problem
            return {}
        return {n: p for n, c in zip(names, canonical, strict=True) if (p := fetched.get(c))}


def _canonical_names(db: sqlite_utils.Database, names: list[str]) -> dict[str, str]:
    """Follow re-export aliases for a batch of names (identity for names without an alias)."""
    out = {n: n for n in names}
    for start in range(0, len(names), 500):
        chunk = names[start : start + 500]
        marks = ",".join("?" * len(chunk))
        out.update(
            db.execute(
                f"SELECT alias, qualname FROM aliases WHERE alias IN ({marks})", chunk
            ).fetchall()
        )
    return out
