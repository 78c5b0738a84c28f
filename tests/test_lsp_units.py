"""The language server's parts in-process: settings, the merged cost index, text, latency, positions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apiprof.db.query import ApiSummary
from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_batch, store_entry_points
from apiprof.format import cost_hint, format_ns
from apiprof.lsp_server.config import ServerConfig, read_config
from apiprof.lsp_server.costs import CostIndex
from apiprof.lsp_server.latency import LatencyTracker
from apiprof.lsp_server.render import describe, short_hint
from apiprof.lsp_server.resolve import Resolver, clamp_position
from apiprof.model.histogram import Histogram
from apiprof.model.records import (
    Coverage,
    CoverageRecord,
    EntryKind,
    EntryPoint,
    Environment,
    Metric,
    ScanBatch,
)

ENV = Environment("3.12.0", "cpython", "Linux", "x86_64", "unit")


# -- config -----------------------------------------------------------------------------------


def test_read_config_maps_camel_case_and_nested_options(tmp_path: Path):
    config, problems = read_config(
        {
            "databases": ["a.db", "/abs/b.db"],
            "docsUrl": "https://d.example/",
            "hover": {"histogramWidth": 10},
            "latency": {"slowRequestMs": 5},
        }
    )
    assert problems == []
    assert config.hover.histogram_width == 10 and config.hover.enabled is True
    assert config.latency.slow_request_ms == 5.0
    assert config.database_paths(tmp_path) == [tmp_path / "a.db", Path("/abs/b.db")]
    assert config.docs_link("json.dumps") == "https://d.example/apiprof/json.dumps.html"


def test_read_config_keeps_defaults_for_bad_values_and_says_which():
    config, problems = read_config(
        {"apiprof": {"databases": [1, 2], "hover": {"enabled": "no"}, "completion": 3, "x": 0}}
    )
    assert config == ServerConfig()
    assert len(problems) == 4
    assert any(p.startswith("databases: expected a list of strings") for p in problems)
    assert any(p.startswith("hover.enabled: expected bool") for p in problems)
    assert any(p.startswith("completion: expected an object") for p in problems)
    assert any(p.startswith("x: unknown option") for p in problems)
    assert read_config("nonsense")[0] == ServerConfig()
    assert read_config(None) == (ServerConfig(), [])


def test_default_database_is_in_the_workspace_root_and_links_need_a_url(tmp_path: Path):
    assert ServerConfig().database_paths(tmp_path) == [tmp_path / "apiprof.db"]
    assert ServerConfig(databases=("x.db",)).database_paths(tmp_path) == [tmp_path / "x.db"]
    assert ServerConfig().docs_link("json.dumps") is None
    custom = ServerConfig(docs_url="https://d.example/v2", docs_page="costs/{qualname}/")
    assert custom.docs_link("a.b") == "https://d.example/v2/costs/a.b/"


# -- cost index -------------------------------------------------------------------------------


def make_db(path: Path, times: list[float], *, alias: str = "pkg.f") -> None:
    db = open_db(path)
    store_entry_points(
        db,
        [EntryPoint("pkg.impl.f", "pkg", "pkg.impl", EntryKind.FUNCTION, "(x)", aliases=(alias,))],
    )
    add_histograms(db, "pkg.impl.f", {Metric.CPU: Histogram.of(times)}, environment=ENV)
    db.conn.close()


def test_index_merges_databases_by_adding_histograms(tmp_path: Path):
    make_db(tmp_path / "a.db", [1000] * 3)
    make_db(tmp_path / "b.db", [4000] * 5)
    index = CostIndex([tmp_path / "a.db", tmp_path / "b.db"])
    index.refresh()
    merged = index.lookup("pkg.f")  # through the alias
    assert merged is not None and merged.qualname == "pkg.impl.f"
    assert merged.samples == 8
    assert merged.time_histogram.total == 3 * 1000 + 5 * 4000
    assert index.lookup("pkg.impl.f").samples == 8
    assert index.lookup("pkg.unknown") is None
    index.close()


def test_index_reloads_a_changed_file_and_reports_problems_once(tmp_path: Path):
    reports: list[str] = []
    path = tmp_path / "a.db"
    index = CostIndex([path], report=reports.append)
    index.refresh()
    index.refresh()
    assert len(reports) == 1 and "no such database" in reports[0]
    assert index.lookup("pkg.f") is None
    make_db(path, [1000] * 3)
    assert index.refresh() is True
    assert index.lookup("pkg.f").samples == 3
    assert index.refresh() is False  # unchanged: caches kept
    db = open_db(path)
    add_histograms(db, "pkg.impl.f", {Metric.CPU: Histogram.of([1000] * 2)}, environment=ENV)
    db.conn.close()
    os.utime(path, ns=(1, 1))  # even if mtime goes backwards, the size/WAL fingerprint moved
    assert index.refresh() is True
    assert index.lookup("pkg.f").samples == 5
    assert reports[-1].endswith("database is usable again")
    index.close()


def test_lookup_many_answers_cached_names_without_the_database(tmp_path: Path):
    make_db(tmp_path / "a.db", [1000] * 3)
    index = CostIndex([tmp_path / "a.db"])
    index.refresh()
    first = index.lookup_many(["pkg.f", "pkg.g", "pkg.f"])
    assert set(first) == {"pkg.f", "pkg.g"} and first["pkg.g"] is None
    index._sources[0].db.conn.close()  # a second ask must not touch SQLite at all
    assert index.lookup_many(["pkg.f", "pkg.g"]) == first


# -- render -----------------------------------------------------------------------------------


def profiled_summary() -> ApiSummary:
    return ApiSummary(
        "json.dumps",
        signature="(obj)",
        summary="Serialize.",
        histograms={
            Metric.CPU: Histogram.of([3000] * 9 + [9000]),
            Metric.ALLOC_INCL: Histogram.of([1126] * 10),
        },
        scenarios=2,
    )


def test_short_hint_uses_the_shared_formatter():
    summary = profiled_summary()
    assert short_hint(summary) == cost_hint(summary.time_median_ns, summary.alloc_median_bytes)
    assert short_hint(summary).startswith("≈")
    assert short_hint(None) == "not profiled"
    assert short_hint(ApiSummary("x.y", coverage="no_arguments")) == "not profiled"


def test_sized_api_shows_its_reference_size_figures_and_consumption():
    """Pooling sizes would let the most-sampled size decide; the editor shows the figures at
    the reference size, named, and the cost of consuming a returned iterator, labelled."""
    at_100 = {
        Metric.WALL: Histogram.of([2000] * 10),
        Metric.CONSUME_WALL: Histogram.of([50_000] * 10),
    }
    pooled = {m: h + Histogram.of([20.0] * 90) for m, h in at_100.items()}
    summary = ApiSummary(
        "it.chunks",
        coverage="profiled",
        histograms=pooled,
        reference_size=100,
        size_axis="n",
        typical=at_100,
    )
    assert short_hint(summary) == cost_hint(2000, None) + " at n=100"
    text = describe(summary, ServerConfig())
    assert "| | typical (median) at n=100 | p90 |" in text
    assert "| wall time | 2.0 µs | 2.0 µs |" in text
    assert f"| {Metric.CONSUME_WALL.label} | 50.0 µs | 50.0 µs |" in text


def test_describe_has_table_histogram_counts_and_link():
    summary = profiled_summary()
    text = describe(summary, ServerConfig(docs_url="https://d.example"))
    assert text.startswith("**json.dumps** `(obj)`")
    assert (
        f"| CPU time (sampled calls) | {format_ns(summary.time_median_ns)} | {format_ns(summary.time_p90_ns)} |"
        in text
    )
    assert "| allocated | 1.1 KiB |" in text
    assert "```text\nCPU time (sampled calls) per call\n" in text
    assert "10 samples · 2 scenarios" in text
    assert text.endswith("(https://d.example/apiprof/json.dumps.html)")
    spark = describe(summary, read_config({"hover": {"histogram": "sparkline"}})[0])
    assert "CPU time (sampled calls): █" in spark


def test_describe_explains_why_an_api_is_not_profiled():
    text = describe(
        ApiSummary("a.b", coverage="no_arguments", reason="add a scenario"), ServerConfig()
    )
    assert "*not profiled* (no arguments: add a scenario)" in text
    assert "no apiprof database knows this name" in describe(None, ServerConfig(), title="a.c")


def test_describe_shows_coverage_stored_by_a_scan(tmp_path: Path):
    db = open_db(tmp_path / "c.db")
    store_entry_points(db, [EntryPoint("pkg.g", "pkg", "pkg", EntryKind.FUNCTION)])
    store_batch(
        db,
        ScanBatch(coverage=[CoverageRecord("pkg.g", Coverage.TIMED_OUT, "ran past 10 s")]),
        environment_id=ENV.id,
        package="pkg",
    )
    db.conn.close()
    index = CostIndex([tmp_path / "c.db"])
    index.refresh()
    assert "*not profiled* (timed out: ran past 10 s)" in describe(
        index.lookup("pkg.g"), ServerConfig()
    )
    index.close()


# -- latency ----------------------------------------------------------------------------------


def test_latency_tracker_percentiles_and_rate_limited_slow_log():
    now = [0]
    slow: list[str] = []
    tracker = LatencyTracker(slow_ms=50, on_slow=slow.append, clock=lambda: now[0])
    for ms in [1, 2, 3, 4, 5, 6, 7, 8, 9, 100]:
        tracker.record("textDocument/hover", ms * 1_000_000)
    tracker.record("textDocument/hover", 200_000_000)  # slow again within a minute: not logged
    now[0] = 61 * 10**9
    tracker.record("textDocument/hover", 300_000_000)
    (row,) = tracker.report()
    assert row["method"] == "textDocument/hover" and row["count"] == 12
    assert row["p50_ms"] == 6.0 and row["p95_ms"] == 300.0 and row["max_ms"] == 300.0
    assert sum(b[1] for b in row["buckets"]) == 12
    assert len(slow) == 2 and "slow textDocument/hover" in slow[0]


# -- positions and resolution -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "line", "column", "expected"),
    [
        ("import json\njson.", 1, 5, (2, 5)),
        ("import json\njson.", 1, 99, (2, 5)),
        ("import json\njson.", 2, 0, None),
        ("import json\n", 1, 0, (2, 0)),
        ("", 0, 3, (1, 0)),
        ("x", -1, 0, None),
    ],
)
def test_clamp_position(source, line, column, expected):
    assert clamp_position(source, line, column) == expected


def test_resolver_finds_canonical_names_through_aliases_and_instances(tmp_path: Path):
    resolver = Resolver(tmp_path)
    source = (
        "import json as np\nimport textwrap\nw = textwrap.TextWrapper()\nw.wrap('x')\nnp.dumps(1)\n"
    )
    assert resolver.names_at(source, str(tmp_path / "a.py"), 3, 3)[0] == "textwrap.TextWrapper.wrap"
    assert resolver.names_at(source, str(tmp_path / "a.py"), 4, 4)[0] == "json.dumps"
    assert resolver.names_at(source, str(tmp_path / "a.py"), 4, 9) == [
        "json.dumps"
    ]  # inside the call
    assert "textwrap.TextWrapper" not in resolver.names_at(source, str(tmp_path / "a.py"), 2, 0)
    labels = resolver.complete("from json import du", None, 0, 19)
    assert [(c.label, c.qualname, c.costed) for c in labels] == [
        ("dump", "json.dump", True),
        ("dumps", "json.dumps", True),
    ]
