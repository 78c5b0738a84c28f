"""Argument patterns a new set of untyped packages brought, each on ``widened_pkg`` with the
rule on and off: test modules shipped inside a package are not its API; a function a private
module defines is typed by the package's ``__init__.pyi``; a subscripted declared return names
a factory; a persistent collection is given the call's own argument through the copy its adder
returns; a class whose constructor takes its inner representation is made by the function
named after it; a renderer of token dicts takes them from the package's own document parser
(ranked before the steps of a parse); a base class whose methods only raise
``NotImplementedError`` is replaced by a subclass that implements them; ``*args`` handed to
``super()`` are what the base's method requires; a builtin that refused an argument's parts
(``"".join(numbers)``, ``x.upper()`` on a list, ``os.scandir`` of a missing path) says what
they must be."""

from __future__ import annotations

import decimal
import re
import typing

import pytest
from sourcehelp import made_only_by
from test_argument_search import found  # the search finds a scenario, and it runs

from apiprof.engine.discovery.discover import discover, is_private_module
from apiprof.engine.scenarios import producers, warmup
from apiprof.engine.scenarios.abstractmembers import abstract_method_failure
from apiprof.engine.scenarios.building import SOURCES
from apiprof.engine.scenarios.builtinrefusals import TEXTS, refused_part
from apiprof.engine.scenarios.collect import gather_scenarios
from apiprof.engine.scenarios.factories import factories_for
from apiprof.engine.scenarios.forwarding import forwarded_callee
from apiprof.engine.scenarios.instances import declared_returns
from apiprof.engine.scenarios.lessons import learn, may_teach
from apiprof.engine.scenarios.pathwants import path_wanted
from apiprof.engine.scenarios.stubs import stub_signature
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.unimplemented import left_to_subclasses, raises_only
from apiprof.engine.scenarios.wants import Want
from apiprof.model.records import Coverage, ScenarioSource

WITHOUT = {source: tuple(s for s in SOURCES if s != source) for source in SOURCES}


def test_test_modules_shipped_inside_a_package_are_not_its_api():
    entries = {entry.qualname for entry in discover("widened_pkg").entry_points}
    assert "widened_pkg.Vector.remove" in entries
    assert not any("test" in name for name in entries)
    assert is_private_module("pkg.test_keys", "pkg") and is_private_module("pkg.keys_test", "pkg")
    assert not is_private_module("pkg.testing", "pkg")  # a public helper module keeps its name
    assert not is_private_module("pkg.contest", "pkg")


def test_a_function_of_a_private_module_is_typed_by_the_package_stub_that_re_exports_it():
    from widened_pkg import _impl

    stub = stub_signature(_impl.scale)  # defined in widened_pkg._impl, stubbed in __init__.pyi
    assert stub is not None and stub.origin == "widened_pkg"
    assert stub.parameters["amount"] == [decimal.Decimal]
    description = made_only_by(
        "widened_pkg.scale", ScenarioSource.STUBS, "", SOURCES, WITHOUT["stubs"]
    )
    assert "amount: stubs" in description


def test_a_declared_return_of_a_subscripted_generic_class_names_a_factory():
    from widened_pkg.tables import Table, table

    assert declared_returns(table) == [Table[str]]
    assert table in factories_for(Table, declared_returns)


@pytest.mark.parametrize("method", ["remove", "index"])
def test_a_persistent_receiver_is_given_the_argument_through_the_copy_its_adder_returns(method):
    spec = found(f"widened_pkg.Vector.{method}")
    assert "Vector.append(<the call's own arguments>)" in spec.description


def test_a_receiver_fed_in_place_or_returned_for_chaining_stays_the_one_called():
    from widened_pkg import Vector

    vector = Vector()
    assert warmup.persistent_update(vector, vector.append(1))
    assert not warmup.persistent_update(vector, vector)  # `return self`
    assert not warmup.persistent_update(vector, None)  # fed in place
    assert not warmup.persistent_update(vector, 1)


def test_without_the_returned_copy_the_taker_finds_nothing(monkeypatch):
    monkeypatch.setattr(warmup, "persistent_update", lambda receiver, fed: False)
    spec, failure = find_synthesized_scenario("widened_pkg.Vector.remove", (10,))
    assert spec is None and failure is not None and "not in tuple" in failure.reason


def test_the_package_own_parser_that_reads_text_ranks_before_the_steps_of_a_parse():
    ranked = producers.producers("widened_pkg.render.Renderer.paragraph")
    assert ranked[0] == "widened_pkg.document.Document.parse"  # exported, reads text
    assert "widened_pkg.steps.parse_word" not in ranked  # a step in a submodule


def test_the_package_own_parser_keeps_its_turn_among_many_related_names(monkeypatch):
    monkeypatch.setattr(producers, "MAX_PRODUCERS", 2)
    ranked = producers.producers("widened_pkg.render.Renderer.emphasis")
    assert "widened_pkg.document.Document.parse" in ranked[:2]  # within the producers called
    assert ranked.index("widened_pkg.steps.emphasis_end") >= 2  # related: next after them


def test_a_renderer_takes_the_token_its_document_parser_makes():
    spec = found("widened_pkg.Renderer.paragraph")
    assert spec.source is ScenarioSource.RESULTS
    assert "token: the dict that Document.parse() returns" in spec.description


def test_ranked_by_depth_and_name_alone_the_steps_lead_and_the_renderer_stays_rejected(
    monkeypatch,
):
    monkeypatch.setattr(
        producers, "_parser_rank", lambda name, callable_, in_class, package: name.count(".")
    )
    spec, failure = find_synthesized_scenario("widened_pkg.Renderer.paragraph", (10,))
    assert spec is None and failure is not None
    assert "made no token a dict with key 'children'" in failure.reason


def _error_of(call: typing.Callable[[], object]) -> BaseException:
    try:
        call()
    except Exception as error:
        return error
    raise AssertionError("the call did not fail")


def test_a_join_of_numbers_wants_texts_in_the_list_or_in_each_list_of_args():
    words = [3, 4]
    error = _error_of(lambda: " ".join(words))
    assert may_teach(f"the call raised TypeError: {error}")
    assert refused_part(error, {"words": words}) == ("words", False, TEXTS)
    sequences = ([1, 2], [3])
    error = _error_of(lambda: [" ".join(s) for s in sequences])
    lesson = learn(error, {"sequences": sequences})
    assert lesson is not None and lesson.want is Want.TYPE
    assert (lesson.parameter, lesson.element, lesson.names) == ("sequences", True, (TEXTS,))


def test_len_of_a_number_wants_a_sized_value():
    def longest(*items):
        return max(len(item) for item in items)

    error = _error_of(lambda: longest(1, 2))
    assert refused_part(error, {"items": (1, 2)}) == ("items", True, "list")
    assert refused_part(ValueError("other"), {"items": (1, 2)}) is None


def test_a_joining_function_is_profiled_through_the_lesson_and_not_without_the_repair():
    description = made_only_by(
        "widened_pkg.steps.join_words", ScenarioSource.REPAIRED, "", SOURCES, WITHOUT["repair"]
    )
    assert re.search(r"words of type texts|elements of words", description)


def test_a_text_method_asked_of_a_list_gets_a_text():
    description = made_only_by(
        "widened_pkg.steps.shout_all", ScenarioSource.REPAIRED, "", SOURCES, WITHOUT["repair"]
    )
    assert "attribute 'upper()'" in description


def test_a_receiver_whose_constructor_takes_its_inner_representation_is_made_by_its_named_function():
    spec = found("widened_pkg.tables.KeyIndex.lookup")
    assert "<KeyIndex instance>: factories" in spec.description


def test_without_the_named_function_that_receiver_stays_rejected(monkeypatch):
    from apiprof.engine.scenarios import instances

    monkeypatch.setattr(instances, "named_factories", lambda cls: [])
    spec, failure = find_synthesized_scenario(  # the results search takes what it returns too
        "widened_pkg.tables.KeyIndex.lookup", (10,), sources=WITHOUT["results"]
    )
    assert spec is None and failure is not None and "corrupt index" in failure.reason


def test_an_argument_of_a_base_class_that_leaves_its_methods_to_subclasses_is_a_subclass():
    from widened_pkg.matching import BaseRule

    assert left_to_subclasses(BaseRule) == ("matches",)
    spec = found("widened_pkg.matching.first_match")
    assert "<BaseRule instance>: factories" in spec.description


def test_a_method_calling_what_its_class_leaves_to_subclasses_is_called_on_one():
    spec = found("widened_pkg.matching.BaseRule.match_all")
    assert "<BaseRule instance>: factories" in spec.description


@pytest.fixture
def without_unimplemented(monkeypatch):
    """Methods that raise NotImplementedError count as implemented (caches cleared around)."""
    from apiprof.engine.scenarios import hooks, instances

    monkeypatch.setattr(instances, "left_to_subclasses", lambda cls: ())
    monkeypatch.setattr(hooks, "raises_only", lambda method: False)
    hooks._missing.cache_clear()
    yield
    hooks._missing.cache_clear()


@pytest.mark.parametrize(
    "qualname", ["widened_pkg.matching.first_match", "widened_pkg.matching.BaseRule.match_all"]
)
def test_without_that_rule_the_base_class_is_built_and_refuses(without_unimplemented, qualname):
    spec, failure = find_synthesized_scenario(qualname, (10,), sources=WITHOUT["results"])
    assert spec is None and failure is not None
    assert "must override matches()" in failure.reason


def test_only_a_body_that_just_raises_not_implemented_is_left_to_subclasses():
    from widened_pkg.matching import BaseRule, PrefixRule

    assert raises_only(BaseRule.matches) and not raises_only(PrefixRule.matches)
    assert not raises_only(BaseRule.match_all) and not raises_only(len)


def test_star_args_passed_to_the_base_class_are_what_its_method_requires():
    from widened_pkg.matching import BaseRule, LegacyRule, PrefixRule

    assert forwarded_callee(LegacyRule, "args", {}) == (PrefixRule.__init__, 1)
    assert forwarded_callee(LegacyRule.describe, "args", {}) == (BaseRule.describe.__func__, 1)
    spec = found("widened_pkg.matching.LegacyRule")
    assert "args[prefix]: heuristics" in spec.description


def test_a_missing_directory_is_made_for_the_argument_that_named_it():
    description = made_only_by(
        "widened_pkg.matching.walk_names",
        ScenarioSource.REPAIRED,
        "",
        SOURCES,
        WITHOUT["repair"],
    )
    assert "root the path of a directory that exists" in description


def test_a_path_lesson_matches_the_argument_however_the_call_spelled_the_path(tmp_path):
    missing = tmp_path / "lorem"
    error = FileNotFoundError(2, "No such file or directory", f"{missing}/")
    assert path_wanted(error, {"root": str(missing)}) == ("root", False, Want.DIRECTORY)
    error = FileNotFoundError(2, "No such file or directory", str(missing))
    assert path_wanted(error, {"paths": [str(missing)]}) == ("paths", True, Want.FILE)
    assert path_wanted(error, {"root": "elsewhere"}) is None


def test_an_abstract_method_only_documenting_an_interface_nothing_implements_is_reported():
    from widened_pkg.matching import Matcher, Sized

    failure = abstract_method_failure(Sized, "size")
    assert failure is not None and failure.kind is Coverage.SKIPPED
    assert "abstract method" in failure.reason and "no Python subclass" in failure.reason
    gathered = gather_scenarios(discover("widened_pkg"), (), synthesize=False)
    assert gathered.failures["widened_pkg.matching.Sized.size"] == [failure]
    assert abstract_method_failure(Matcher, "match") is None  # ExactMatcher implements it
    assert abstract_method_failure(Matcher, "count") is None  # a body subclasses call


def test_a_method_of_an_enum_is_called_on_one_of_its_members(monkeypatch):
    from apiprof.engine.scenarios import receivers

    spec = found("widened_pkg.matching.Quoting.quote")
    assert "Quoting(" not in spec.setup  # never looked up by a made-up value
    monkeypatch.setattr(receivers, "enum_member", lambda owner, context: None)
    spec, failure = find_synthesized_scenario("widened_pkg.matching.Quoting.quote", (10,))
    assert spec is None and failure is not None and "constructing Quoting" in failure.reason
