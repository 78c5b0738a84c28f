"""The profile database as the Sphinx build sees it: checked once, read lazily, cached per process.

The database is inspected once when the builder starts (in the main process, before parallel
readers fork), so a missing or corrupt file produces exactly one warning. Readers open their
own read-only connection on first use — SQLite connections must not cross a fork.

What decides whether documents are re-read is the database's *content*, not its modification
time: touching the file or checkpointing its write-ahead log changes nothing. Hashing is skipped
while the file's stat is the one the fingerprint was taken at, and then the database is not even
opened: a rebuild with nothing to do never loads the database layer. A build with nothing to
compare against (a fresh environment) records the file's stat and hashes nothing (hashing a
20 MB file was a hundredth of a docs build); a later build that finds the file moved hashes its
bytes, and, when those changed since the last hash, its rows
(:func:`~apiprof.db.fingerprint.content_fingerprint`); when the result differs from what the
last build recorded, the documents are re-read only where the summary of an API they show
changed (:func:`~apiprof.sphinx_ext.envdata.outdated_docs`).
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import struct
import weakref
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from apiprof.errors import DatabaseError
from apiprof.model.figures import Figures
from apiprof.model.histogram import Histogram
from apiprof.model.records import Metric, ScenarioSource
from apiprof.sphinx_ext.gc_pause import cycle_collector_paused

if TYPE_CHECKING:  # the database layer loads only when a build reads data
    from apiprof.db.charts import StoredPlots
    from apiprof.db.details import Provenance
    from apiprof.db.figures import StoredCells, StoredSlices
    from apiprof.db.query import ApiSummary, GrowthRow, ScenarioSlice
    from apiprof.db.schema import Reader
    from apiprof.growth_plot import ChartKey, GrowthPlot

logger = logging.getLogger(__name__)

_PROFILES: weakref.WeakKeyDictionary[BuildEnvironment, Profiles] = weakref.WeakKeyDictionary()
T = TypeVar("T")
Edges = dict[str, list[tuple[str, int]]]  # {"callers": [(name, calls)], "callees": [...]}
FILE_STAT = "stat:"
"""Prefix of the fingerprint a fresh environment records: the file's inode, size and
modification time (documents are then compared by their summaries' digests once it moves)."""
UNUSABLE = "unusable"
"""Digest of every name while the database cannot be read (so documents are re-read later)."""


def db_path(confdir: str | Path, setting: str) -> Path:
    """``apiprof_db`` resolved against the directory holding conf.py."""
    return Path(confdir, setting)


def _stat_key(path: Path) -> tuple[int, ...] | None:
    """What the file system says about the database and its write-ahead log."""
    key: list[int] = []
    for part in (path, path.with_name(path.name + "-wal")):
        try:
            stat = part.stat()
        except OSError:
            key += [-1, -1, -1]
            continue
        key += [stat.st_ino, stat.st_size, stat.st_mtime_ns]
    return tuple(key) if key[0] != -1 else None


def is_collected(piece: ScenarioSlice) -> bool:
    """Whether a slice holds in-the-wild measurements rather than a lab scan's."""
    return ScenarioSource.COLLECTED in (piece.source, piece.scenario_id)


def merge_by_metric(slices: list[ScenarioSlice]) -> dict[Metric, Histogram]:
    merged: dict[Metric, Histogram] = {}
    for piece in slices:
        merged.setdefault(piece.metric, Histogram()).merge(piece.histogram)
    return merged


def lab_first(summary: ApiSummary, slices: list[ScenarioSlice]) -> ApiSummary:
    """The summary of an API that also has collected measurements: the lab's numbers, or the
    collected ones when the lab has none."""
    lab = [s for s in slices if not is_collected(s)]
    lab_summary = replace(
        summary, histograms=merge_by_metric(lab), scenarios=len({s.scenario_id for s in lab})
    )
    return lab_summary if lab_summary.profiled else summary


def summary_digest(summary: ApiSummary | None) -> str:
    """A hash of everything an API's summary holds: its fields as text, its histograms' (or
    stored figures') numbers as raw doubles (printing them, as ``repr`` does, cost a docs build
    a tenth of a second)."""
    digest = hashlib.sha1()
    if summary is None:
        return digest.hexdigest()[:16]
    for name in _field_names(type(summary)):
        value = getattr(summary, name)
        if not (isinstance(value, dict) and name in ("histograms", "typical")):
            digest.update(f"{name}={value!r}\x00".encode("utf-8", "surrogatepass"))
            continue
        for metric, hist in sorted(value.items()):  # equal summaries, equal digests
            if isinstance(hist, Figures):  # the bytes an array("d") of these numbers holds
                numbers = (hist.count, hist.total, hist.mean, hist.stdev, *hist.quantiles)
                digest.update(hist.bucket_counts.encode())
                digest.update(f"{name}:{metric}\x00".encode())
                digest.update(struct.pack(f"{len(numbers)}d", *numbers))
                continue
            rows = array("d")
            for row in hist.rows():
                rows.extend(row)
            rows.append(math.inf)  # between the buckets and the sub-buckets
            for sub_row in hist.sub_rows():
                rows.extend(sub_row)
            digest.update(f"{name}:{metric}\x00".encode())
            digest.update(rows.tobytes())
    return digest.hexdigest()[:16]


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    found = _FIELD_NAMES.get(kind)
    if found is None:
        found = _FIELD_NAMES[kind] = tuple(item.name for item in fields(kind))
    return found


class Background(NamedTuple):
    """What a drill-down page shows besides the API's figures."""

    fits: list[GrowthRow]
    provenance: list[Provenance]
    edges: Edges
    plots: dict[ChartKey, GrowthPlot] | None  # stored charts; None: draw them from the slices


@dataclass
class Profiles:
    """Read-only access to one database for one build; ``error`` is set when it is unusable."""

    path: Path
    fingerprint: str = ""
    error: str = ""
    _db: Reader | None = None
    _pid: int = 0
    _cache: dict[str, ApiSummary] = field(default_factory=dict)
    _aliases: dict[str, str] | None = None
    _names: list[str] | None = None
    _slices: dict[str, list[ScenarioSlice]] | None = None  # read with the summaries: every
    # API's, or (with stored figures) those of APIs with collected measurements; the rest are
    # made from their stored figures, read at the first drill-down page (after the documents:
    # rows held through the reading phase lengthen its cycle collections)
    _figures_stored: bool = False
    _stored: StoredSlices | None = None
    _cells: StoredCells | None = None
    _background: tuple[dict, dict, dict, StoredPlots | None] | None = None  # every API's fits,
    # provenance, calls and stored charts

    @property
    def usable(self) -> bool:
        return not self.error

    def connection(self) -> Reader:
        if self._db is None or self._pid != os.getpid():
            from apiprof.db.schema import open_reader

            self._db, self._pid = open_reader(self.path), os.getpid()
        return self._db

    @cycle_collector_paused()
    def check(self, known: tuple[tuple[int, ...] | None, str] | None) -> None:
        """Open the database once and fingerprint its contents; remember (and warn about) why
        it cannot be used. ``known`` is (stat key, fingerprint) from the previous build."""
        try:
            stat = _stat_key(self.path)
            if known is not None and stat is not None and known[0] == stat:
                self.fingerprint = known[1]  # the very file the last build read without trouble
                return
            from apiprof.db.fingerprint import content_fingerprint, file_fingerprint

            db = self.connection()  # opened here, so a bad file gets its one warning now
            if known is None and stat is not None:
                # nothing to compare against (a fresh environment): the file's identity on
                # disk stands for it; its bytes are hashed once a later build finds it moved
                self.fingerprint = FILE_STAT + ",".join(map(str, stat))
                return
            self.fingerprint = file_fingerprint(self.path)
            last = known[1] if known is not None else self.fingerprint
            if last != self.fingerprint and not last.startswith(FILE_STAT):
                self.fingerprint = content_fingerprint(db)  # the bytes moved: did the content?
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
            assert self._aliases is not None
            return self._cache.get(self._aliases.get(name, name))
        except (DatabaseError, sqlite3.Error) as exc:
            self.fail(f"{self.path}: {exc}")
            return None

    def digest(self, name: str) -> str:
        """What a document showing ``name`` depends on, hashed: re-read it when this changes."""
        if self.error:
            return UNUSABLE
        summary = self.lookup(name)
        if self.error:
            return UNUSABLE
        return summary_digest(summary)

    def summaries(self) -> dict[str, ApiSummary]:
        """Every API's summary, as lookups answer them."""
        self.lookup("")
        return dict(self._cache)

    def known_names(self) -> list[str]:
        """Every name a directive may use (for "did you mean" hints)."""
        if self._names is None:
            self.lookup("")
            self._names = sorted({*self._cache, *(self._aliases or {})})
        return self._names

    def _preload(self, db: Reader) -> None:
        """Every summary and scenario breakdown in one go (documents need the summaries, the
        drill-down pages the breakdowns of most of the same APIs): their stored figures, and
        the buckets only of APIs whose pages draw lab and collected measurements side by side.
        A file written before figures were stored is read from its buckets, as they were."""
        from apiprof.db import details, figures, query

        collected = details.collected_qualnames(db)
        if figures.has_current_figures(db):
            self._figures_stored = True
            summaries = query.all_summaries(db, pooled=figures.stored_pooled(db))
            names = sorted(collected & set(summaries))
            breakdowns = query.scenario_breakdowns(db, names) if names else {}
            summaries.update(query.summaries(db, names, breakdowns=breakdowns))
        else:
            logger.info(
                "apiprof: %s has no stored figures yet, so they are worked out from its buckets; "
                "any apiprof command that writes to it (a scan, `apiprof merge`, `apiprof sync`) stores "
                "them, and builds get faster",
                self.path,
            )
            breakdowns = query.scenario_breakdowns(db)
            summaries = query.all_summaries(db, breakdowns=breakdowns)
        for qualname in collected & set(summaries):
            summaries[qualname] = lab_first(summaries[qualname], breakdowns.get(qualname, []))
        self._cache, self._slices = summaries, breakdowns
        self._aliases = dict(db.execute("SELECT alias, qualname FROM aliases").fetchall())

    def slices(self, qualname: str) -> list[ScenarioSlice]:
        """An API's histograms (or their stored figures) by scenario and size, environments
        merged."""
        if self._slices is None:
            self.lookup("")
        found = (self._slices or {}).get(qualname)
        if found is None and self._figures_stored:
            if self._stored is None:
                from apiprof.db.figures import StoredSlices

                self._stored = self.read(StoredSlices)
            return self._stored.slices(qualname) if self._stored is not None else []
        return found or []

    def stored_cells(self, qualname: str) -> tuple[list[tuple], dict] | None:
        """An API's stored scenario-table cells and every scenario's source (read at the first
        call), or None when its slices are not read from stored figures (collected
        measurements, an older file): ask :meth:`slices` then."""
        if self._slices is None:
            self.lookup("")
        if not self._figures_stored or qualname in (self._slices or {}):
            return None
        if self._cells is None:
            from apiprof.db.figures import StoredCells

            self._cells = self.read(StoredCells)
        if self._cells is None:
            return None
        return self._cells.rows.get(qualname, []), self._cells.scenarios

    def background(self, qualname: str) -> Background:
        """An API's growth fits, provenance and callers/callees — every API's read at the first
        call, since every drill-down page shows them (a few queries instead of six per page) —
        and its stored charts (None when the file holds none this apiprof drew: draw them)."""
        if self._background is None:
            from apiprof.db import charts, details, query

            def read_all(db: Reader) -> tuple[dict, dict, dict, StoredPlots | None]:
                plots = charts.stored_plots(db) if charts.has_current_charts(db) else None
                edges = details.all_call_edges(db)
                return query.growths(db), details.provenances(db), edges, plots

            self._background = self.read(read_all) or ({}, {}, {}, None)
        growth, provenance, edges, plots = self._background
        return Background(
            growth.get(qualname, []),
            provenance.get(qualname, []),
            edges.get(qualname, {"callers": [], "callees": []}),
            None if plots is None else plots.get(qualname, {}),
        )

    def release_page_data(self) -> None:
        """Drop what only drill-down pages read (slice figures, fits, charts, calls...) once
        they are written, so the rest of the build's cycle collections do not walk it; asked
        for again, it is read again."""
        self._stored = None
        self._cells = None
        self._background = None

    def read(self, reader: Callable[..., T], *args: Any) -> T | None:
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
    profiles = Profiles(path)
    known = getattr(env, "apiprof_db_stat", None)
    profiles.check(known if isinstance(known, tuple) and len(known) == 2 else None)
    if profiles.usable:
        env.apiprof_db_stat = (_stat_key(path), profiles.fingerprint)  # type: ignore[attr-defined]
    _PROFILES[env] = profiles
    return profiles


def profiles_for(env: BuildEnvironment) -> Profiles:
    """The build's database view (started lazily if the builder hook did not run)."""
    return _PROFILES.get(env) or _start(env, db_path(env.srcdir, env.config.apiprof_db))


def close_profiles(app: Sphinx, _exception: BaseException | None = None) -> None:
    profiles = _PROFILES.pop(app.env, None)
    if profiles is not None:
        profiles.close()
