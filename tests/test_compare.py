"""``apiprof compare`` on synthetic databases (real SQLite files): machine-speed normalisation,
matching slices, verdicts for time and allocation, the JSON document, the CI gate, the page.

Real scans of a package in two versions are in test_compare_e2e.py.
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest
from test_cli import run

from apiprof.analysis.compare import CompareOptions, Verdict, compare_databases
from apiprof.analysis.speed import SpeedMethod
from apiprof.db.schema import open_db
from apiprof.db.slices import Source
from apiprof.db.store import begin_scan, finish_scan, store_batch, store_entry_points
from apiprof.model.histogram import Histogram
from apiprof.model.records import (
    NO_SIZE,
    Calibration,
    EntryKind,
    EntryPoint,
    Environment,
    Measurement,
    Metric,
    ScanBatch,
    Scenario,
    ScenarioSource,
)

ENV = Environment("3.12.1", "cpython", "Linux", "x86_64", "test cpu")
SIZES = (10, 100, 1000)
APIS = [f"pkg.mod{i % 3}.f{i}" for i in range(24)]


def timings(rng: random.Random, median: float, n: int = 20) -> list[float]:
    return [median * math.exp(rng.gauss(0, 0.2)) for _ in range(n)]


def store_scan(
    path: Path,
    batch: ScanBatch,
    entry_points: list[EntryPoint],
    *,
    speed_index: float | None = None,
    version: str = "1.0",
) -> Path:
    """Write one finished scan of package ``pkg`` the way ``apiprof-scan`` stores it."""
    db = open_db(path)
    scan_id = begin_scan(db, "pkg", version, ENV, Calibration(), {})
    if speed_index is not None:
        db["scans"].update(scan_id, {"machine_speed_ns": speed_index})
    store_entry_points(db, entry_points)
    store_batch(db, batch, environment_id=ENV.id, package="pkg", scan_id=scan_id)
    finish_scan(db, scan_id)
    db.conn.close()
    return path


def write_db(
    path: Path,
    *,
    seed: int,
    machine: float = 1.0,
    slower: dict[str, float] | None = None,
    speed_index: float | None = None,
    alloc: dict[str, int] | None = None,
    apis: list[str] = APIS,
    scenario: str = "file:pkg.toml#work",
    source: ScenarioSource = ScenarioSource.FILE,
    sizes: tuple[int, ...] = SIZES,
    samples: int = 20,
) -> Path:
    """A database like a scan of ``pkg`` writes: every API timed at each size, allocating
    ``100·size`` bytes per call (or ``alloc[api]``); times ``machine`` × ``slower[api]``."""
    rng = random.Random(seed)
    measurements, scenarios = [], []
    for qualname in apis:
        position = int(qualname.rsplit("f", 1)[1])
        key = f"{scenario}:{qualname}"
        scenarios.append(Scenario(key, qualname, source, size_axis="n"))
        for size in sizes:
            factor = (1 + position % 7) * machine * (slower or {}).get(qualname, 1.0)
            median = 2000 * factor * max(size, 1) ** 0.5
            wall = Histogram.of(timings(rng, median, samples))
            per_call = (alloc or {}).get(qualname, 100 * max(size, 1))
            measurements += [
                Measurement(qualname, key, Metric.WALL, wall, size),
                Measurement(
                    qualname, key, Metric.ALLOC_INCL, Histogram.of([per_call] * samples), size
                ),
            ]
    entry_points = [EntryPoint(q, "pkg", q.rsplit(".", 1)[0], EntryKind.FUNCTION) for q in apis]
    batch = ScanBatch(measurements=measurements, scenarios=scenarios)
    return store_scan(path, batch, entry_points, speed_index=speed_index)


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    home = tmp_path_factory.mktemp("compare")
    return {
        "base": write_db(home / "base.db", seed=1, speed_index=100.0),
        # a laptop twice as slow: every API 2× — and f5 3× slower on top
        "laptop": write_db(
            home / "laptop.db", seed=2, machine=2.0, speed_index=200.0, slower={"pkg.mod2.f5": 3.0}
        ),
        "laptop_no_index": write_db(
            home / "laptop_no_index.db", seed=3, machine=2.0, slower={"pkg.mod2.f5": 3.0}
        ),
        "uniform": write_db(home / "uniform.db", seed=4, machine=2.0, speed_index=200.0),
        "home": home,
    }


def flagged(comparison) -> dict[str, set[str]]:
    return {
        str(v): {a.qualname for a in comparison.apis if v in a.verdicts}
        for v in Verdict
        if v is not Verdict.SAME and any(v in a.verdicts for a in comparison.apis)
    }


def test_a_uniformly_slower_machine_flags_nothing_by_its_speed_index(dbs):
    result = compare_databases(str(dbs["base"]), str(dbs["uniform"]))
    assert result.speed.used == "index" and result.speed.factor == pytest.approx(2.0)
    assert flagged(result) == {}
    assert len(result.apis) == len(APIS) and result.tests == 2 * len(APIS)
    assert all(api.time and 0.8 < api.time.median_ratio.value < 1.25 for api in result.apis)
    assert "by the machine-speed index" in result.speed.describe()


def test_without_an_index_the_shared_api_median_takes_the_machine_out(dbs):
    result = compare_databases(str(dbs["base"]), str(dbs["laptop_no_index"]))
    assert result.speed.used == "shared-apis"
    assert result.speed.factor == pytest.approx(2.0, rel=0.1)
    assert "NEW has no machine-speed index" in result.speed.describe()
    assert flagged(result) == {"slower": {"pkg.mod2.f5"}}


def test_one_api_slower_on_a_slower_machine_is_the_only_one_flagged(dbs):
    result = compare_databases(str(dbs["base"]), str(dbs["laptop"]))
    assert flagged(result) == {"slower": {"pkg.mod2.f5"}}
    top = result.apis[0]
    assert top.qualname == "pkg.mod2.f5" and top.regressed
    assert top.time.median_ratio.value == pytest.approx(3.0, rel=0.15)
    assert top.time.median_ratio.low > 2.0 and top.time.q_value < 1e-6
    assert top.time.matched and top.time.slices == len(SIZES)
    assert top.alloc.verdict is Verdict.SAME


def test_speed_none_compares_raw_times(dbs):
    result = compare_databases(
        str(dbs["base"]), str(dbs["uniform"]), CompareOptions(speed=SpeedMethod.NONE)
    )
    assert result.speed.used == "none" and result.speed.factor == 1.0
    assert flagged(result) == {"slower": set(APIS)}
    # the cross-check still reports what the machine looked like
    assert result.speed.shared_apis_ratio == pytest.approx(2.0, rel=0.1)


def test_speed_index_requested_but_missing_normalises_nothing_and_says_why(dbs):
    result = compare_databases(
        str(dbs["base"]), str(dbs["laptop_no_index"]), CompareOptions(speed=SpeedMethod.INDEX)
    )
    assert result.speed.used == "none"
    assert "NEW has no machine-speed index" in result.speed.reason


def test_allocation_changes_are_judged_on_exact_values(tmp_path):
    base = write_db(tmp_path / "a.db", seed=1, alloc={"pkg.mod0.f0": 0, "pkg.mod1.f1": 100})
    new = write_db(
        tmp_path / "b.db",
        seed=2,
        alloc={"pkg.mod0.f0": 64, "pkg.mod1.f1": 120, "pkg.mod2.f2": 104},
    )
    result = compare_databases(str(base), str(new))
    by_name = {api.qualname: api for api in result.apis}
    assert by_name["pkg.mod0.f0"].alloc.verdict is Verdict.MORE  # 0 B → 64 B
    assert by_name["pkg.mod1.f1"].alloc.verdict is Verdict.MORE  # 100 B → 120 B: same log2 bucket
    assert by_name["pkg.mod1.f1"].alloc.median_ratio.value == pytest.approx(1.2)
    # 200 B → 104 B at size 1 … 100 kB → 104 B: far less, but 104 B vs 10 kB etc. — a real drop
    assert by_name["pkg.mod2.f2"].alloc.verdict is Verdict.LESS
    assert flagged(result) == {"more": {"pkg.mod0.f0", "pkg.mod1.f1"}, "less": {"pkg.mod2.f2"}}


def test_min_effect_keeps_small_real_changes_out(tmp_path):
    base = write_db(tmp_path / "a.db", seed=1, samples=1000, apis=APIS[:6])
    new = write_db(
        tmp_path / "b.db", seed=2, samples=1000, apis=APIS[:6], slower={"pkg.mod0.f0": 1.06}
    )
    strict = compare_databases(str(base), str(new), CompareOptions(speed=SpeedMethod.NONE))
    f0 = next(api for api in strict.apis if api.qualname == "pkg.mod0.f0")
    assert f0.time.q_value < 0.05  # 6 % slower is detectable with 3000 samples a side …
    assert f0.time.verdict is Verdict.SAME  # … but below the 10 % that counts
    loose = compare_databases(
        str(base), str(new), CompareOptions(speed=SpeedMethod.NONE, min_effect=0.03)
    )
    assert flagged(loose) == {"slower": {"pkg.mod0.f0"}}


def test_too_few_samples_get_no_verdict(tmp_path):
    base = write_db(tmp_path / "a.db", seed=1, samples=3)
    new = write_db(tmp_path / "b.db", seed=2, samples=3, slower={"pkg.mod0.f0": 5.0})
    result = compare_databases(str(base), str(new))
    assert {api.time.verdict for api in result.apis} == {Verdict.TOO_FEW}
    assert result.tests == 0 and result.speed.used == "none"
    assert "only 0 shared APIs have enough time samples" in result.speed.reason


def test_only_shared_slices_are_compared_and_unshared_apis_are_listed(tmp_path):
    base = write_db(tmp_path / "a.db", seed=1, apis=APIS[:20], sizes=(10, 100, 1000))
    # NEW measured only the large size, and two APIs more, four fewer
    new = write_db(tmp_path / "b.db", seed=2, apis=APIS[4:], sizes=(1000, 5000))
    result = compare_databases(str(base), str(new))
    assert result.only_in_base == tuple(sorted(APIS[:4]))
    assert result.only_in_new == tuple(sorted(APIS[20:]))
    assert all(api.time.slices == 1 and api.time.matched for api in result.apis)
    assert flagged(result) == {}  # a mixture over other sizes would have read as 4× slower


def test_collected_data_against_lab_scans_compares_whole_distributions(tmp_path):
    base = write_db(tmp_path / "lab.db", seed=1, apis=APIS[:6], sizes=(NO_SIZE,))
    wild = write_db(
        tmp_path / "wild.db",
        seed=2,
        apis=APIS[:6],
        sizes=(NO_SIZE,),
        scenario=str(ScenarioSource.COLLECTED),
        source=ScenarioSource.COLLECTED,
        slower={APIS[0]: 4.0},
    )
    result = compare_databases(str(base), str(wild), CompareOptions(speed=SpeedMethod.NONE))
    assert all(not api.time.matched for api in result.apis)
    assert flagged(result) == {"slower": {APIS[0]}}
    # the lab database holds no collected data: with --source collected nothing is shared
    only_collected = CompareOptions(speed=SpeedMethod.NONE, source=Source.COLLECTED)
    collected = compare_databases(str(base), str(wild), only_collected)
    assert collected.apis == () and collected.only_in_new == tuple(sorted(APIS[:6]))
    lab = compare_databases(str(base), str(wild), CompareOptions(source=Source.LAB))
    assert lab.apis == () and lab.only_in_base == tuple(sorted(APIS[:6]))


def test_package_option_keeps_one_package(dbs):
    result = compare_databases(
        str(dbs["base"]), str(dbs["laptop"]), CompareOptions(package="other")
    )
    assert result.apis == () and result.only_in_base == ()


# -- the command -------------------------------------------------------------------------------
def test_cli_gate_json_and_exit_codes(dbs):
    out = run("apiprof", "compare", dbs["base"], dbs["laptop"], "--json", "--fail-on", "slower")
    assert out.returncode == 1, out.stderr
    assert "1 API(s) matched --fail-on slower: pkg.mod2.f5" in out.stderr
    data = json.loads(out.stdout)
    assert data["gate"] == {"fail_on": ["slower"], "failing": ["pkg.mod2.f5"]}
    assert data["speed"]["used"] == "index" and data["speed"]["factor"] == 2.0
    assert data["summary"]["time"] == {
        "slower": 1,
        "faster": 0,
        "no change": 23,
        "too few samples": 0,
    }
    first = data["apis"][0]
    assert first["qualname"] == "pkg.mod2.f5" and first["module"] == "pkg.mod2"
    time = first["time"]
    assert time["verdict"] == "slower" and time["metric"] == "wall_ns" and time["unit"] == "ns"
    assert set(time) >= {
        "n_base",
        "n_new",
        "slices",
        "matched",
        "base_median",
        "new_median",
        "base_p90",
        "new_p90",
        "excess",
        "median_ratio",
        "p90_ratio",
        "p_value",
        "q_value",
        "superiority",
    }
    assert (
        time["median_ratio"]["low"] < time["median_ratio"]["value"] < time["median_ratio"]["high"]
    )
    assert first["alloc"]["verdict"] == "no change"
    # allocation regressions do not trip a time gate; "regression" covers both
    assert (
        run("apiprof", "compare", dbs["base"], dbs["uniform"], "--fail-on", "slower").returncode
        == 0
    )
    assert (
        run("apiprof", "compare", dbs["base"], dbs["laptop"], "--fail-on", "more,faster").returncode
        == 0
    )
    assert (
        run("apiprof", "compare", dbs["base"], dbs["laptop"], "--fail-on", "regression").returncode
        == 1
    )


def test_cli_terminal_table_names_the_method_and_the_regression(dbs):
    out = run("apiprof", "compare", dbs["base"], dbs["laptop_no_index"])
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "by the median time ratio over 24 shared APIs" in text
    assert "pkg.mod2.f5" in text and "slower" in text
    assert "time: 1 slower, 23 no change; allocation: 24 no change" in text
    assert "23 API(s) without a change are not listed (--all lists every API)" in text
    every = run("apiprof", "compare", dbs["base"], dbs["laptop_no_index"], "--all")
    assert all(name in every.stdout for name in APIS)


def test_cli_warns_when_the_index_does_not_explain_the_difference(dbs, tmp_path):
    # an index that claims equal machines while every API reads 2×
    base = write_db(tmp_path / "a.db", seed=1, speed_index=100.0)
    new = write_db(tmp_path / "b.db", seed=2, machine=2.0, speed_index=100.0)
    out = run("apiprof", "compare", base, new, "--json")
    warning = json.loads(out.stdout)["speed"]["warning"]
    assert re.match(
        r"after the machine-speed index, the median API still reads (1\.9\d|2\.0\d)×", warning
    )
    assert "warning: after the machine-speed index" in run("apiprof", "compare", base, new).stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--min-effect", "10"], 2, "write 10% if you meant 10 percent"),
        (["--min-effect", "ten"], 2, "expected a percentage like 10%"),
        (["--alpha", "1.5"], 2, "must be between 0 and 1"),
        (["--fail-on", "worse"], 2, "choose from slower, faster, more, less, regression, change"),
        (["--package", "nope"], 2, "have no API in common in package 'nope'"),
    ],
)
def test_cli_rejects_bad_options_with_a_next_step(dbs, args, code, message):
    out = run("apiprof", "compare", dbs["base"], dbs["laptop"], *args)
    assert out.returncode == code
    assert message in out.stderr


def test_cli_missing_database_is_a_database_error(dbs, tmp_path):
    out = run("apiprof", "compare", dbs["base"], tmp_path / "nope.db")
    assert out.returncode == 3 and "no such database" in out.stderr


def test_html_page_shows_method_charts_table_and_details(dbs):
    page = dbs["home"] / "compare.html"
    out = run("apiprof", "compare", dbs["base"], dbs["laptop"], "--html", page)
    assert out.returncode == 0, out.stderr
    html = page.read_text(encoding="utf-8")
    assert "by the machine-speed index" in html and "Benjamini–Hochberg" in html
    assert html.count('class="apiprof-graphic apiprof-ratios"') == 2  # time and allocation
    assert 'id="detail-pkg.mod2.f5"' in html and html.count('class="detail"') == 1
    assert html.count("apiprof-graphic apiprof-paired") == 2
    assert all(f"<code>{name}</code>" in html for name in APIS)
    assert '<span class="verdict worse">slower</span>' in html
    assert "<script" not in html


def test_long_ratio_charts_keep_every_change_and_the_largest_others(dbs, monkeypatch):
    from apiprof.analysis import html

    monkeypatch.setattr(html, "CHART_ROWS", 5)
    page = html.compare_page(compare_databases(str(dbs["base"]), str(dbs["laptop"])))
    time_chart = page.split('id="chart-time"', 1)[1].split("</section>", 1)[0]
    assert time_chart.count('class="apiprof-ratio ') == 5
    assert "apiprof-ratio apiprof-worse" in time_chart  # the regression is always drawn
    assert f"{len(APIS) - 5} more APIs without a change are in the table below" in time_chart
