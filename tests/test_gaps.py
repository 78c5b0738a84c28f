"""Argument synthesis on untyped code shaped like the misses of real packages (fixture
``gaps_pkg``): every mechanism added for them profiles its case and is credited."""

from __future__ import annotations

import sys

import pytest

from apiprof.engine.discovery.discover import discover
from apiprof.engine.scenarios import observed
from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.collect import gather_scenarios
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import Coverage, ScenarioSource


@pytest.fixture(scope="module")
def gathered():
    return gather_scenarios(discover("gaps_pkg"), sizes=(10, 100))


def spec_for(gathered, qualname):
    specs = [spec for spec in gathered.specs if spec.qualname == qualname]
    assert specs, gathered.unscenarioed().get(qualname)
    return specs[0]


def test_every_entry_point_of_the_fixture_is_profiled_or_says_why(gathered):
    missing = gathered.unscenarioed()
    footer = missing.pop("gaps_pkg.Unpacker.read_footer")  # says what feeding it first did
    assert footer.kind is Coverage.NO_ARGUMENTS and footer.reason.startswith(
        "synthesised arguments were rejected: the call raised OutOfData"
    )
    assert "; with Unpacker.feed(b'" in footer.reason and "raised ValueError" in footer.reason
    document = missing.pop("gaps_pkg.documents.Document")  # its constructor itself refuses
    assert "documents are made by Builder.build" in document.reason
    assert set(missing) == {"gaps_pkg.nodes.Node", "gaps_pkg.nodes.Expr"}
    for failure in missing.values():  # abstract by convention: said so, not "no arguments"
        assert failure.kind is Coverage.SKIPPED
        assert failure.reason.startswith(
            "abstract class: its constructor refuses (raised TypeError"
        )
    assert (
        "concrete subclasses (ContextRef, Const, Not) are profiled"
        in missing["gaps_pkg.nodes.Expr"].reason
    )
    for spec in gathered.specs:
        assert try_scenario(spec)[0] is None, spec.id


def test_a_reader_is_fed_by_its_sibling_with_what_the_inverse_class_makes(gathered):
    spec = spec_for(gathered, "gaps_pkg.Unpacker.unpack")
    assert spec.source is ScenarioSource.FACTORIES
    assert "Unpacker.feed(b'" in spec.inputs and "not measured" in spec.description
    assert spec.call.startswith("target, args = warmup(target, args)\n")
    # the method that works on a fresh receiver is measured on a fresh one
    plain = spec_for(gathered, "gaps_pkg.Unpacker.buffered")
    assert "warmup" not in plain.call
    # repeated calls each find a value: the receiver is fed again before each
    failure, result = try_scenario(spec)
    assert failure is None and result == try_scenario(spec)[1]


def test_a_receiver_is_renewed_before_each_feed_so_every_call_starts_alike(gathered):
    spec = spec_for(gathered, "gaps_pkg.Unpacker.read_header")  # consumes only the header
    assert spec.call.startswith("target, args = warmup(target, args)\n")
    first, second = try_scenario(spec), try_scenario(spec)
    assert first[0] is None and second[0] is None and first[1] == second[1]


def test_feeding_is_part_of_the_subclasses_source():
    spec, failure = find_synthesized_scenario(
        "gaps_pkg.Unpacker.unpack", (10,), sources=("heuristics",)
    )
    assert spec is None and "OutOfData" in failure.reason


def test_nodes_get_the_fields_their_class_lists_typed_by_its_annotations(gathered):
    spec = spec_for(gathered, "gaps_pkg.nodes.Loop")
    for field in ("target", "iter", "body"):  # typed by the class's annotations
        assert f"Loop.{field}: synthesized" in spec.description
    loop = try_scenario(spec)[1]
    assert isinstance(loop.target, sys.modules["gaps_pkg.nodes"].Expr)
    assert isinstance(loop.body, list) and loop.body
    # a field only its name describes is a guess
    call = spec_for(gathered, "gaps_pkg.nodes.Call")
    assert "Call.args: heuristics" in call.description and call.source is ScenarioSource.HEURISTICS
    # the base class's methods run on a concrete node that has its fields
    count = spec_for(gathered, "gaps_pkg.nodes.Not.count_nodes")  # its canonical name
    assert try_scenario(count)[1] >= 1


def test_credits_of_a_candidate_that_failed_are_withdrawn():
    context = BuildContext("gaps_pkg.nodes.Loop", 10, 0, 0)
    context.credit("kept", ScenarioSource.STUBS)
    with pytest.raises(CannotSynthesize), context.attempt():
        context.credit("tried", ScenarioSource.HEURISTICS)
        raise CannotSynthesize("this candidate does not build")
    with context.attempt():
        context.credit("used", ScenarioSource.FACTORIES)
    assert context.used == {"kept": ScenarioSource.STUBS, "used": ScenarioSource.FACTORIES}


def test_without_heuristics_a_field_only_its_name_describes_is_anything():
    spec, failure = find_synthesized_scenario("gaps_pkg.nodes.Call", (10,), sources=("subclasses",))
    assert failure is None and "Call.args: synthesized" in spec.description


def test_forwarded_star_args_get_what_the_method_they_reach_requires(gathered):
    spec = spec_for(gathered, "gaps_pkg.compat.check_equal")
    assert "args[first]: heuristics" in spec.description
    assert "args[second]: heuristics" in spec.description
    assert try_scenario(spec)[0] is None
    # a callee only known at run time (a callable argument) gets no made-up arguments
    assert try_scenario(spec_for(gathered, "gaps_pkg.compat.call_later"))[0] is None
    from apiprof.engine.scenarios.synth import synthesize

    plain = synthesize("gaps_pkg.compat.check_equal", 10, sources=("subclasses",))
    assert len(plain.args) == 1  # without heuristics the first variant forwards nothing


def test_a_time_zone_method_gets_a_datetime_in_that_zone(gathered):
    spec = spec_for(gathered, "gaps_pkg.zones.FixedZone.fromutc")
    assert "tzinfo=<gaps_pkg.z" in spec.inputs
    assert try_scenario(spec)[0] is None
    aware = spec_for(gathered, "gaps_pkg.zones.is_ambiguous")  # naive first, then aware
    assert "variant 1" in aware.description and "tzinfo=datetime." in aware.inputs


@pytest.mark.parametrize(
    "qualname",
    [
        "gaps_pkg.registry.Loader.get_source",  # `name in self.mapping`
        "gaps_pkg.registry.Loader.load",  # passed on to self.get_source
        "gaps_pkg.registry.handle",  # HANDLERS[kind]
        "gaps_pkg.registry.Environment.call_filter",  # a local assigned from self.filters
    ],
)
def test_a_name_looked_up_in_a_registry_is_one_of_its_keys(gathered, qualname):
    spec = spec_for(gathered, qualname)
    assert ": heuristics" in spec.description
    assert try_scenario(spec)[0] is None
    assert find_synthesized_scenario(qualname, (10,), sources=("subclasses",))[0] is None


def test_values_the_package_returns_serve_where_none_can_be_built(gathered):
    page = spec_for(gathered, "gaps_pkg.documents.Page.words")
    assert page.source is ScenarioSource.OBSERVED
    assert "from gaps_pkg.documents.Builder.build>: observed" in page.description
    stream = spec_for(gathered, "gaps_pkg.documents.Stream.first")  # an iterator, made afresh
    assert "from gaps_pkg.documents.Source.chunks>: observed" in stream.description
    for spec in (page, stream):
        assert try_scenario(spec)[0] is None
    off = find_synthesized_scenario(
        "gaps_pkg.documents.Page", (10,), sources=("subclasses", "heuristics")
    )[1]
    assert off is not None and "documents are made by Builder.build" in off.reason
    on = find_synthesized_scenario("gaps_pkg.documents.Page", (10,), sources=("observed",))
    assert on[0] is not None and on[0].source is ScenarioSource.OBSERVED


def test_a_producer_that_needs_the_class_being_built_is_a_cycle_not_a_recursion():
    """A class whose only producer is its own method (a date's ``replace``) would build a
    receiver for the producer, which asks for the producer again, without end."""
    import datetime

    class Day(datetime.date):
        def following(self) -> Day:
            return self

    context = BuildContext("gaps_pkg.Day.following", 10, 0, 0)
    context.building.append(Day)
    with pytest.raises(CannotSynthesize, match="being built further up"):
        observed.Producer(Day.following, Day).call(context)
    assert context.depth == 0


def test_a_node_holding_its_own_kind_nests_once(gathered):
    spec = spec_for(gathered, "gaps_pkg.nodes.Branch.depth")
    failure, depth = try_scenario(spec)
    assert failure is None and depth == 1  # the receiver is a leaf: no branches inside
    built = spec_for(gathered, "gaps_pkg.nodes.Branch")  # the entry point itself: one level
    assert "elif_" in built.description and try_scenario(built)[0] is None


def test_string_field_annotations_resolve_in_their_module_when_the_rest_cannot(gathered):
    spec = spec_for(gathered, "gaps_pkg.nodes.Assign.target_kind")
    assert "Assign.target: synthesized" in spec.description  # its annotation, not its name
    failure, kind = try_scenario(spec)
    assert failure is None and kind != "list"  # an Expr, as annotated


def test_a_child_asked_what_its_holder_is_asked_implements_it(gathered):
    spec = spec_for(gathered, "gaps_pkg.nodes.Not.evaluate")
    failure, value = try_scenario(spec)
    assert failure is None and isinstance(value, bool)


def test_a_proxy_wrapping_a_c_method_is_called_by_its_own_signature(gathered):
    failure, items = try_scenario(spec_for(gathered, "gaps_pkg.compat.Bag.items"))
    assert failure is None and list(items) == [("a", 1)]


def test_a_receiver_with_a_compiled_init_is_replaced_by_a_new_one_not_renewed():
    """Running a C ``__init__`` again may leak what the previous run allocated (msgpack 1.1's
    Unpacker leaks its buffer), and a scenario renews its receiver thousands of times: a new
    receiver is built from the same arguments, and the call made on it."""
    from collections import deque

    from apiprof.engine.scenarios.building import BuildContext
    from apiprof.engine.scenarios.warmup import Warmup, renewal

    class Python:
        def __init__(self, size: int) -> None:
            self.size = size

    compiled, python = deque([1, 2]), Python(3)
    context = BuildContext("q", 10, seed=0, variant=1)
    context.made = {id(compiled): (compiled, ([1, 2],), {}), id(python): (python, (3,), {})}
    renew, rebuild = renewal(compiled, context)
    assert renew is None and rebuild is not None
    # as the scenario calls it: each call finds a receiver as built and fed, never a used one
    bound = Warmup("append", 9, "deque.append", compiled, renew, rebuild)
    unbound = Warmup("append", 9, "deque.append", compiled, renew, rebuild)
    target, args = compiled.popleft, ()
    method, given = deque.popleft, (compiled,)
    for _ in range(3):
        target, args = bound(target, args)
        assert target is not None and target.__self__ is not compiled
        assert target(*args) == 1 and list(target.__self__) == [2, 9]
        method, given = unbound(method, given)
        assert given[0] is not compiled and list(given[0]) == [1, 2, 9]
    renew, rebuild = renewal(python, context)
    assert renew is not None and rebuild is None
    python.size = 0
    renew()
    assert python.size == 3
