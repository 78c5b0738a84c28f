"""Typical figures pool scenarios with equal weight, however many samples each one got."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from apiprof.analysis.report import module_report
from apiprof.db import query
from apiprof.db.schema import open_db, open_reader
from apiprof.db.store import store_batch
from apiprof.lsp_server.profiles import load_profiles
from apiprof.model.histogram import Histogram, exact_percentile
from apiprof.model.pooling import PooledHistogram, pool_scenarios, scenario_weights
from apiprof.model.records import Measurement, Metric, ScanBatch, Scenario, ScenarioSource

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# A cheap scenario measured 1,000 times beside two expensive ones measured 50 and 10 times (a
# time budget per pass gives that shape): the cheap one must not decide the typical figure.
CHEAP, MIDDLE, DEAR = [100] * 1000, [1000] * 50, [10_000] * 10


def test_each_scenario_weighs_the_same():
    pooled = pool_scenarios(Histogram.of(values) for values in (CHEAP, MIDDLE, DEAR))
    assert pooled.percentiles((10, 50, 90)) == pytest.approx((100, 1000, 10_000))
    assert pooled.mean == pytest.approx((100 + 1000 + 10_000) / 3)
    assert pooled.count == 1060  # what was measured stays exact, as do the stored rows
    exact = Histogram.of(CHEAP + MIDDLE + DEAR)
    assert list(pooled.rows()) == list(exact.rows()) and exact.median == 100


def test_the_mixture_is_each_scenario_scaled_to_the_same_total():
    rng = random.Random(5)
    scenarios = [
        [rng.lognormvariate(math.log(mu), 0.3) for _ in range(n)]
        for mu, n in ((300, 1500), (2_000, 300), (40_000, 60))
    ]
    pooled = pool_scenarios(Histogram.of(values) for values in scenarios)
    common = math.lcm(*(len(values) for values in scenarios))
    replicated = [v for values in scenarios for v in values * (common // len(values))]
    for q in (10, 25, 50, 75, 90):
        assert pooled.percentile(q) == pytest.approx(exact_percentile(replicated, q), rel=0.05)


def test_one_scenario_is_its_own_figure_and_nothing_is_empty():
    lone = Histogram.of([5, 6, 7])
    assert pool_scenarios([lone, Histogram()]) is lone
    assert not pool_scenarios([]) and not pool_scenarios([Histogram()])


def test_weights_are_exact_or_within_a_part_in_a_million():
    assert scenario_weights([1000, 50, 10]) == (1, 20, 100)
    counts = [1_000_003, 999_983, 7, 65_537, 2_147_483_647]  # primes: no small common multiple
    totals = [w * n for w, n in zip(scenario_weights(counts), counts, strict=True)]
    assert max(totals) / min(totals) - 1 < 1e-6


def test_adding_to_a_pool_adds_scenarios():
    a, b, c = (Histogram.of(values) for values in (CHEAP, MIDDLE, DEAR))
    pooled = pool_scenarios([a, b])
    both = pooled + c
    assert isinstance(both, PooledHistogram) and both.parts == (a, b, c)
    assert pooled.parts == (a, b)  # + leaves its operands alone
    assert pool_scenarios([pooled, c]).median == pytest.approx(1000)  # pools flatten
    pooled.merge(c)
    assert pooled.median == pytest.approx(1000) and pooled.count == 1060


def _database(path: Path):
    """pkg.f measured at n=100 by three scenarios with the counts above, plus n=10."""
    db = open_db(path)
    batch = ScanBatch(
        scenarios=[
            Scenario(f"s{i}:pkg.f", "pkg.f", ScenarioSource.SYNTHESIZED, "", "n") for i in range(3)
        ]
    )
    for i, values in enumerate((CHEAP, MIDDLE, DEAR)):
        for metric in (Metric.WALL, Metric.ALLOC_INCL):
            batch.measurements += [
                Measurement("pkg.f", f"s{i}:pkg.f", metric, Histogram.of(values), 100),
                Measurement("pkg.f", f"s{i}:pkg.f", metric, Histogram.of([1] * 5000), 10),
            ]
    store_batch(db, batch, environment_id="env", package="pkg")
    db.conn.close()
    return open_reader(path)


def test_every_reader_gives_the_equal_weight_figure(tmp_path):
    db = _database(tmp_path / "p.db")
    typical = query.summary(db, "pkg.f").at_reference()
    assert typical.time_median_ns == pytest.approx(1000)
    assert typical.alloc_median_bytes == pytest.approx(1000)
    assert typical.samples == 1060
    summary = query.all_summaries(db, breakdowns=query.scenario_breakdowns(db))["pkg.f"]
    assert summary.at_reference().time_median_ns == pytest.approx(1000)  # the docs' path
    lab = load_profiles(db, ["pkg.f"])["pkg.f"].lab  # the editor's
    assert lab is not None and lab.size == 100
    assert (lab.time_ns, lab.alloc_bytes) == pytest.approx((1000, 1000))
    db.conn.close()
    # the report pools every slice, each weighing the same: three at 1 ns (n=10) and 100, 1000
    # and 10,000 ns (n=100) put the median halfway between 1 and 100 (by count it would be 1)
    api = module_report(tmp_path / "p.db").everything.apis[0]
    assert api.time_median == pytest.approx(50.5)


@pytest.mark.slow
def test_a_scan_shows_the_equal_weight_figure(tmp_path):
    """Through the user's path: ``mid(20)``, ``mid(200)`` and ``mid(2000)`` as three scenarios
    of one API; the cheap one gets far more samples, the middle one is the typical figure."""
    db = tmp_path / "pool.db"
    bin_dir = Path(sys.executable).parent
    env = {"PYTHONPATH": str(FIXTURES), "PATH": str(bin_dir)}
    subprocess.run(
        [str(bin_dir / "apiprof-scan"), "groundtruth_pkg", "--scenarios",
         str(FIXTURES / "pooling.toml"), "--no-synth", "--no-docstrings", "--db", str(db), "-q"],
        check=True, env=env, timeout=600,
    )  # fmt: skip
    shown = json.loads(
        subprocess.run(
            [str(bin_dir / "apiprof"), "show", "groundtruth_pkg.mid", "--json", "--db", str(db)],
            check=True, capture_output=True, text=True, timeout=120,
        ).stdout
    )  # fmt: skip
    wall = {
        piece["scenario_id"].rsplit("#", 1)[1]: piece
        for piece in shown["sizes"]
        if piece["metric"] == "wall_ns"
    }
    assert wall["short"]["count"] >= 3 * wall["long"]["count"]  # the premise
    typical = shown["metrics"]["wall_ns"]
    assert typical["count"] == sum(piece["count"] for piece in wall.values())
    assert 0.7 <= typical["median"] / wall["middle"]["median"] <= 1.4
