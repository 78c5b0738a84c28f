"""``apiprof report``: cost by module and namespace on a synthetic database (a real SQLite file)
with lab scans, collected data, an unprofiled entry point and a second package."""

from __future__ import annotations

import json

import pytest
from test_cli import run
from test_compare import store_scan

from apiprof.analysis.report import ReportOptions, SortBy, module_report
from apiprof.db.slices import Source
from apiprof.errors import UsageError
from apiprof.model.histogram import Histogram
from apiprof.model.records import (
    NO_SIZE,
    Coverage,
    CoverageRecord,
    EntryKind,
    EntryPoint,
    Measurement,
    Metric,
    ScanBatch,
    Scenario,
    ScenarioSource,
)

# qualname → (module, time per call at size n as a function of n, bytes per call)
APIS = {
    "pkg.a.parse": ("pkg.a", lambda n: 50_000 + 100 * n, 4096),
    "pkg.a.load": ("pkg.a", lambda n: 2_000, 256),
    "pkg.a.dump": ("pkg.a", lambda n: 8_000, 1024),
    "pkg.a.sub.walk": ("pkg.a.sub", lambda n: 1_000 * n, 64 * 1024),
    "pkg.a.sub.peek": ("pkg.a.sub", lambda n: 300, 0),
    "pkg.b.hash": ("pkg.b", lambda n: 700, 32),
    "other.tool": ("other", lambda n: 10**6, 10),
}
SIZES = (10, 100, 1000)


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "r.db"
    measurements, scenarios = [], []
    for qualname, (_, cost, alloc) in APIS.items():
        scenario = f"file:s.toml#{qualname}"
        scenarios.append(Scenario(scenario, qualname, ScenarioSource.FILE, size_axis="n"))
        for n in SIZES:
            measurements += [
                Measurement(qualname, scenario, Metric.WALL, Histogram.of([cost(n)] * 10), n),
                Measurement(qualname, scenario, Metric.ALLOC_INCL, Histogram.of([alloc] * 10), n),
            ]
    # real programs called pkg.b.hash a lot, and slower than the lab saw
    measurements.append(
        Measurement("pkg.b.hash", "collected", Metric.WALL, Histogram.of([1400] * 500), NO_SIZE)
    )
    entry_points = [
        EntryPoint(q, q.split(".")[0], module, EntryKind.FUNCTION)
        for q, (module, _, _) in APIS.items()
    ]
    entry_points.append(EntryPoint("pkg.b.Unreachable", "pkg", "pkg.b", EntryKind.CLASS))
    coverage = [
        CoverageRecord("pkg.b.Unreachable", Coverage.NO_ARGUMENTS, "needs a socket"),
        *(CoverageRecord(q, Coverage.PROFILED) for q in APIS),
    ]
    batch = ScanBatch(measurements=measurements, scenarios=scenarios, coverage=coverage)
    return store_scan(path, batch, entry_points, version="3.1")


def test_modules_hold_their_apis_totals_and_growth(db_path):
    report = module_report(str(db_path), ReportOptions(package="pkg"))
    modules = {m.name: m for m in report.modules}
    assert list(modules) == ["pkg.a.sub", "pkg.a", "pkg.b"]  # most time measured first
    a = modules["pkg.a"]
    assert [api.qualname for api in a.apis] == ["pkg.a.parse", "pkg.a.dump", "pkg.a.load"]
    expected_total = sum(
        10 * APIS[q][1](n) for q in ("pkg.a.parse", "pkg.a.load", "pkg.a.dump") for n in SIZES
    )
    assert a.total_ns == pytest.approx(expected_total)
    assert a.time.count == 90 and a.api_medians.count == 3
    assert modules["pkg.a.sub"].growth_classes == {"O(n)": 1, "O(1)": 1}
    b = modules["pkg.b"]
    assert (len(b.apis), len(b.profiled)) == (2, 1)  # the unreachable class counts, unprofiled
    assert b.time.count == 30 + 500  # lab and collected
    assert report.everything.time.count == sum(m.time.count for m in report.modules)
    assert "other" not in modules


def test_depth_rolls_modules_up_into_namespaces(db_path):
    by_two = module_report(str(db_path), ReportOptions(package="pkg", depth=2))
    assert sorted(m.name for m in by_two.modules) == ["pkg.a", "pkg.b"]
    assert len(next(m for m in by_two.modules if m.name == "pkg.a").apis) == 5
    whole = module_report(str(db_path), ReportOptions(depth=1))
    assert sorted(m.name for m in whole.modules) == ["other", "pkg"]


def test_sources_split_lab_from_collected(db_path):
    collected = module_report(str(db_path), ReportOptions(source=Source.COLLECTED))
    hashed = next(m for m in collected.modules if m.name == "pkg.b")
    assert hashed.time.count == 500 and hashed.time.median == pytest.approx(1400)
    lab = module_report(str(db_path), ReportOptions(source=Source.LAB))
    assert next(m for m in lab.modules if m.name == "pkg.b").time.count == 30


def test_sort_and_top(db_path):
    by_name = module_report(str(db_path), ReportOptions(sort=SortBy.NAME, top=1))
    assert [m.name for m in by_name.modules] == sorted(m.name for m in by_name.modules)
    by_median = module_report(str(db_path), ReportOptions(sort=SortBy.MEDIAN))
    assert by_median.modules[0].name == "other"
    assert [api.qualname for api in by_name.modules[1].top(1)] == ["pkg.a.parse"]


def test_unknown_package_lists_the_ones_there(db_path):
    with pytest.raises(UsageError, match="has no APIs of package 'nope'; it has: other, pkg"):
        module_report(str(db_path), ReportOptions(package="nope"))


def test_cli_terminal_json_and_html(db_path, tmp_path):
    text = run("apiprof", "report", "--db", db_path, "--package", "pkg")
    assert text.returncode == 0, text.stderr
    assert "Cost by module" in text.stdout and "pkg.a.sub" in text.stdout
    assert "Most expensive APIs per module (top 3)" in text.stdout
    assert "Times are inclusive" in text.stdout

    out = run("apiprof", "report", "--db", db_path, "--json", "--top", "2")
    data = json.loads(out.stdout)
    assert data["options"]["top"] == 2 and data["database"]["packages"] == {"pkg": "3.1"}
    module = next(m for m in data["modules"] if m["module"] == "pkg.a")
    assert set(module) >= {
        "apis",
        "profiled",
        "time_samples",
        "time_median",
        "time_p90",
        "time_total_ns",
        "alloc_samples",
        "alloc_median",
        "api_medians_ns",
        "growth_classes",
        "top",
    }
    assert [api["qualname"] for api in module["top"]] == ["pkg.a.parse", "pkg.a.dump"]
    assert (
        module["top"][0]["time_metric"] == "wall_ns" and module["top"][0]["growth_class"] == "O(n)"
    )

    page = tmp_path / "report.html"
    assert run("apiprof", "report", "--db", db_path, "--html", page).returncode == 0
    html = page.read_text(encoding="utf-8")
    assert html.count('class="detail"') == 4 and 'id="module-pkg.a.sub"' in html
    assert "apiprof-graphic apiprof-barchart" in html and "<code>pkg.a.parse</code>" in html

    bad = run("apiprof", "report", "--db", db_path, "--depth", "0")
    assert bad.returncode == 2 and "must be at least 1" in bad.stderr
