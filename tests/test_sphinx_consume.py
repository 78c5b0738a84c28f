"""APIs returning iterators: a scan measures calling and consuming the result, and the docs
show those metrics under their own names (a fresh scan's database once stopped the build)."""

from __future__ import annotations

from pathlib import Path

from sphinxhelp import ENV, build, make_project

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms
from apiprof.model.histogram import from_counts
from apiprof.model.records import Metric


def test_consumption_metrics_get_their_own_rows(tmp_path: Path) -> None:
    srcdir = make_project(tmp_path)
    db = open_db(srcdir / "apiprof.db")
    consumed = {Metric.CONSUME_WALL: {12: 30}, Metric.CONSUME_ALLOC: {9: 30}}
    add_histograms(
        db,
        "demo_mod.parse",
        {metric: from_counts(counts) for metric, counts in consumed.items()},
        scenario_id="synth",
        environment=ENV,
    )
    db.close()
    app, warnings = build(srcdir)
    page = (Path(app.outdir) / "apiprof" / "demo_mod.parse.html").read_text(encoding="utf-8")
    other = page[page.index("apiprof-table-other") :]
    other = other[: other.index("</table>")]
    assert 'data-metric="consume_wall_ns"' in other and 'data-metric="consume_alloc_bytes"' in other
    assert "wall time to call and consume the returned iterator" in other
    assert "allocated to call and consume the returned iterator" in other
    scenarios = page[page.index('id="apiprof-scenarios"') :]
    assert "<th>wall time to call and consume the returned iterator</th>" in scenarios
    assert "Traceback" not in warnings
