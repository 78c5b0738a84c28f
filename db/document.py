"""One API's profile as a stable JSON document: what ``apiprof show --json`` prints for scripts
and CI, and what ``apiprof show`` draws in the terminal.

Fields (documented for users in ``apiprof show --help`` and docs/cli.md): qualname, module, kind,
signature, summary; coverage {status, reason}; reference {size, size_axis, label} (what the
typical figures stand for); metrics {METRIC: {label, unit, count, mean, median, p90, stdev,
buckets: [{bucket, low, high, count, sum, sum_sq}], sub_buckets: [{bucket, sub, low, high, count,
sum, sum_sq}]}} (typical: at the reference size); sizes [{scenario_id, size, metric, count,
median, p90, mean}] (per scenario and size); growth_class; growth [{metric, scenario_id,
growth_class, rel_error, r2, points, size_axis}] (time first); scenario_count; scenarios [{id,
source, description, sizes, setup, call, inputs}]; failures [{scenario_id, phase, kind, reason,
location, traceback}]. Statistics are null when a metric has no samples.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import sqlite_utils

from apiprof.db import details, query
from apiprof.errors import UsageError
from apiprof.model.buckets import bucket_bounds, sub_bucket_bounds
from apiprof.model.records import NO_SIZE, Metric

SIZE_METRICS = (
    Metric.WALL,
    Metric.CPU,
    Metric.ALLOC_INCL,
    Metric.CONSUME_WALL,
    Metric.CONSUME_ALLOC,
)
"""Metrics listed per scenario and size in the document."""


def _stat(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def profile_document(db: sqlite_utils.Database, qualname: str) -> dict[str, Any]:
    """Everything stored about one API (any alias of it) as plain JSON-ready data; a usage error
    with close names when the database does not know it."""
    found = query.summary(db, qualname)
    if found is not None:
        found = found.at_reference()
    if found is None:
        near = details.similar_names(db, qualname)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise UsageError(
            f"no profile for {qualname!r} in this database{hint}; scan its package with `apiprof-scan PACKAGE`"
        )
    metrics = {}
    for metric in Metric:
        hist = found.histograms.get(metric)
        if not hist:
            continue
        metrics[str(metric)] = {
            "label": metric.label,
            "unit": metric.unit,
            "count": hist.count,
            "mean": _stat(hist.mean),
            "median": _stat(hist.median),
            "p90": _stat(hist.percentile(90)),
            "stdev": _stat(hist.stdev),
            "buckets": [
                {
                    "bucket": i,
                    "low": bucket_bounds(i)[0],
                    "high": bucket_bounds(i)[1],
                    "count": c,
                    "sum": s,
                    "sum_sq": sq,
                }
                for i, c, s, sq in hist.rows()
            ],
            "sub_buckets": [
                {
                    "bucket": i,
                    "sub": j,
                    "low": sub_bucket_bounds(i, j)[0],
                    "high": sub_bucket_bounds(i, j)[1],
                    "count": c,
                    "sum": s,
                    "sum_sq": sq,
                }
                for i, j, c, s, sq in hist.sub_rows()
            ],
        }
    scenarios: dict[str, dict[str, Any]] = {}
    ran = details.scenario_inputs(db, found.qualname)
    for piece in query.scenario_breakdown(db, found.qualname):
        entry = scenarios.setdefault(
            piece.scenario_id,
            {
                "id": piece.scenario_id,
                "source": piece.source,
                "description": piece.description,
                "sizes": [],
                **ran.get(piece.scenario_id, {"setup": "", "call": "", "inputs": ""}),
            },
        )
        if piece.size >= 0 and piece.size not in entry["sizes"]:
            entry["sizes"].append(piece.size)
    return {
        "qualname": found.qualname,
        "module": found.module,
        "kind": found.kind,
        "signature": found.signature,
        "summary": found.summary,
        "coverage": {"status": found.coverage or None, "reason": found.reason},
        "reference": {
            "size": found.reference_size,
            "size_axis": found.size_axis or None,
            "label": found.reference_label or None,
        },
        "metrics": metrics,
        "sizes": [
            {
                "scenario_id": f.scenario_id,
                "size": f.size if f.size != NO_SIZE else None,
                "metric": str(f.metric),
                "count": f.count,
                "median": _stat(f.median),
                "p90": _stat(f.p90),
                "mean": _stat(f.mean),
            }
            for f in query.size_figures(db, found.qualname, SIZE_METRICS)
        ],
        "growth_class": found.growth.growth_class if found.growth else None,
        "growth": [
            {
                "metric": str(g.metric),
                "scenario_id": g.scenario_id,
                "growth_class": g.growth_class,
                "rel_error": g.rel_error,
                "r2": g.r2,
                "points": g.points,
                "size_axis": g.size_axis,
            }
            for g in query.growth(db, found.qualname)
        ],
        "scenario_count": found.scenarios,
        "scenarios": list(scenarios.values()),
        "failures": [asdict(row) for row in details.failures(db, found.qualname)],
    }
