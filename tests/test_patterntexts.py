"""A document of what a package's own regular expressions match (``markup_pkg``): self-driven
capture feeds it to the package's text-taking driver, and its parser makes the tokens that its
renderer's ``render_X`` methods wait for, which a made-up text never shows. Also: a list where an
iterator is stepped becomes an iterator started again before each call."""

from __future__ import annotations

import pytest

from apiprof.engine.scenarios.drive import drive_capture
from apiprof.engine.scenarios.drivenspecs import driver_spec
from apiprof.engine.scenarios.patterntexts import pattern_refs, pattern_spec
from apiprof.engine.scenarios.spec import ScenarioSpec, compile_scenario
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario

WATCHED = ["markup_pkg.Renderer.render_bold", "markup_pkg.Renderer.render_code"]


@pytest.fixture(scope="module")
def markdown_driver() -> ScenarioSpec:
    spec, failure = find_synthesized_scenario("markup_pkg.markdown", (10,))
    assert spec is not None, failure
    return spec


def test_the_document_holds_a_match_of_each_pattern_the_package_holds():
    documents = dict(pattern_refs("markup_pkg"))
    assert set(documents) == {"patterns:markup_pkg#0", "patterns:markup_pkg#1"}
    blocks, line = documents["patterns:markup_pkg#0"], documents["patterns:markup_pkg#1"]
    assert "**" in line and "`" in line and "\n" not in line
    assert blocks.count("\n\n") == 1  # each on a paragraph of its own


def test_the_document_reaches_renderers_a_made_up_text_does_not(markdown_driver):
    found = drive_capture(WATCHED, [markdown_driver])
    assert markdown_driver.id not in found.reach  # made-up words: no token at all
    reached = {name for names in found.reach.values() for name in names}
    assert reached == set(WATCHED)
    trips = [ref for ref in found.reach if "<- patterns:markup_pkg#" in ref]
    assert trips and all(ref.startswith(f"roundtrip:{markdown_driver.id} <- ") for ref in trips)


def test_a_pattern_driver_is_rebuilt_from_its_name(markdown_driver):
    ref = f"roundtrip:{markdown_driver.id} <- patterns:markup_pkg#1"
    spec = driver_spec(ref, {markdown_driver.id: markdown_driver})
    assert spec is not None
    rendered = compile_scenario(spec, None)()
    assert "<b>" in rendered and "<code>" in rendered
    assert pattern_spec("patterns:not a name#1") is None
    assert pattern_spec("patterns:markup_pkg#x") is None


def test_a_list_where_an_iterator_is_stepped_becomes_one_started_again_for_each_call():
    spec, failure = find_synthesized_scenario("markup_pkg.tokens.read_paragraph", (10,))
    assert spec is not None, failure
    assert "lines of type iterator" in spec.description
    first = try_scenario(spec, calls=1)[1]
    failure, third = try_scenario(spec, calls=3)
    assert failure is None and third == first  # each call read the same lines


def test_a_driver_that_exits_on_what_it_is_fed_ends_only_itself(markdown_driver):
    """``convert_file`` fed a document as its file name exits (``sys.exit``): that round trip
    fails, and the drivers after it still run (an escaping exit ended the whole capture)."""
    exiting, failure = find_synthesized_scenario("markup_pkg.convert_file", (10,))
    assert exiting is not None, failure
    found = drive_capture(WATCHED, [exiting, markdown_driver])
    assert not any(ref.startswith(f"roundtrip:{exiting.id} <- patterns:") for ref in found.reach)
    reached = {name for names in found.reach.values() for name in names}
    assert reached == set(WATCHED)
