"""An API's background, for drill-down pages and ``apiprof show``: which machines and scans
its samples came from, its callers and callees, why it was not profiled, what each scenario
ran, whether real programs measured it, and the known names closest to a mistyped one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from apiprof.model.records import Metric, ScenarioSource

if TYPE_CHECKING:  # the queries only execute SQL: readers pass a light schema.Reader
    import sqlite_utils

    from apiprof.db.schema import Readable


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


def provenance(db: Readable, qualname: str) -> list[Provenance]:
    """Which machines and interpreters contributed samples to an API, and the scans there."""
    return provenances(db, [qualname]).get(qualname, [])


def provenances(db: Readable, qualnames: list[str] | None = None) -> dict[str, list[Provenance]]:
    """:func:`provenance` of many APIs (every API when None) in a few queries: a docs build
    shows it on every drill-down page."""
    where, params = "", [str(Metric.WALL)]
    if qualnames is not None:
        if not qualnames:
            return {}
        where = f"AND qualname IN ({','.join('?' * len(qualnames))})"
        params += qualnames
    samples = db.execute(
        f"SELECT qualname, environment_id, SUM(count) FROM buckets WHERE metric = ? {where} "
        "GROUP BY qualname, environment_id ORDER BY qualname, environment_id",
        params,
    ).fetchall()
    if not samples:
        return {}
    environments = {
        row[0]: row[1:]
        for row in db.execute(
            "SELECT id, python, implementation, system, machine, cpu FROM environments"
        )
    }
    packages = dict(db.execute("SELECT qualname, package FROM entry_points").fetchall())
    scans: dict[tuple[str, str], list[dict]] = {}
    for sid, env_id, package, started, finished, cal in db.execute(
        "SELECT id, environment_id, package, started_at, finished_at, calibration FROM scans "
        "ORDER BY id"
    ):
        scans.setdefault((env_id, package), []).append(
            {"id": sid, "started_at": started, "finished_at": finished, "calibration": cal}
        )
    out: dict[str, list[Provenance]] = {}
    for qualname, env_id, count in samples:
        python, implementation, system, machine, cpu = environments.get(env_id) or ("?",) * 5
        package = packages.get(qualname)
        found = tuple(
            {**scan, "calibration": json.loads(scan["calibration"] or "{}")}
            for scan in (scans.get((env_id, package), ()) if package is not None else ())
        )
        out.setdefault(qualname, []).append(
            Provenance(env_id, python, implementation, system, machine, cpu, int(count), found)
        )
    return out


def call_edges(db: Readable, qualname: str) -> dict[str, list[tuple[str, int]]]:
    """Callers and callees of an API with call counts: ``{"callers": [...], "callees": [...]}``."""
    return {
        "callers": db.execute(
            "SELECT caller, count FROM call_edges WHERE callee = ? ORDER BY count DESC", [qualname]
        ).fetchall(),
        "callees": db.execute(
            "SELECT callee, count FROM call_edges WHERE caller = ? ORDER BY count DESC", [qualname]
        ).fetchall(),
    }


def all_call_edges(db: Readable) -> dict[str, dict[str, list[tuple[str, int]]]]:
    """:func:`call_edges` of every API that has any, from one read of the table."""
    out: dict[str, dict[str, list[tuple[str, int]]]] = {}
    for caller, callee, count in db.execute(
        "SELECT caller, callee, count FROM call_edges ORDER BY count DESC, caller, callee"
    ):
        out.setdefault(callee, {"callers": [], "callees": []})["callers"].append((caller, count))
        out.setdefault(caller, {"callers": [], "callees": []})["callees"].append((callee, count))
    return out


def similar_names(db: Readable, name: str, limit: int = 3) -> list[str]:
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


def collected_qualnames(db: Readable) -> set[str]:
    """APIs with in-the-wild measurements (bucket rows of a scenario whose source is
    ``collected``, or of the scenario id ``collected``), which readers show apart from the lab's."""
    return {
        row[0]
        for row in db.execute(
            # a list of the few collected scenarios, not a join per bucket row: a third the time
            "SELECT DISTINCT qualname FROM buckets WHERE scenario_id = ? "
            "OR scenario_id IN (SELECT id FROM scenarios WHERE source = ?)",
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


def failures(db: Readable, qualname: str) -> list[FailureRow]:
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
