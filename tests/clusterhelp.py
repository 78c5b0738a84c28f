"""What the cluster tests share: fast scan options and a database's profile in comparable form."""

from __future__ import annotations

from pathlib import Path

from apiprof.db.schema import open_db
from apiprof.engine.scan import ScanOptions

FIXTURES = Path(__file__).parent / "fixtures"
FAST = ScanOptions(  # a pass never hits its time cap, so run counts are the same everywhere
    repeat=3, max_seconds=10.0, sizes=(4, 8), python_path=(str(FIXTURES),), call_timeout=5.0
)


def stored_profile(path: Path) -> dict[str, tuple[str, set[tuple[str, str, int]], int]]:
    """Per entry point: coverage, the (metric, scenario, size) slices measured, and how many
    scenario runs the allocation pass counted (a count a fixed --repeat makes deterministic)."""
    db = open_db(path, readonly=True)
    try:
        out = {}
        for qualname, status in db.execute("SELECT qualname, status FROM coverage"):
            slices = {
                (metric, scenario, size)
                for metric, scenario, size in db.execute(
                    "SELECT DISTINCT metric, scenario_id, size FROM buckets WHERE qualname = ?",
                    [qualname],
                )
            }
            runs = db.execute(
                "SELECT COALESCE(SUM(count), 0) FROM buckets WHERE qualname = ? AND metric = 'calls_per_run'",
                [qualname],
            ).fetchone()[0]
            out[qualname] = (status, slices, runs)
        return out
    finally:
        db.conn.close()
