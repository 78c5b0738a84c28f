"""The argument search on untyped code: single-parameter alternatives after the variants, the
package's own examples and round trips, and types read from how a parameter is used."""

from __future__ import annotations

import re
import socket
import types
import typing

import pytest

from apiprof.engine.scenarios import produced, resources, synth, synthesized
from apiprof.engine.scenarios.building import BuildContext
from apiprof.engine.scenarios.examples import example_calls, example_values
from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.stubs import stub_signature
from apiprof.engine.scenarios.synthesized import VariantSearch, find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.engine.scenarios.usage import infer_from_usage, unconstrained, usage_of
from apiprof.model.records import ScenarioSource


def found(qualname: str, **options):
    spec, failure = find_synthesized_scenario(qualname, (10,), **options)
    assert spec is not None, failure
    assert try_scenario(spec)[0] is None
    return spec


def test_a_combination_no_single_variant_gives_is_found_by_pinning_one_parameter():
    spec = found("combos_pkg.spell")
    assert "code: alternative 1" in spec.description  # a word, with the first count (>= 5)
    assert "pins={'code': 1}" in spec.setup  # the scenario rebuilds exactly that


def test_without_pinned_trials_that_combination_is_lost(monkeypatch):
    monkeypatch.setattr(synthesized, "MAX_PINNED_TRIALS", 0)
    spec, failure = find_synthesized_scenario("combos_pkg.spell", (10,))
    assert spec is None and failure is not None


def test_pinned_trials_go_round_the_parameters_and_skip_repeats():
    search = VariantSearch(choices=1, alternatives={"a": 3, "b": 2})
    order = [pins for _, pins in search]
    assert order == [{}, {"a": 1}, {"b": 1}, {"a": 2}]  # every second alternative first


def test_the_package_round_trip_of_its_own_class_makes_the_input():
    spec = found("combos_pkg.Stamp.from_bytes")
    assert spec.source is ScenarioSource.FACTORIES  # Stamp(...).to_bytes()


def test_an_inverse_producer_retries_its_own_flavours(monkeypatch):
    def alternative(spec):
        return int(re.search(r"data: alternative (\d+)", spec.description).group(1))

    spec = found("combos_pkg.decode")  # encode refuses prose; a word encodes
    assert "data: factories" in spec.description
    monkeypatch.setattr(produced, "PRODUCER_TRIES", 1)  # only a later pin reaches the word
    assert alternative(found("combos_pkg.decode")) > alternative(spec)


def test_a_parameter_unpacked_in_a_loop_is_a_list_of_pairs():
    usage = usage_of(__import__("combos_pkg").upper_values, "stream")
    strong, _ = infer_from_usage(usage, None, {})
    assert strong[0] == list[tuple[str, str]]  # `text.upper()`: the second part is text
    spec = found("combos_pkg.upper_values")
    assert spec.inputs.startswith("combos_pkg.upper_values([(")


def test_parameters_nothing_asks_anything_of_take_any_value():
    found("combos_pkg.Carrier")
    found("combos_pkg.on_match")
    assert not unconstrained(usage_of(__import__("discover_pkg").needs_handle, "handle"))


def test_a_class_checking_its_fields_in_new_is_typed_from_there():
    spec = found("combos_pkg.Entry")
    assert spec.inputs.startswith("combos_pkg.Entry(") and "b'" in spec.inputs


def test_an_annotated_socket_is_a_connected_one():
    found("combos_pkg.peer_of")


def test_a_compiled_classmethod_is_typed_by_the_stub_of_its_class():
    from combos_pkg.table import Table

    compiled = types.SimpleNamespace(  # what mypyc makes of it: no module, bound to the class
        __module__=None, __qualname__="Table.from_counts", __name__="from_counts", __self__=Table
    )
    stub = stub_signature(compiled)
    assert stub is not None and stub.parameters["counts"] == [dict[int, int]]


def test_literal_calls_in_the_package_text_are_examples():
    from combos_pkg import Rule

    calls = example_calls(Rule)
    assert [call.args for call in calls] == [("colour=blue",), ("size=10",)]
    assert example_values(Rule, "spec").values == ("colour=blue", "size=10")
    spec = found("combos_pkg.Rule")
    assert spec.source is ScenarioSource.EXAMPLES and "'colour=blue'" in spec.inputs
    method = found("combos_pkg.Rule.applies_to")  # its receiver built from an example
    assert "<Rule instance>: examples" in method.description


@pytest.mark.parametrize("qualname", ["combos_pkg.Rule", "combos_pkg.Rule.applies_to"])
def test_examples_can_be_switched_off(qualname):
    # the rule's pattern (source patterns) would give it text it accepts as well
    sources = tuple(s for s in synthesized.SOURCES if s not in ("examples", "patterns"))
    spec, failure = find_synthesized_scenario(qualname, (10,), sources=sources)
    assert spec is None and failure is not None


def test_a_method_taking_out_its_argument_gets_it_put_in_first():
    spec = found("combos_pkg.Shelf.remove")
    assert spec.inputs.endswith("after Shelf.add(<the call's own arguments>)")
    assert "after Shelf.add('" in found("combos_pkg.Shelf.pop").inputs  # no argument: a word
    spec = found("combos_pkg.Cache.pop")  # a mapping: cache[key] = key first
    assert spec.inputs.endswith("after Cache.__setitem__(<the call's own arguments>)")


def test_a_context_manager_is_an_in_memory_file_each_call_reopens():
    found("combos_pkg.read_all")


def test_names_hold_for_list_items_and_suffixed_pairs():
    assert "['utf-8', " in found("combos_pkg.canonical").inputs  # items of `encodings`
    assert found("combos_pkg.same_codec").inputs == "combos_pkg.same_codec('utf-8', 'utf-8')"


def test_a_name_ending_in_cls_is_a_class():
    assert guess_from_name("group_cls") is type and guess_from_name("node_class") is type


def test_the_receiver_is_pinned_like_a_parameter():
    spec = found("combos_pkg.Lexicon.count_known")  # factory-made, with prose: no variant
    assert "self: alternative 2" in spec.description


def test_a_class_with_an_opener_gets_it_called_first_and_the_opener_a_new_receiver():
    assert found("combos_pkg.Channel.close").inputs.endswith("after Channel.open()")
    spec = found("combos_pkg.Channel.open")  # a second open on one receiver is refused
    assert spec.inputs.endswith("after Channel.__init__ again")
    assert "the receiver is made ready by" in spec.description


def test_a_class_forwarding_its_args_gets_what_the_callee_of_its_constructor_needs():
    spec = found("combos_pkg.ParseFailure")
    assert "args[message]" in spec.description and "args[position]" in spec.description


def test_args_forwarded_to_a_function_imported_where_it_is_used_get_what_it_requires():
    spec = found("combos_pkg.spelled_later")
    assert "args[code]" in spec.description and "args[times]" in spec.description


def test_args_forwarded_to_a_builtin_get_what_its_stub_requires():
    spec = found("combos_pkg.numbered")
    assert "args[stop]" in spec.description  # range(stop), the overload asking least


def test_literals_an_overload_narrows_to_are_what_the_constructor_gets():
    """``Token.__new__`` says ``kind: str``; its first overload, ``Literal["WORD", ...]``."""
    spec = found("combos_pkg.Token.word")
    assert try_scenario(spec)[0] is None


def test_a_loader_bound_to_a_subclass_reads_what_that_subclass_saves():
    """``PublicKey.load_text``, defined on ``Key``: ``save_text`` of a ``PublicKey``."""
    spec = found("combos_pkg.PublicKey.load_text")
    assert "text: factories" in spec.description
    assert try_scenario(spec)[0] is None


def test_a_protocol_class_is_skipped_as_abstract_not_called():
    from apiprof.engine.discovery.discover import discover
    from apiprof.engine.scenarios.collect import gather_scenarios
    from apiprof.model.records import Coverage

    missing = gather_scenarios(discover("combos_pkg"), sizes=(10,)).unscenarioed()
    assert missing["combos_pkg.Matcher"].kind is Coverage.SKIPPED
    assert "typing.Protocol" in missing["combos_pkg.Matcher"].reason


def test_a_network_name_is_a_cidr_block():
    assert guess_from_name("net") == typing.Literal["127.0.0.0/24"]


def test_an_inner_context_keeps_feeding_and_the_warmup():
    context = BuildContext("pkg.f", 10, 0, 0, feeding=True)
    context.warmup = print  # any warm-up
    inner = context.inner(3)
    assert inner.feeding and inner.warmup is print and inner.variant == 3


def test_a_synthesised_socket_does_not_wait_for_ever():
    spec = find_synthesized_scenario("combos_pkg.peer_of", (10,))[0]
    assert spec is not None
    _, args, _ = synth.synthesize_call("combos_pkg.peer_of", None)
    assert args[0].gettimeout() == resources.SOCKET_TIMEOUT
    assert args[0].family == socket.AF_INET  # loopback TCP: socket options work on it


def test_a_parameter_unpacked_into_names_is_a_tuple_typed_by_their_use():
    assert found("combos_pkg.version_text").inputs == "combos_pkg.version_text((2, 2))"


def test_an_array_holds_small_ints_that_index_a_sized_buffer():
    assert "array('i', [" in found("combos_pkg.weighted").inputs


def test_a_compiled_stdlib_class_is_built_with_its_stub_signature():
    import xml.etree.ElementTree as ElementTree

    from apiprof.engine.scenarios.synth import SOURCES

    # the C class names a Python module, so only its lack of Python methods shows it compiled
    assert stub_signature(ElementTree.Element).signature is not None
    spec = found("stdlibargs_pkg.count_children")
    assert "stubs" in spec.description
    without = tuple(source for source in SOURCES if source != "stubs")
    spec, failure = find_synthesized_scenario(
        "stdlibargs_pkg.count_children", (10,), sources=without
    )
    assert spec is None and "Element" in failure.reason
