"""Errors that say what they accept: quoted choices (single characters too, with the refused
value after them), items that must not repeat, the buffer length ``struct`` unpacks and a URI's scheme."""

from __future__ import annotations

import random
import struct

from test_argument_search import found

from apiprof.engine.scenarios.buffers import buffer_wanted, fixed_buffer
from apiprof.engine.scenarios.choices import listed_choices, refused_choice
from apiprof.engine.scenarios.distinct import repeated_items
from apiprof.engine.scenarios.schemes import SAMPLES, scheme_wanted
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.model.records import ScenarioSource


def test_quoted_choices_are_read_as_written_and_the_refused_value_is_no_choice():
    message = "enclosing must be either '{' or '\"', not 'lorem ipsum'"
    assert listed_choices(message) == ["{", '"']
    assert refused_choice(message, {"enclosing": "lorem ipsum"}) == ("enclosing", "{")
    assert listed_choices('must be one of ["a", "b"] but got "c"') == ["a", "b"]
    assert listed_choices("unknown code xy; available: ja, ru") == ["ja", "ru"]


def test_a_receiver_refused_for_a_listed_choice_is_built_with_the_first():
    spec = found("refused_pkg.Encloser.enclose")
    assert spec.source is ScenarioSource.REPAIRED and "self.enclosing '{'" in spec.description


def test_items_that_must_not_repeat_are_read_off_the_argument_that_repeats_them():
    message = "Order list must not contain duplicates. The following keys are duplicated: a"
    assert repeated_items(message, {"order": ("a", "b", "a")}) == ("order", "distinct texts")
    assert repeated_items(message, {"order": ("a", "b")}) is None  # no argument repeats
    assert repeated_items("x must be unique", {"x": [1, 2, 1]}) == ("x", "distinct numbers")
    assert repeated_items("bad value", {"x": [1, 1]}) is None


def test_a_list_refused_for_repeating_items_gets_distinct_ones():
    spec = found("refused_pkg.FieldOrder")
    assert "order of type distinct texts" in spec.description
    method = found("refused_pkg.FieldOrder.sort")
    assert "self.order of type distinct texts" in method.description
    assert "names of type distinct texts" in found("refused_pkg.rank").description


def test_without_the_repair_the_repeating_words_are_refused():
    spec, failure = find_synthesized_scenario(
        "refused_pkg.FieldOrder", (10,), sources=("heuristics",)
    )
    assert spec is None and "duplicates" in failure.reason


def test_bytes_struct_refused_get_the_length_it_asked_for():
    spec, failure = find_synthesized_scenario("refused_pkg.read_header", (10, 100))
    assert spec is not None, failure
    assert "data of type bytes of length 8" in spec.description
    assert spec.sizes == ()  # a fixed length: no size axis
    assert buffer_wanted(struct.error("unpack requires a buffer of 8 bytes"), {"n": 3}) is None
    assert fixed_buffer("bytes of length 4", random.Random(0)) is not None
    assert len(fixed_buffer("bytes of length 4", random.Random(0))) == 4
    assert fixed_buffer("distinct texts", random.Random(0)) is None


def test_a_uri_of_the_scheme_the_error_names_replaces_the_web_address():
    spec = found("refused_pkg.mail_address")
    assert "url 'mailto:" in spec.description and spec.source is ScenarioSource.REPAIRED
    assert scheme_wanted("not a data URI", {"uri": "https://example.com"}) == (
        "uri",
        SAMPLES["data"],
    )
    assert scheme_wanted("not a valid URI", {"uri": "x"}) is None  # names no scheme
    assert scheme_wanted("invalid gopher URL", {"uri": "x"}) is None  # one it does not know
