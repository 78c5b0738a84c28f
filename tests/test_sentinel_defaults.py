"""A receiver whose constructor's optional parameter defaults to a "no value" marker (the
package's own sentinel instance, or a bare ``object()``) is built with a value in late
variants, as one defaulting to None is."""

from __future__ import annotations

import pytest

from apiprof.engine.scenarios.optionalfill import is_sentinel
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario


def test_sentinels_are_told_from_values():
    import sentinel_pkg

    assert is_sentinel(sentinel_pkg.noValue, "sentinel_pkg")
    assert is_sentinel(object(), "sentinel_pkg")
    for value in (None, 0, "", (), sentinel_pkg.Number, print, sentinel_pkg.Number()):
        assert not is_sentinel(value, "other_pkg") or value is None
    assert not is_sentinel(3, "sentinel_pkg") and not is_sentinel(sentinel_pkg, "sentinel_pkg")


@pytest.mark.parametrize("qualname", ["sentinel_pkg.Number.doubled", "sentinel_pkg.Label.shout"])
def test_the_receiver_gets_a_value_in_a_late_variant(qualname):
    spec, failure = find_synthesized_scenario(qualname, (10,))
    assert spec is not None, failure
    assert "variant 0" not in spec.description  # the plain receiver is a schema: refused
    assert try_scenario(spec)[0] is None
