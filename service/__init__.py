"""The aggregation service (``apiprof serve``): adds everyone's collected measurements up.

``app`` is the HTTP interface (Starlette on uvicorn); ``contribution`` turns a validated batch
or an imported lab database into rows; ``sqlite_store`` and ``postgres_store`` add them, each
batch exactly once, into an embedded SQLite database or a shared PostgreSQL; ``server`` runs it.
"""
