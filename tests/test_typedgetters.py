"""A mapping's typed getter (``get_int(key)``) finds an item of the type its name says under the
call's own key (``typedconfig_pkg``), stored before each call as ``d[key] = 7``."""

from __future__ import annotations

import pytest

from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.typedgetters import stored_for


@pytest.mark.parametrize(
    ("method", "stored"),
    [
        ("get_int", "7"),
        ("get_bool", "True"),
        ("get_section", "{}"),
        ("get_string", "'word'"),
    ],
)
def test_a_typed_getter_finds_its_type_under_the_key(method, stored):
    spec, failure = find_synthesized_scenario(f"typedconfig_pkg.Settings.{method}", (10,))
    assert spec is not None, failure
    assert f"after Settings.__setitem__(<the call's own arguments>, {stored})" in spec.inputs


def test_only_a_getter_naming_a_type_stores_one():
    assert stored_for("get_integer", {}) == (7,)
    assert stored_for("getList", {}) == (["one", "two"],)
    assert stored_for("get_config", {"a": 1}) == ({},)  # an empty one of the receiver's class
    assert stored_for("get", {}) is None  # the key as its own value, as before
    assert stored_for("pop", {}) is None
    assert stored_for("get_widget", {}) is None
