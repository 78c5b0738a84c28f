"""Checking that one argument source, and no other, makes an entry point's scenario."""

from __future__ import annotations

import sys

from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import ScenarioSource


def made_only_by(
    qualname: str,
    source: ScenarioSource,
    setup_mark: str,
    with_it: tuple[str, ...],
    without_it: tuple[str, ...],
) -> str:
    """The description of the scenario ``source`` found with the sources ``with_it``: credited
    to it, rebuilt in the measuring worker from its setup (``setup_mark``), running as
    measured; and with ``without_it`` (the same sources but that one) none is found."""
    spec, failure = find_synthesized_scenario(qualname, (10,), sources=with_it)
    assert spec is not None, failure
    assert spec.source is source
    assert setup_mark in spec.setup  # the measuring worker rebuilds the same values
    argv = list(sys.argv)
    assert try_scenario(spec)[0] is None  # as the worker measuring it: sys.argv may change
    sys.argv[:] = argv
    without, _ = find_synthesized_scenario(qualname, (10,), sources=without_it)
    assert without is None, "the other sources already call it: the rule is not what made it"
    return spec.description
