"""A method of a mapping: its receiver is fed items through the mapping's own ``update`` (with
a mapping, not a list), and a parameter named ``key`` is an item's key (text), not a key
function."""

from __future__ import annotations

from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario


def test_a_mapping_emptied_by_the_call_is_fed_a_mapping_first():
    spec, failure = find_synthesized_scenario("mapping_pkg.Section.popitem", (10,))
    assert spec is not None, failure
    assert "Section.update({" in spec.description  # fed key-value pairs, before each call
    assert try_scenario(spec)[0] is None


def test_the_key_of_a_mappings_method_is_text():
    spec, failure = find_synthesized_scenario("mapping_pkg.Section.setdefault", (10,))
    assert spec is not None, failure
    assert "types from key: heuristics" in spec.description
    assert try_scenario(spec)[0] is None


def test_a_method_taking_a_key_of_the_mapping_gets_it_put_in_first():
    spec, failure = find_synthesized_scenario("mapping_pkg.Section.restore_default", (10,))
    assert spec is not None, failure
    assert "Section.__setitem__(<the call's own arguments>)" in spec.description
    assert try_scenario(spec)[0] is None
