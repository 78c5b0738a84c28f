"""Docstring examples become scenarios: blocks, skips, I/O, shared state, targets."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from apiprof.engine.discovery.discover import discover, resolve_object
from apiprof.engine.scenarios.doctests import (
    docstring_of,
    docstring_scenarios,
    does_io,
    example_blocks,
    find_targets,
    identity_of,
)
from apiprof.engine.scenarios.spec import compile_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import ScenarioSource

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def public():
    discovery = discover("discover_pkg")
    entries = {ep.qualname: ep for ep in discovery.entry_points}
    objects = {name: resolve_object(name) for name in entries}
    return entries, objects, {id(identity_of(obj)): name for name, obj in objects.items()}


def test_blocks_are_contiguous_runs_of_examples():
    doc = """Intro.

    >>> a = 1
    >>> b = a + 1
    >>> b
    2

    Prose in between.

    >>> def f(x):
    ...     return x * 2
    >>> f(b)
    4
    """
    first, second = example_blocks(doc)
    assert (first.index, first.code) == (1, "a = 1\nb = a + 1\nb\n")
    assert second.index == 2 and second.code.startswith("def f(x):\n    return x * 2\n")


def test_skip_markers_and_expected_tracebacks_are_left_out():
    from discover_pkg import core

    (block,) = example_blocks(docstring_of(core.greet))
    assert block.code == 'greet("Ada")\n' and not block.skipped
    only_skipped = example_blocks(">>> launch()  # doctest: +SKIP\n")
    assert only_skipped[0].skipped == "every statement is skipped or expected to raise"


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("open('f').read()", "uses open"),
        ("import subprocess", "uses subprocess"),
        ("from os.path import join", "uses os"),
        ("eval('1')", "uses eval"),
        ("sorted([3, 1])", ""),
    ],
)
def test_obvious_io_is_detected(code, reason):
    found = does_io(ast.parse(code))
    assert (reason in found) if reason else found == ""


def test_later_blocks_see_what_earlier_blocks_defined(public):
    entries, objects, identities = public
    specs, reason = docstring_scenarios(
        entries["discover_pkg.Counter"], objects["discover_pkg.Counter"], identities
    )
    assert reason == ""
    assert [spec.id for spec in specs] == [
        "doc:discover_pkg.Counter#1",
        "doc:discover_pkg.Counter#2",
    ]
    assert all(spec.source is ScenarioSource.DOCSTRING and spec.size_axis == "" for spec in specs)
    assert "c = Counter()" in specs[1].setup  # block 1 runs, unmeasured, before block 2
    assert compile_scenario(specs[1], None)() == 2
    assert specs[1].targets == (
        "discover_pkg.Counter",
        "discover_pkg.Counter.add",
        "discover_pkg.Counter.total",
    )


def test_targets_are_the_public_apis_the_example_names(public):
    entries, objects, identities = public
    (spec,) = docstring_scenarios(
        entries["discover_pkg.scale"], objects["discover_pkg.scale"], identities
    )[0]
    assert spec.targets == ("discover_pkg.scale", "discover_pkg.area")
    namespace = {"discover_pkg": __import__("discover_pkg")}
    found = find_targets(
        "import discover_pkg.sub\ndiscover_pkg.sub.helper({})\ndiscover_pkg.Shape.unit()",
        namespace,
        identities,
        "discover_pkg.scale",
    )
    assert found == ["discover_pkg.scale", "discover_pkg.sub.helper", "discover_pkg.Shape.unit"]


def test_io_examples_are_reported_not_run(public):
    entries, objects, identities = public
    specs, reason = docstring_scenarios(
        entries["discover_pkg.read_config"], objects["discover_pkg.read_config"], identities
    )
    assert specs == [] and reason == "example 1: does I/O or runs code dynamically (uses open)"


def test_stdlib_docstring_examples_run_as_scenarios():
    discovery = discover("statistics")
    entry = discovery.entry("statistics.median_grouped")
    obj = resolve_object(entry.qualname)
    specs, _ = docstring_scenarios(entry, obj, {id(obj): entry.qualname})
    assert specs
    assert all(try_scenario(spec)[0] is None for spec in specs)
