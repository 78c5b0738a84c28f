"""The cost index: profile summaries from one or more databases, merged and cached in memory.

Editors ask for the same few hundred names over and over, a completion list at a time, so the
index answers from a per-name cache and fetches only the names it has not seen, in one batch
(primary-key lookups, never a scan of the database). A database file that changes on disk (its
size or mtime, or those of its WAL file) drops that database's contribution on the next request;
a database that is missing is reported once and picked up when it appears.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import sqlite_utils

from apiprof.db.query import ApiSummary, summaries
from apiprof.db.schema import open_db
from apiprof.errors import DatabaseError
from apiprof.model.histogram import Histogram
from apiprof.model.records import Metric

log = logging.getLogger(__name__)

Fingerprint = tuple[int, int, int, int]


def fingerprint(path: Path) -> Fingerprint | None:
    """(mtime, size) of the file and of its WAL: a write through WAL may not touch the main file."""
    try:
        main = os.stat(path)
    except OSError:
        return None
    try:
        wal = os.stat(f"{path}-wal")
        wal_state = (wal.st_mtime_ns, wal.st_size)
    except OSError:
        wal_state = (0, 0)
    return (main.st_mtime_ns, main.st_size, *wal_state)


@dataclass
class _Source:
    """One database file and what has been read from it since it last changed."""

    path: Path
    db: sqlite_utils.Database | None = None
    stamp: Fingerprint | None = None
    problem: str = ""  # why the database is unusable right now ("" when fine)
    found: dict[str, ApiSummary | None] = field(default_factory=dict)  # canonical name → summary
    # name → canonical (identity when no alias)
    aliases: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        if self.db is not None:
            self.db.conn.close()
        self.db = None
        self.found.clear()
        self.aliases.clear()


class CostIndex:
    """Merged, cached summaries over ``paths`` (first database wins for descriptive fields)."""

    def __init__(self, paths: Iterable[Path], report: Callable[[str], None] | None = None) -> None:
        self._sources = [_Source(Path(p)) for p in dict.fromkeys(paths)]
        self._report = report or log.warning
        self._merged: dict[str, ApiSummary | None] = {}
        self.generation = 0  # increases whenever any database changed (for render caches)

    @property
    def paths(self) -> list[Path]:
        return [s.path for s in self._sources]

    def close(self) -> None:
        for source in self._sources:
            source.close()
        self._merged.clear()

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
            self._merged.clear()
            self.generation += 1
        return changed

    def _open(self, source: _Source) -> None:
        try:
            source.db = open_db(source.path, readonly=True)
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

    def lookup(self, name: str) -> ApiSummary | None:
        """Summary for a (possibly re-exported) dotted name, or None if no database knows it."""
        if name in self._merged:
            return self._merged[name]
        return self.lookup_many([name]).get(name)

    def lookup_many(self, names: Iterable[str]) -> dict[str, ApiSummary | None]:
        """Batch lookup: cached names cost a dict access; the rest cost one batch per database."""
        names = list(names)
        missing = [n for n in dict.fromkeys(names) if n not in self._merged]
        if missing:
            per_source = [self._fetch(source, missing) for source in self._sources]
            for name in missing:
                self._merged[name] = _merge(
                    [summary for found in per_source if (summary := found.get(name))]
                )
        return {name: self._merged[name] for name in names}

    def _fetch(self, source: _Source, names: list[str]) -> dict[str, ApiSummary | None]:
        if source.db is None:
            return {}
        try:
            unknown = [n for n in names if n not in source.aliases]
            source.aliases.update(_canonical_names(source.db, unknown))
            canonical = [source.aliases[n] for n in names]
            todo = [c for c in dict.fromkeys(canonical) if c not in source.found]
            if todo:
                fetched = summaries(source.db, todo)
                source.found.update({c: fetched.get(c) for c in todo})
        except sqlite3.Error as exc:
            problem = f"{source.path}: cannot read the database ({exc}); is it being rewritten?"
            if problem != source.problem:
                self._report(problem)
            source.close()
            source.problem = problem
            return {}
        return {n: source.found[source.aliases[n]] for n in names}


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


def _merge(found: list[ApiSummary]) -> ApiSummary | None:
    """Add the profiles of one API from several databases (histograms are additive)."""
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    first = found[0]
    merged = ApiSummary(
        first.qualname,
        module=first.module,
        kind=first.kind,
        signature=first.signature,
        summary=first.summary,
        coverage=first.coverage,
        reason=first.reason,
        histograms=dict(first.histograms),
        scenarios=first.scenarios,
        growth=first.growth,
        reference_size=first.reference_size,
        size_axis=first.size_axis,
        typical=dict(first.typical),
    )
    for other in found[1:]:
        _add_histograms(merged.histograms, other.histograms)
        if other.reference_size == merged.reference_size:  # typical figures at the same size
            _add_histograms(merged.typical, other.typical)
        merged.scenarios += other.scenarios
        merged.growth = merged.growth or other.growth
        if other.coverage == "profiled" or not merged.coverage:
            merged.coverage, merged.reason = other.coverage, other.reason
        for attr in ("module", "kind", "signature", "summary"):
            if not getattr(merged, attr):
                setattr(merged, attr, getattr(other, attr))
    return merged


def _add_histograms(into: dict[Metric, Histogram], other: dict[Metric, Histogram]) -> None:
    for metric, hist in other.items():
        into[metric] = into[metric] + hist if metric in into else hist
