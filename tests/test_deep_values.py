"""A value typed ``Any`` at the depth where argument synthesis stops nesting is a plain word:
a method's receiver that holds records holding records is still built."""

from __future__ import annotations

from typing import Any

import pytest

from apiprof.engine.scenarios import synth, values  # synth first: it imports values
from apiprof.engine.scenarios.building import MAX_DEPTH, BuildContext
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario


def test_a_receiver_whose_innermost_field_takes_anything_is_built():
    spec, failure = find_synthesized_scenario("deepnest_pkg.DuplicateKeys.keys", (10,))
    assert spec is not None, failure
    assert try_scenario(spec)[0] is None


def test_only_what_takes_anything_becomes_a_leaf_at_the_depth_limit():
    context = BuildContext("deepnest_pkg.Field", 10, 0, 0, None)
    context.depth = MAX_DEPTH + 1
    assert isinstance(values.build(Any, context, "value"), str)
    assert isinstance(values.build(object, context, "value"), str)
    with pytest.raises(synth.CannotSynthesize, match="nests too deeply"):
        values.build(list[int], context, "value")
