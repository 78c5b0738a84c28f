"""Argument synthesis on untyped code shaped like the misses of real packages (fixture
``gaps_pkg``): every mechanism added for them profiles its case and is credited."""

from __future__ import annotations

import pytest

from apiprof.engine.discovery.discover import discover
from apiprof.engine.scenarios.collect import gather_scenarios
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import ScenarioSource


@pytest.fixture(scope="module")
def gathered():
    return gather_scenarios(discover("gaps_pkg"), sizes=(10, 100))


def spec_for(gathered, qualname):
    specs = [spec for spec in gathered.specs if spec.qualname == qualname]
    assert specs, gathered.unscenarioed().get(qualname)
    return specs[0]


def test_every_entry_point_of_the_fixture_is_profiled(gathered):
    assert gathered.unscenarioed() == {}
    for spec in gathered.specs:
        assert try_scenario(spec)[0] is None, spec.id


def test_a_reader_is_fed_by_its_sibling_with_what_the_inverse_class_makes(gathered):
    spec = spec_for(gathered, "gaps_pkg.Unpacker.unpack")
    assert spec.source is ScenarioSource.FACTORIES
    assert "Unpacker.feed(b'" in spec.inputs and "not measured" in spec.description
    assert spec.call.startswith("warmup()\n")
    # the method that works on a fresh receiver is measured on a fresh one
    plain = spec_for(gathered, "gaps_pkg.Unpacker.buffered")
    assert "warmup" not in plain.call
    # repeated calls each find a value: the receiver is fed again before each
    failure, result = try_scenario(spec)
    assert failure is None and result == try_scenario(spec)[1]


def test_feeding_is_part_of_the_subclasses_source():
    spec, failure = find_synthesized_scenario(
        "gaps_pkg.Unpacker.unpack", (10,), sources=("heuristics",)
    )
    assert spec is None and "OutOfData" in failure.reason
