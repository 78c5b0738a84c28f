"""The SQLite profile store: schema and migrations, additive writes, fast reads.

The names below load on first use, so a reader importing :mod:`apiprof.db.query` does not pay
for the writing side (and sqlite-utils) it never calls.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from apiprof.db.query import ApiSummary, all_summaries, histograms, module_summaries, summary
    from apiprof.db.schema import DEFAULT_DB, SCHEMA_VERSION, open_db
    from apiprof.db.store import (
        add_histograms,
        begin_scan,
        finish_scan,
        store_batch,
        store_entry_points,
    )

_HOMES = {
    **dict.fromkeys(
        ["ApiSummary", "all_summaries", "histograms", "module_summaries", "summary"], "query"
    ),
    **dict.fromkeys(["DEFAULT_DB", "SCHEMA_VERSION", "open_db"], "schema"),
    **dict.fromkeys(
        ["add_histograms", "begin_scan", "finish_scan", "store_batch", "store_entry_points"],
        "store",
    ),
}

__all__ = [
    "DEFAULT_DB",
    "SCHEMA_VERSION",
    "ApiSummary",
    "add_histograms",
    "all_summaries",
    "begin_scan",
    "finish_scan",
    "histograms",
    "module_summaries",
    "open_db",
    "store_batch",
    "store_entry_points",
    "summary",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"apiprof.db.{_HOMES[name]}"), name)
