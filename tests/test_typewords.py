"""Standard-library C methods a package re-exports get typeshed's signatures, and a key the
receiver must hold is put in first; parameter names that carry a type word are typed by it."""

from __future__ import annotations

import collections
import typing

import pytest
from test_argument_search import found  # the search finds a scenario, and it runs

from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.signatures import signature_from_stubs, signature_of
from apiprof.engine.scenarios.synth import SOURCES
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.model.records import ScenarioSource


def test_a_c_method_without_a_signature_gets_the_stdlib_stubs_one_through_the_class_bases():
    update = collections.OrderedDict.update  # no signature on 3.11-3.13; MutableMapping's stub
    assert signature_of(update, frozenset()) is None
    assert list(signature_of(update).parameters)[:1] == ["m"] and signature_from_stubs(update)
    assert list(signature_of(collections.OrderedDict.pop).parameters) == ["key"]
    assert not signature_from_stubs(len)  # has its own


@pytest.mark.parametrize("method", ["clear", "copy", "items", "keys", "values", "update"])
def test_every_re_exported_ordered_dict_method_is_profiled(method):
    found(f"typewords_pkg.OrderedDict.{method}")  # 3.13 gives some a signature of their own


def test_a_method_with_no_signature_on_any_python_is_profiled_with_the_stubs_one():
    method = "update"
    spec = found(f"typewords_pkg.OrderedDict.{method}")
    assert f"<OrderedDict.{method} signature>: stubs" in spec.description
    no_stubs = tuple(source for source in SOURCES if source != "stubs")
    spec, failure = find_synthesized_scenario(
        f"typewords_pkg.OrderedDict.{method}", (10,), sources=no_stubs
    )
    assert spec is None and failure is not None and "no inspectable signature" in failure.reason


@pytest.mark.parametrize("method", ["pop", "move_to_end"])
def test_a_key_the_mapping_must_hold_is_put_in_before_each_call(method):
    spec = found(f"typewords_pkg.OrderedDict.{method}")
    assert "OrderedDict.__setitem__(" in spec.description
    assert spec.source is ScenarioSource.HEURISTICS


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("basestring", str),
        ("header_string", str),
        ("line_no", int),
        ("page_no", int),
        ("num_spaces", int),
        ("n_items", int),
        ("is_void", bool),
        ("hasChildren", bool),
        ("debug_flag", bool),
    ],
)
def test_type_words_in_parameter_names(name, expected):
    assert guess_from_name(name) is expected


def test_a_name_ending_in_type_is_a_class_or_a_kind_s_name():
    assert guess_from_name("nodeType") == type | str


def test_a_namespace_is_a_uri():
    (uri,) = typing.get_args(guess_from_name("namespace"))
    assert uri.startswith("http://")


@pytest.mark.parametrize(
    ("function", "typed"),
    [
        ("encode_basestring", "basestring"),
        ("empty_tag", "namespace"),  # rejects anything but a URI
        ("line_comment", "line_no"),  # formats it as an integer
        ("describe_unknown", "node_type"),  # a kind's name, not a class
    ],
)
def test_functions_typed_only_by_their_parameter_names_are_profiled(function, typed):
    spec = found(f"typewords_pkg.{function}")
    assert f"{typed}: heuristics" in spec.description


def test_a_stdlib_class_nothing_draws_is_made_by_the_factory_its_stubs_name():
    spec = found("typewords_pkg.Codec.encode")
    assert "<CodecInfo from lookup>: stubs" in spec.description
    no_stubs = tuple(source for source in SOURCES if source != "stubs")
    spec, failure = find_synthesized_scenario("typewords_pkg.Codec.encode", (10,), sources=no_stubs)
    assert spec is None and "CodecInfo" in failure.reason


def test_a_compiled_class_is_found_in_the_stub_under_the_name_the_package_exports_it_as():
    spec = found("typewords_pkg.make_reader")  # _json.Scanner; the stub: make_reader(context)
    assert "<Scanner signature>: stubs" in spec.description and "context: stubs" in spec.description


def test_a_time_zone_method_gets_an_aware_datetime_first_then_a_naive_one():
    from apiprof.engine.scenarios.synth import synthesize

    first = synthesize("typewords_pkg.FixedZone.utcoffset", None)
    assert first.args[0].tzinfo is first.target.__self__  # in the receiver's own zone
    spec = found("typewords_pkg.FixedZone.localize")  # refuses an aware one
    assert "variant 1" in spec.description


def test_a_method_calling_a_hook_only_subclasses_define_runs_on_a_subclass():
    from typewords_pkg import lazy

    from apiprof.engine.scenarios.hooks import missing_hooks

    assert missing_hooks(lazy.LazyTable, "keys") == ("_fill",)
    assert missing_hooks(lazy.Colours, "keys") == ()
    spec = found("typewords_pkg.lazy.LazyTable.keys")
    assert "<LazyTable instance>: factories" in spec.description
    no_subclasses = tuple(source for source in SOURCES if source != "subclasses")
    found_without = find_synthesized_scenario(
        "typewords_pkg.lazy.LazyTable.keys", (10,), sources=no_subclasses
    )
    assert found_without[0] is None
