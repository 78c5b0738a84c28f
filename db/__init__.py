"""The SQLite profile store: schema and migrations, additive writes, fast reads."""

from apiprof.db.query import ApiSummary, all_summaries, histograms, module_summaries, summary
from apiprof.db.schema import DEFAULT_DB, SCHEMA_VERSION, open_db
from apiprof.db.store import (
    add_histograms,
    begin_scan,
    finish_scan,
    store_batch,
    store_entry_points,
)

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
