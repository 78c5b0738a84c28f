"""Reading profiles back: the questions the docs and the editor ask, answered from SQL sums.

"Typical time" is the median of active wall time (elapsed minus the probe overhead measured
live in the same pass; docs/mechanisms.rst) over every measured call; the thread-CPU metric is a sample
of the calls (its clock is a syscall) and is the fallback when no wall time was recorded.
"Typical allocation" is the median inclusive allocation. Every answer aggregates over scenarios, sizes and environments
unless asked to split.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlite_utils

from apiprof.model.histogram import Histogram
from apiprof.model.records import Metric, ScenarioSource

TIME_METRICS = (Metric.WALL, Metric.CPU)


@dataclass(frozen=True)
class GrowthRow:
    metric: Metric
    scenario_id: str
    growth_class: str
    intercept: float
    coefficient: float
    rel_error: float
    r2: float
    points: int
    size_axis: str


@dataclass
class ApiSummary:
    """What one line of docs or one completion item needs to know about an API."""

    qualname: str
    module: str = ""
    kind: str = ""
    signature: str = ""
    summary: str = ""
    coverage: str = ""  # Coverage value; "" when never scanned
    reason: str = ""
    histograms: dict[Metric, Histogram] = field(default_factory=dict)
    scenarios: int = 0
    growth: GrowthRow | None = None

    @property
    def profiled(self) -> bool:
        return bool(self.time_histogram or self.alloc_histogram)

    @property
    def time_histogram(self) -> Histogram | None:
        for metric in TIME_METRICS:
            if self.histograms.get(metric):
                return self.histograms[metric]
        return None

    @property
    def time_metric(self) -> Metric | None:
        return next((m for m in TIME_METRICS if self.histograms.get(m)), None)

    @property
    def alloc_histogram(self) -> Histogram | None:
        return self.histograms.get(Metric.ALLOC_INCL) or None

    @property
    def samples(self) -> int:
        hist = self.time_histogram or self.alloc_histogram
        return hist.count if hist else 0

    @property
    def time_median_ns(self) -> float | None:
        hist = self.time_histogram
        return hist.median if hist else None

    @property
    def time_p90_ns(self) -> float | None:
        hist = self.time_histogram
        return hist.percentile(90) if hist else None

    @property
    def alloc_median_bytes(self) -> float | None:
        hist = self.alloc_histogram
        return hist.median if hist else None


def resolve_name(db: sqlite_utils.Database, name: str) -> str:
    """Canonical qualified name for ``name`` (follows re-export aliases; unknown names pass)."""
    row = db.execute("SELECT qualname FROM aliases WHERE alias = ?", [name]).fetchone()
    return row[0] if row else name


def histograms(
    db: sqlite_utils.Database,
    qualname: str,
    *,
    metric: Metric | None = None,
    scenario_id: str | None = None,
    size: int | None = None,
    environment_id: str | None = None,
) -> dict[Metric, Histogram]:
    """Merged histograms per metric for one API, optionally restricted to a slice."""
    where: list[str] = ["qualname = ?"]
    params: list[object] = [qualname]
    for column, value in (
        ("metric", metric),
        ("scenario_id", scenario_id),
        ("size", size),
        ("environment_id", environment_id),
    ):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(str(value) if column == "metric" else value)
    rows = db.execute(
        f"SELECT metric, bucket, SUM(count), SUM(sum), SUM(sum_sq) FROM buckets WHERE {' AND '.join(where)} "
        "GROUP BY metric, bucket",
        params,
    ).fetchall()
    return _group_histograms((Metric(m), b, c, s, sq) for m, b, c, s, sq in rows)


def _group_histograms(rows: Iterable[tuple]) -> dict[Metric, Histogram]:
    grouped: dict[Metric, list[tuple]] = defaultdict(list)
    for metric, bucket, count, total, total_sq in rows:
        grouped[metric].append((bucket, count, total, total_sq))
    return {metric: Histogram.from_buckets(r) for metric, r in grouped.items()}


def summary(db: sqlite_utils.Database, name: str) -> ApiSummary | None:
    """Summary of one API by (possibly aliased) qualified name; None if the name is unknown."""
    qualname = resolve_name(db, name)
    found = summaries(db, [qualname])
    return found.get(qualname)


def module_summaries(db: sqlite_utils.Database, module: str) -> dict[str, ApiSummary]:
    """All entry points whose canonical home is ``module`` (not its submodules)."""
    names = [
        r[0] for r in db.execute("SELECT qualname FROM entry_points WHERE module = ?", [module])
    ]
    return summaries(db, names)


def all_summaries(db: sqlite_utils.Database, package: str | None = None) -> dict[str, ApiSummary]:
    """Every known API (entry points and anything with buckets), optionally for one package."""
    if package is None:
        names = [
            r[0]
            for r in db.execute(
                "SELECT qualname FROM entry_points UNION SELECT DISTINCT qualname FROM buckets"
            )
        ]
    else:
        names = [
            r[0]
            for r in db.execute("SELECT qualname FROM entry_points WHERE package = ?", [package])
        ]
    return summaries(db, names)


def summaries(db: sqlite_utils.Database, qualnames: Iterable[str]) -> dict[str, ApiSummary]:
    """Batch form of :func:`summary` for canonical names: a handful of queries, not one per name."""
    qualnames = list(dict.fromkeys(qualnames))
    out: dict[str, ApiSummary] = {}
    for chunk_start in range(0, len(qualnames), 500):
        chunk = qualnames[chunk_start : chunk_start + 500]
        marks = ",".join("?" * len(chunk))
        for row in db.execute(
            f"SELECT qualname, module, kind, signature, summary FROM entry_points WHERE qualname IN ({marks})",
            chunk,
        ):
            out[row[0]] = ApiSummary(*row)
        for qualname, status, reason in db.execute(
            f"SELECT qualname, status, reason FROM coverage WHERE qualname IN ({marks})", chunk
        ):
            s = out.setdefault(qualname, ApiSummary(qualname))
            s.coverage, s.reason = status, reason
        per_api: dict[str, list[tuple]] = defaultdict(list)
        for qualname, metric, bucket, count, total, total_sq in db.execute(
            f"SELECT qualname, metric, bucket, SUM(count), SUM(sum), SUM(sum_sq) FROM buckets "
            f"WHERE qualname IN ({marks}) GROUP BY qualname, metric, bucket",
            chunk,
        ):
            per_api[qualname].append((Metric(metric), bucket, count, total, total_sq))
        for qualname, rows in per_api.items():
            out.setdefault(qualname, ApiSummary(qualname)).histograms = _group_histograms(rows)
        for qualname, n in db.execute(
            f"SELECT qualname, COUNT(DISTINCT scenario_id) FROM buckets WHERE qualname IN ({marks}) GROUP BY qualname",
            chunk,
        ):
            out[qualname].scenarios = n
        for qualname, fit in headline_growth(db, chunk).items():
            if qualname in out:
                out[qualname].growth = fit
    return out


def headline_growth(db: sqlite_utils.Database, qualnames: Iterable[str]) -> dict[str, GrowthRow]:
    """The growth fit each API's summary shows (APIs without a fit are left out)."""
    qualnames = list(qualnames)
    out: dict[str, GrowthRow] = {}
    for start in range(0, len(qualnames), 500):
        for qualname, fits in _growth_rows(db, qualnames[start : start + 500]).items():
            if fit := _headline_growth(fits):
                out[qualname] = fit
    return out


def _growth_rows(db: sqlite_utils.Database, qualnames: list[str]) -> dict[str, list[GrowthRow]]:
    marks = ",".join("?" * len(qualnames))
    found: dict[str, list[GrowthRow]] = defaultdict(list)
    for row in db.execute(
        "SELECT qualname, metric, scenario_id, growth_class, intercept, coefficient, rel_error, r2, points, size_axis "
        f"FROM growth WHERE qualname IN ({marks})",
        qualnames,
    ):
        found[row[0]].append(GrowthRow(Metric(row[1]), *row[2:]))
    return found


def _headline_growth(fits: list[GrowthRow]) -> GrowthRow | None:
    """The fit a summary shows: time metrics first, then the most points, then the best fit."""
    order = {Metric.WALL: 0, Metric.CPU: 1, Metric.ALLOC_INCL: 2, Metric.ALLOC_EXCL: 3}
    return min(fits, key=lambda f: (order.get(f.metric, 9), -f.points, f.rel_error), default=None)


def growth(db: sqlite_utils.Database, qualname: str) -> list[GrowthRow]:
    """Every growth fit stored for an API (one per metric and sized scenario), time first: metrics
    in their display order, then by scenario."""
    order = {metric: position for position, metric in enumerate(Metric)}
    return sorted(
        _growth_rows(db, [qualname]).get(qualname, []),
        key=lambda g: (order[g.metric], g.scenario_id),
    )


@dataclass(frozen=True)
class ScenarioSlice:
    scenario_id: str
    source: str
    description: str
    size: int
    metric: Metric
    histogram: Histogram


def scenario_breakdown(db: sqlite_utils.Database, qualname: str) -> list[ScenarioSlice]:
    """Histograms split by scenario and size (environments merged) — the drill-down detail."""
    return scenario_breakdowns(db, [qualname]).get(qualname, [])


def scenario_breakdowns(
    db: sqlite_utils.Database, qualnames: Iterable[str] | None = None
) -> dict[str, list[ScenarioSlice]]:
    """:func:`scenario_breakdown` of many APIs (every API when ``qualnames`` is None) in one
    query per 500 names: a docs build asks for all of them, one page each."""
    query = (
        "SELECT b.qualname, b.scenario_id, COALESCE(s.source, ''), COALESCE(s.description, ''), "
        "b.size, b.metric, b.bucket, SUM(b.count), SUM(b.sum), SUM(b.sum_sq) FROM buckets b "
        "LEFT JOIN scenarios s ON s.id = b.scenario_id {where}"
        "GROUP BY b.qualname, b.scenario_id, b.size, b.metric, b.bucket "
        "ORDER BY b.qualname, b.scenario_id, b.size, b.metric"
    )
    if qualnames is None:
        rows = db.execute(query.format(where="")).fetchall()
    else:
        names, rows = list(qualnames), []
        for start in range(0, len(names), 500):
            batch = names[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows += db.execute(query.format(where=f"WHERE b.qualname IN ({marks}) "), batch)
    grouped: dict[tuple, list[tuple]] = defaultdict(list)
    for qualname, scenario_id, source, description, size, metric, *bucket in rows:
        grouped[(qualname, scenario_id, source, description, size, metric)].append(bucket)
    out: dict[str, list[ScenarioSlice]] = defaultdict(list)
    for (qualname, sid, source, desc, size, metric), buckets in grouped.items():
        out[qualname].append(
            ScenarioSlice(sid, source, desc, size, Metric(metric), Histogram.from_buckets(buckets))
        )
    return dict(out)


@dataclass(frozen=True)
class Provenance:
    environment_id: str
    python: str
    implementation: str
    system: str
    machine: str
    cpu: str
    samples: int
    scans: tuple[dict, ...]  # {"id", "started_at", "finished_at", "calibration": {...}}


def provenance(db: sqlite_utils.Database, qualname: str) -> list[Provenance]:
    """Which machines and interpreters contributed samples to an API, and the scans there."""
    out = []
    for env_id, samples in db.execute(
        "SELECT environment_id, SUM(count) FROM buckets WHERE qualname = ? AND metric = ? "
        "GROUP BY environment_id",
        [qualname, str(Metric.WALL)],
    ).fetchall():
        env = db.execute(
            "SELECT python, implementation, system, machine, cpu FROM environments WHERE id = ?",
            [env_id],
        ).fetchone() or ("?", "?", "?", "?", "?")
        scans = tuple(
            {
                "id": sid,
                "started_at": started,
                "finished_at": finished,
                "calibration": json.loads(cal or "{}"),
            }
            for sid, started, finished, cal in db.execute(
                "SELECT id, started_at, finished_at, calibration FROM scans WHERE environment_id = ? "
                "AND package = (SELECT package FROM entry_points WHERE qualname = ?) ORDER BY id",
                [env_id, qualname],
            )
        )
        python, implementation, system, machine, cpu = env
        out.append(
            Provenance(env_id, python, implementation, system, machine, cpu, int(samples), scans)
        )
    return out


def call_edges(db: sqlite_utils.Database, qualname: str) -> dict[str, list[tuple[str, int]]]:
    """Callers and callees of an API with call counts: ``{"callers": [...], "callees": [...]}``."""
    return {
        "callers": db.execute(
            "SELECT caller, count FROM call_edges WHERE callee = ? ORDER BY count DESC", [qualname]
        ).fetchall(),
        "callees": db.execute(
            "SELECT callee, count FROM call_edges WHERE caller = ? ORDER BY count DESC", [qualname]
        ).fetchall(),
    }


def data_version(db: sqlite_utils.Database) -> tuple:
    """A cheap fingerprint that changes whenever profile data changes (for caches)."""
    return db.execute(
        "SELECT (SELECT COUNT(*) FROM buckets), (SELECT COALESCE(SUM(count), 0) FROM buckets), "
        "(SELECT COALESCE(MAX(id), 0) FROM scans), (SELECT COUNT(*) FROM entry_points)"
    ).fetchone()


def similar_names(db: sqlite_utils.Database, name: str, limit: int = 3) -> list[str]:
    """Known qualified names closest to ``name`` (for "did you mean" hints on typos)."""
    import difflib

    prefix = name.split(".", 1)[0]
    known = [
        r[0]
        for r in db.execute(
            "SELECT qualname FROM entry_points WHERE package = ? UNION SELECT alias FROM aliases WHERE alias LIKE ?",
            [prefix, f"{prefix}.%"],
        )
    ]
    return difflib.get_close_matches(name, known, n=limit, cutoff=0.6)


_CONTENT_TABLES = (
    "entry_points",
    "aliases",
    "coverage",
    "scenarios",
    "buckets",
    "growth",
    "call_edges",
    "environments",
    "scans",
    "failures",
)


def content_fingerprint(db: sqlite_utils.Database) -> str:
    """A hash of everything readers show (not of the file: a ``touch`` or a checkpoint of the
    write-ahead log leaves it alone, any changed row changes it)."""
    import hashlib

    digest = hashlib.sha256()
    present = set(db.table_names())
    for table in _CONTENT_TABLES:
        if table not in present:
            continue
        columns = len(db.execute(f"SELECT * FROM [{table}] LIMIT 0").description)
        order = ", ".join(str(i) for i in range(1, columns + 1))
        rows = db.execute(f"SELECT * FROM [{table}] ORDER BY {order}").fetchall()
        digest.update(f"\x00{table}\x00{rows!r}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def collected_qualnames(db: sqlite_utils.Database) -> set[str]:
    """APIs with in-the-wild measurements (bucket rows of a scenario whose source is
    ``collected``, or of the scenario id ``collected``), which readers show apart from the lab's."""
    return {
        row[0]
        for row in db.execute(
            "SELECT DISTINCT b.qualname FROM buckets b LEFT JOIN scenarios s ON s.id = b.scenario_id "
            "WHERE s.source = ? OR b.scenario_id = ?",
            [str(ScenarioSource.COLLECTED)] * 2,
        )
    }


@dataclass(frozen=True)
class FailureRow:
    """One failed attempt behind an entry point's "not profiled" verdict."""

    scenario_id: str
    phase: str
    kind: str
    reason: str
    location: str
    traceback: str


def failures(db: sqlite_utils.Database, qualname: str) -> list[FailureRow]:
    """Every failed scenario or source stored for an API, in the order they were tried."""
    if "failures" not in db.table_names():  # a database from before failures were kept
        return []
    rows = db.execute(
        "SELECT scenario_id, phase, kind, reason, location, traceback FROM failures "
        "WHERE qualname = ? ORDER BY position",
        [qualname],
    ).fetchall()
    return [FailureRow(*(value or "" for value in row)) for row in rows]


def scenario_inputs(db: sqlite_utils.Database, qualname: str) -> dict[str, dict[str, str]]:
    """What each stored scenario of an API ran: {scenario id: {setup, call, inputs}}."""
    columns = {column.name for column in db.table("scenarios").columns}
    if "inputs" not in columns:
        return {}
    return {
        row[0]: {"setup": row[1] or "", "call": row[2] or "", "inputs": row[3] or ""}
        for row in db.execute(
            "SELECT id, setup, call, inputs FROM scenarios WHERE qualname = ?", [qualname]
        )
    }
