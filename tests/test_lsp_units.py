"""The language server's parts in-process: settings, the merged cost index, text, latency, positions
(frames and documents: ``test_lsp_documents.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apiprof.db.query import ApiSummary
from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms, store_batch, store_entry_points
from apiprof.format import cost_hint, format_ns
from apiprof.lsp_server.completion import sort_text
from apiprof.lsp_server.config import InlayHintOptions, ServerConfig, read_config
from apiprof.lsp_server.costs import CostIndex
from apiprof.lsp_server.latency import LatencyTracker
from apiprof.lsp_server.profiles import CostProfile, load_profiles
from apiprof.lsp_server.render import (
    Markup,
    call_hint,
    cost_lines,
    first_sentence,
    full_profile,
    short_hint,
)
from apiprof.lsp_server.resolve import Candidate, Resolver, clamp_position
from apiprof.model.histogram import Histogram
from apiprof.model.records import (
    NO_SIZE,
    Coverage,
    CoverageRecord,
    EntryKind,
    EntryPoint,
    Environment,
    Measurement,
    Metric,
    ScanBatch,
    Scenario,
    ScenarioSource,
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
    assert merged.lab.samples == 8
    assert merged.lab.time.total == 3 * 1000 + 5 * 4000
    assert index.lookup("pkg.impl.f").lab.samples == 8
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
    assert index.lookup("pkg.f").lab.samples == 3
    assert index.refresh() is False  # unchanged: caches kept
    db = open_db(path)
    add_histograms(db, "pkg.impl.f", {Metric.CPU: Histogram.of([1000] * 2)}, environment=ENV)
    db.conn.close()
    os.utime(path, ns=(1, 1))  # even if mtime goes backwards, the size/WAL fingerprint moved
    assert index.refresh() is True
    assert index.lookup("pkg.f").lab.samples == 5
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


# -- render ---------------------------------------------------------------------------------------


def profile_of(summary: ApiSummary, cells: dict | None = None) -> CostProfile:
    return CostProfile(summary, cells or {})


def dumps_profile() -> CostProfile:
    return profile_of(
        ApiSummary("json.dumps", signature="(obj)", summary="Serialize.", scenarios=2),
        {
            (False, Metric.CPU, NO_SIZE): Histogram.of([3000] * 9 + [9000]),
            (False, Metric.ALLOC_INCL, NO_SIZE): Histogram.of([1126] * 10),
        },
    )


def test_short_hints_use_the_shared_formatter_and_say_nothing_without_data():
    profile = dumps_profile()
    time, alloc = Histogram.of([3000] * 9 + [9000]).median, Histogram.of([1126] * 10).median
    assert short_hint(profile) == cost_hint(time, alloc)
    assert call_hint(profile) == "≈" + format_ns(time)
    assert short_hint(None) is None and call_hint(None) is None
    assert short_hint(profile_of(ApiSummary("x.y", coverage="no_arguments"))) is None


def test_cost_lines_are_short_lines_not_a_table():
    markup = Markup(True)
    lines = cost_lines(dumps_profile(), ServerConfig(docs_url="https://d.example"), markup)
    assert len(lines) == 2 and all("|" not in line for line in lines)
    assert lines[0].startswith("`json.dumps` costs ≈") and "allocates 1.1 KiB" in lines[0]
    assert lines[1] == "[Full profile (10 samples)](<https://d.example/apiprof/json.dumps.html>)"
    plain = cost_lines(dumps_profile(), ServerConfig(), Markup(False))
    assert plain[0].startswith("json.dumps costs ≈")
    assert plain[1] == "Full profile (10 samples): apiprof show json.dumps"


def test_full_profile_has_heading_summary_figures_and_histogram():
    text = full_profile(dumps_profile(), ServerConfig(), Markup(True))
    assert text.startswith("`json.dumps(obj)`\n\nSerialize.\n\n`json.dumps` costs ≈")
    assert "```text\nCPU time (sampled calls) per call\n" in text
    config = read_config({"hover": {"histogram": "sparkline"}})[0]
    assert "CPU time (sampled calls): █" in full_profile(dumps_profile(), config, Markup(True))


def test_full_profile_explains_why_an_api_is_not_profiled():
    text = full_profile(
        profile_of(ApiSummary("a.b", coverage="no_arguments", reason="add a scenario")),
        ServerConfig(),
        Markup(True),
    )
    assert text == "`a.b`\n\nNot profiled (no arguments: add a scenario)"


def test_text_from_the_database_cannot_inject_markdown():
    hostile = profile_of(
        ApiSummary(
            "evil.`x`[click](javascript:alert(1))",
            signature="(a)\n\n# Heading",
            summary="- list <img src=x onerror=alert(1)> **bold** [link](http://x)",
        ),
        {(False, Metric.WALL, NO_SIZE): Histogram.of([100])},
    )
    markup = Markup(True)
    text = full_profile(hostile, ServerConfig(docs_url="https://d.example"), markup)
    heading, summary = text.split("\n\n")[:2]
    assert heading == "``evil.`x`[click](javascript:alert(1))(a) # Heading``"
    assert summary == (
        "\\- list \\<img src=x onerror=alert(1)\\> \\*\\*bold\\*\\* \\[link\\](http://x)…"
    )
    assert (
        "(<https://d.example/apiprof/evil.%60x%60%5Bclick%5D%28javascript%3Aalert%281%29%29.html>)"
        in text
    )
    assert markup.text("1. first") == "1\\. first" and markup.text("a_b") == "a\\_b"


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        (
            "Object for wrapping/filling text.  The public interface consists of",
            "Object for wrapping/filling text.",
        ),
        ("Serialize obj to a JSON str.", "Serialize obj to a JSON str."),
        ("Return a list of the lines", "Return a list of the lines…"),
        ("", ""),
    ],
)
def test_first_sentence_never_stops_mid_sentence(stored: str, shown: str):
    assert first_sentence(stored) == shown


def test_figures_state_the_reference_size_and_keep_collected_apart(tmp_path: Path):
    db = open_db(tmp_path / "sized.db")
    sized = [
        Measurement("pkg.f", "synth", Metric.WALL, Histogram.of([10.0 * n] * 3), size=n)
        for n in (10, 100, 1000)
    ]
    sized.append(Measurement("pkg.f", "collected", Metric.WALL, Histogram.of([77.0] * 4)))
    store_batch(
        db,
        ScanBatch(
            measurements=sized,
            scenarios=[Scenario("collected", "pkg.f", ScenarioSource.COLLECTED)],
        ),
        environment_id=ENV.id,
        package="pkg",
    )
    profile = load_profiles(db, ["pkg.f"])["pkg.f"]
    db.conn.close()
    assert profile.lab is not None and profile.lab.size == 100
    assert profile.lab.time.count == 3 and profile.lab.time_ns == Histogram.of([1000.0] * 3).median
    assert profile.collected is not None and profile.collected.samples == 4
    assert [size for size, _ in profile.time_by_size()] == [10, 100, 1000]
    doubled = profile.add(profile)
    assert doubled.lab.time.count == 6 and doubled.collected.samples == 8


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
        ("a\x0cb\u2028c\njson.", 1, 5, (2, 5)),  # only \n, \r\n and \r break lines
        ("a\rb\r\nc", 2, 1, (3, 1)),
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


def test_sort_text_follows_the_companion_server():
    dumps = Candidate("dumps", "function", "json.dumps", index=7, total=40)
    private = Candidate("_default_encoder", "statement", "", index=12, total=40)
    dunder = Candidate("__all__", "statement", "", index=38, total=40)
    assert [sort_text(c, "jedi-language-server", "") for c in (dumps, private, dunder)] == [
        "v07",
        "w12",
        "y38",
    ]
    assert sort_text(dumps, "pyright", "du") == "09.9999.dumps"
    assert sort_text(private, "pyright", "") == "10.9999._default_encoder"
    assert sort_text(private, "pyright", "_d") == "09.9999._default_encoder"
    assert sort_text(dunder, "pyright", "") == "11.9999.__all__"


def test_full_profile_shows_coverage_stored_by_a_scan(tmp_path: Path):
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
    profile = index.lookup("pkg.g")
    assert profile is not None and not profile.profiled
    assert full_profile(profile, ServerConfig(), Markup(False)).endswith(
        "Not profiled (timed out: ran past 10 s)"
    )
    index.close()


# -- settings are range-checked ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (
            {"hover": {"histogramWidth": -5}},
            "hover.histogramWidth: expected a number from 4 to 80, got -5",
        ),
        ({"hover": {"histogramWidth": 10**6}}, "expected a number from 4 to 80, got 1000000"),
        ({"hover": {"histogram": "pie"}}, "hover.histogram: expected one of 'bars', 'sparkline'"),
        ({"mode": "alone"}, "mode: expected one of 'companion', 'standalone'"),
        ({"completion": {"sortLike": "vim"}}, "completion.sortLike: expected one of"),
        ({"inlayHints": {"minimumMicroseconds": -1}}, "expected a number from 0 to"),
        ({"latency": {"slowRequestMs": 0}}, "latency.slowRequestMs: expected a number from 1"),
        (
            {"docsPage": "{qualname"},
            "docsPage: expected a path whose only placeholder is {qualname}",
        ),
        ({"docsPage": "costs.html"}, "docsPage: expected a path containing {qualname}"),
        ({"docsUrl": "javascript:alert(1)"}, "docsUrl: expected an http(s) or file URL"),
    ],
)
def test_out_of_range_settings_fall_back_to_defaults(options: dict, problem: str):
    config, problems = read_config(options)
    assert config == ServerConfig()
    assert len(problems) == 1 and problem in problems[0] and "using the default" in problems[0]


def test_valid_new_settings_are_read():
    config, problems = read_config(
        {
            "mode": "standalone",
            "completion": {"sortLike": "pyright"},
            "inlayHints": {"enabled": False, "minimumMicroseconds": 2},
            "codeLens": {"enabled": True},
        }
    )
    assert problems == [] and not config.companion
    assert config.completion.sort_like == "pyright"
    assert config.inlay_hints == InlayHintOptions(enabled=False, minimum_microseconds=2.0)
    assert config.code_lens.enabled
