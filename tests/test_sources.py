"""Argument sources for untyped code: stubs, docstring types, heuristics, subclasses and
factories, inverse producers, argument capture; discovery and resolution fixes."""

from __future__ import annotations

import datetime
import types
from pathlib import Path

import pytest

from apiprof.engine.discovery.dependencies import missing_dependency
from apiprof.engine.discovery.discover import (
    discover,
    import_name_of,
    is_compiled_function,
    resolve_object,
)
from apiprof.engine.scenarios.capture import capture_examples
from apiprof.engine.scenarios.collect import gather_scenarios
from apiprof.engine.scenarios.doctypes import docstring_types, read_type
from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.partial import partial_arguments
from apiprof.engine.scenarios.replayed import captured_spec, replay_call
from apiprof.engine.scenarios.stubs import stub_signature
from apiprof.engine.scenarios.synth import CannotSynthesize, synthesize
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.engine.scenarios.typetext import PathMarker, TextFileMarker, evaluate_type
from apiprof.engine.scenarios.usage import infer_from_usage, usage_of
from apiprof.model.records import ScenarioSource

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def gathered():
    return gather_scenarios(discover("untyped_pkg"), sizes=(10, 100))


def by_target(gathered):
    return {spec.qualname: spec for spec in gathered.specs}


def test_each_source_is_credited_on_the_scenario_it_made(gathered):
    sources = {q: spec.source for q, spec in by_target(gathered).items()}
    assert sources["untyped_pkg.center"] is ScenarioSource.STUBS
    for name in ("split_words", "wrap_lines", "count_in"):  # Sphinx, numpydoc, Google
        assert sources[f"untyped_pkg.{name}"] is ScenarioSource.DOCSTRING_TYPES, name
    for name in ("parse_when", "first_line", "describe"):
        assert sources[f"untyped_pkg.{name}"] is ScenarioSource.HEURISTICS, name
    assert sources["untyped_pkg.Shape.describe_area"] is ScenarioSource.FACTORIES
    for spec in gathered.specs:  # everything collected runs
        assert try_scenario(spec)[0] is None, spec.id


def test_only_the_abstract_class_itself_is_left_and_says_why(gathered):
    missing = gathered.unscenarioed()
    assert set(missing) == {"untyped_pkg.Shape"}
    assert missing["untyped_pkg.Shape"].reason == (
        "abstract class: it cannot be instantiated; its concrete subclasses (Square) are profiled"
    )


def test_synthesised_inputs_are_shown_as_a_person_would_write_them(gathered):
    specs = by_target(gathered)
    assert specs["untyped_pkg.center"].inputs.startswith("untyped_pkg.center('")
    assert "types from s: stubs, width: stubs" in specs["untyped_pkg.center"].description
    assert specs["untyped_pkg.parse_when"].inputs.startswith(
        "untyped_pkg.parse_when(datetime.datetime(2024"
    )


def test_stub_beside_the_module_and_typeshed_stubs_are_read():
    import untyped_pkg.text

    stub = stub_signature(untyped_pkg.text.center)
    assert stub.parameters == {"s": [str], "width": [int]} and stub.returns == [str]
    assert stub.origin == "untyped_pkg.text"
    import textwrap  # not a third-party package: no stub found where stubs are looked for

    assert stub_signature(textwrap.dedent) is None


def test_typeshed_helper_types_map_to_values():
    assert evaluate_type("StrPath") is PathMarker
    assert evaluate_type("SupportsRead[str]") is TextFileMarker
    assert evaluate_type("Incomplete") is None
    assert evaluate_type("int | Unknownish") is int  # an unknown member drops out of a union
    assert evaluate_type("list[str]") == list[str]


def test_docstring_type_words_are_read_as_people_write_them():
    import untyped_pkg.shapes

    classes = {"Shape": untyped_pkg.shapes.Shape}
    assert read_type("str or None", {}) is str  # a value is what gets measured
    assert read_type("list of int", {}) == list[int]
    assert read_type(":class:`~untyped_pkg.Shape`", classes) is untyped_pkg.shapes.Shape
    assert read_type("a Shape, optional", classes) is untyped_pkg.shapes.Shape
    assert read_type("{'left', 'right'}", {}) == __import__("typing").Literal["left", "right"]
    assert read_type("file-like", {}) is TextFileMarker
    from untyped_pkg.text import wrap_lines

    assert docstring_types(wrap_lines).parameters == {"lines": [list[str]], "width": [int]}


def test_usage_and_names_give_types():
    from untyped_pkg.shapes import Registry, Shape, describe

    usage = usage_of(describe, "shape")
    assert usage.isinstance_of == ["Shape"]
    strong, _ = infer_from_usage(usage, __import__("untyped_pkg.shapes").shapes, {"Shape": Shape})
    assert strong[0] is Shape
    token = usage_of(Registry, "token")  # a class: its __init__ is read
    assert infer_from_usage(token, None, {})[0] == [__import__("typing").Literal["secret"]]
    assert guess_from_name("dt") is datetime.datetime
    assert guess_from_name("input_path") is PathMarker  # by suffix
    assert guess_from_name("handle") is None


def test_factories_and_inverse_producers_build_what_direct_calls_cannot():
    registry = synthesize("untyped_pkg.Registry.register", 10)
    assert registry.args and isinstance(registry.args[0], str)
    unpacked = synthesize("untyped_pkg.unpack", 10)
    assert unpacked.args[0].startswith(b"PK")  # made by pack, its inverse
    assert unpacked.target(*unpacked.args) is not None


def test_every_source_can_be_switched_off():
    with pytest.raises(CannotSynthesize, match="no annotation or default"):
        synthesize("untyped_pkg.parse_when", 10, sources=())
    with pytest.raises(CannotSynthesize, match="Shape is abstract"):
        synthesize("untyped_pkg.Shape.describe_area", 10, sources=("heuristics",))
    assert synthesize("untyped_pkg.center", 10, sources=("stubs",)).source is ScenarioSource.STUBS


def test_partial_arguments_for_a_scaffold():
    found = {p.name: p for p in partial_arguments("untyped_pkg.split_words")}
    assert found["text"].code.startswith("'") and "docstring_types" in found["text"].note
    stuck = partial_arguments("untyped_pkg.parse_when", sources=())
    assert stuck[0].code == "..." and "no annotation" in stuck[0].note


def test_docstring_examples_are_captured_and_replayed():
    discovery = discover("tiny_pkg")
    calls = capture_examples(discovery)
    captured = {call.qualname: call for call in calls}
    assert {"tiny_pkg.join_words", "tiny_pkg.repeat_text", "tiny_pkg.sort_numbers"} <= set(captured)
    call = captured["tiny_pkg.sort_numbers"]
    assert call.origin == "doc:tiny_pkg.sort_numbers#1" and call.shown == "([3, 1, 2])"
    target, args, kwargs = replay_call(call.qualname, call.payload, 7)
    assert len(args[0]) == 7 and target(*args, **kwargs) == sorted(args[0])  # resized to n
    spec = captured_spec(call, 1, (10, 100))
    assert spec.source is ScenarioSource.CAPTURED and spec.sizes == (10, 100)
    assert try_scenario(spec, 100)[0] is None


def test_a_submodule_never_hides_the_attribute_of_the_same_name():
    import json.decoder

    assert resolve_object("untyped_pkg.codec") is __import__("untyped_pkg.codec").codec
    # `untyped_pkg.shapes` is the module; `untyped_pkg.Shape.area` walks the class
    assert resolve_object("untyped_pkg.Shape.area").__name__ == "area"
    assert resolve_object("json.decoder.JSONDecoder") is json.decoder.JSONDecoder


def test_shadowed_names_resolve_to_what_the_package_exports(tmp_path, monkeypatch):
    package = tmp_path / "shadow_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from shadow_pkg.width import width\n")
    (package / "width.py").write_text("def width(text):\n    return len(text)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert callable(resolve_object("shadow_pkg.width"))  # the function, not the module
    assert resolve_object("shadow_pkg.width.width") is resolve_object("shadow_pkg.width")
    entries = {ep.qualname for ep in discover("shadow_pkg").entry_points}
    assert entries == {"shadow_pkg.width"}


def test_compiled_functions_are_entry_points():
    compiled = type("cython_function_or_method", (), {"__call__": lambda self: 1, "__get__": None})
    function = compiled()
    assert is_compiled_function(function)
    assert not is_compiled_function(len) and not is_compiled_function(lambda: 1)


def test_distribution_names_map_to_import_names():
    assert import_name_of("sqlite-utils") == "sqlite_utils"
    assert import_name_of("json") == "json"
    assert import_name_of("no-such-distribution-xyz") == "no-such-distribution-xyz"


def test_missing_optional_dependencies_are_told_apart():
    error = "ModuleNotFoundError: No module named 'frobnicate'"
    assert missing_dependency(error, "discover_pkg") == "frobnicate"
    assert (
        missing_dependency("ModuleNotFoundError: No module named 'discover_pkg.x'", "discover_pkg")
        == ""
    )
    assert missing_dependency("ImportError: boom", "discover_pkg") == ""


def test_cached_properties_are_measured_through_their_function():
    import functools

    from apiprof.engine.discovery.discover import measurable

    class Lazy:
        @functools.cached_property
        def value(self):
            return 1

    raw = vars(Lazy)["value"]
    assert measurable(raw) is raw.func
    assert isinstance(measurable(len), types.BuiltinFunctionType)


def test_checking_what_a_call_raises_has_the_trial_time_limit(monkeypatch):
    import time

    from apiprof.engine.scenarios import synthesized
    from apiprof.engine.scenarios.synth import Synthesis

    monkeypatch.setattr(synthesized, "TRIAL_SECONDS", 0.2)
    started = time.monotonic()
    assert synthesized.raises_its_argument(Synthesis(lambda: time.sleep(30), ())) == ""
    assert time.monotonic() - started < 10  # a hang guard: interrupted, not waited for

    def reraise(error):
        raise error

    assert synthesized.raises_its_argument(Synthesis(reraise, (KeyError("k"),))) == "KeyError"


def test_coroutines_and_async_iterators_are_run_when_consumed():
    from apiprof.engine.scenarios.synth import consume, is_lazy

    async def double(x):
        return 2 * x

    async def count(n):
        for i in range(n):
            yield i

    coroutine = double(21)
    assert is_lazy(coroutine) and consume(coroutine) == 42
    numbers = count(5)
    assert is_lazy(numbers)
    consume(numbers, limit=3)
    assert numbers.ag_frame.f_locals["i"] == 2  # three items drawn, the rest left
    assert not is_lazy("text") and not is_lazy([1])


def test_a_compiled_module_is_typed_by_the_source_it_ships_beside_itself(tmp_path, monkeypatch):
    import importlib.machinery

    from apiprof.engine.scenarios import stubs

    compiled = tmp_path / f"kernel{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    compiled.write_bytes(b"")
    (tmp_path / "kernel.py").write_text("def detect(data: bytes) -> str: ...\n")
    spec = importlib.machinery.ModuleSpec("mypycpkg.kernel", None, origin=str(compiled))
    monkeypatch.setattr(stubs.importlib.util, "find_spec", lambda name: spec)
    assert stubs.find_stub_file("mypycpkg.kernel") == tmp_path / "kernel.py"


def test_examples_see_the_package_public_names_and_their_module_globals():
    from apiprof.engine.scenarios.doctests import example_globals

    names = example_globals("untyped_pkg.text")
    import untyped_pkg

    assert names["Square"] is untyped_pkg.Square  # exported by the package, not imported by text
    assert names["untyped_pkg"] is untyped_pkg
    assert names["datetime"].__name__ == "datetime"  # the module's own globals too
    assert "__builtins__" not in names


def _upcase_tokens(s, loc, tokens):
    return [token.upper() for token in tokens]


def test_what_a_loop_does_with_the_items_types_the_list():
    from apiprof.engine.scenarios.usage import infer_from_usage

    usage = usage_of(_upcase_tokens, "tokens")
    assert usage is not None and usage.item_attributes == {"upper"}
    strong, _ = infer_from_usage(usage, None, {})
    assert strong[0] == list[str]


def test_an_absent_declared_dependency_is_its_own_category():
    from apiprof.engine.discovery.dependencies import optional_dependency
    from apiprof.engine.scan.plan import module_failure
    from apiprof.engine.scenarios.spec import ScenarioSpec
    from apiprof.model.records import Coverage

    absent = ModuleNotFoundError("No module named 'pluggy.x'", name="pluggy.x")
    assert optional_dependency(absent, "pytest.main") == "pluggy"  # pytest declares pluggy
    assert optional_dependency(RuntimeError(f"building raised {absent}"), "pytest") == "pluggy"
    made_up = ModuleNotFoundError("No module named 'lorem'", name="lorem")
    assert optional_dependency(made_up, "pytest") == ""  # a name synthesis made up
    spec = ScenarioSpec(
        "synth:pytest.main", "pytest.main", ScenarioSource.SYNTHESIZED, "", "", "import pluggy.x"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(__import__("sys").modules, "pluggy.x", None)
        failure, _ = try_scenario(spec)
    assert failure is not None and failure.kind == Coverage.MISSING_DEPENDENCY
    record = module_failure("pkg.plots", "ModuleNotFoundError: ...", "matplotlib")
    assert record.status == Coverage.MISSING_DEPENDENCY and "install it" in record.reason
    assert module_failure("pkg.x", "boom", "").status == Coverage.IMPORT_FAILED


def test_graph_vertices_are_guessed_from_their_names():
    for name in ("u", "node", "start_node", "reference_neighbor", "num_iterations"):
        assert guess_from_name(name) is int, name


def test_the_summary_gives_the_fraction_of_what_can_run_here_beside_the_plain_one():
    from apiprof.engine.scan.summary import ScanSummary
    from apiprof.model.records import Coverage, CoverageRecord

    absent = CoverageRecord("pkg.plots.draw", Coverage.MISSING_DEPENDENCY, "needs matplotlib")
    failed = CoverageRecord("pkg.parse", Coverage.NO_ARGUMENTS, "parameter 'x'")
    summary = ScanSummary("pkg", "1.0", 1, "db", "finished", 10, 8, [absent, failed])
    assert summary.runnable == 9 and summary.runnable_profiled_fraction == 8 / 9
    data = summary.to_json()
    assert data["profiled_fraction"] == 0.8 and data["runnable"] == 9
    assert data["runnable_profiled_fraction"] == round(8 / 9, 4)


def test_every_argument_source_has_its_switch():
    import argparse

    from apiprof.cli.scan import add_scan_arguments, scan_options
    from apiprof.engine.scenarios.synth import SOURCES

    parser = argparse.ArgumentParser()
    add_scan_arguments(parser)
    assert scan_options(parser.parse_args(["pkg"])).argument_sources == list(SOURCES)
    options = scan_options(parser.parse_args(["pkg", "--no-observed"]))
    assert not options.observed and "observed" not in options.argument_sources
    assert set(options.argument_sources) == set(SOURCES) - {"observed"}


def test_camel_case_names_are_guessed_like_snake_case_ones():
    assert guess_from_name("parseElementList") == list[int]
    assert guess_from_name("maxCount") is int


def test_a_message_asking_to_install_an_extra_of_the_package_is_a_missing_dependency():
    from apiprof.engine.discovery.dependencies import optional_dependency

    asked = Exception("must ``pip install pytest[testing]`` to generate diagrams")
    assert optional_dependency(asked, "pytest.main") == "pytest[testing]"
    other = Exception("must ``pip install lorem[ipsum]`` first")  # not this package's extra
    assert optional_dependency(other, "pytest.main") == ""


def test_batches_of_one_package_add_up_their_runnable_entry_points():
    from apiprof.engine.cluster.coordinator import combine_summary
    from apiprof.engine.scan.summary import ScanSummary
    from apiprof.model.records import Coverage, CoverageRecord

    absent = CoverageRecord("pkg.plots.draw", Coverage.MISSING_DEPENDENCY, "needs matplotlib")
    first = ScanSummary("pkg", "1.0", 1, "a.db", "finished", 4, 3, [absent]).to_json()
    second = ScanSummary("pkg", "1.0", 2, "b.db", "finished", 6, 5, []).to_json()
    packages: dict = {}
    combine_summary(packages, first)
    combine_summary(packages, second)
    total = packages["pkg"]
    assert (total["discovered"], total["runnable"], total["profiled"]) == (10, 9, 8)
    assert total["profiled_fraction"] == 0.8
    assert total["runnable_profiled_fraction"] == round(8 / 9, 4)


def test_an_api_defined_only_where_a_platform_import_succeeds_needs_what_this_machine_lacks():
    import elsewhere_pkg  # noqa: F401  (its module `win` binds console_width only on Windows)

    from apiprof.engine.discovery.dependencies import unavailable_here
    from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
    from apiprof.model.records import Coverage

    missing = AttributeError("module 'elsewhere_pkg.win' has no attribute 'console_width'")
    assert "only when the import-time try block at line 3 succeeds" in unavailable_here(
        missing, "elsewhere_pkg.columns"
    )
    absent = AttributeError("module 'elsewhere_pkg.win' has no attribute 'made_up'")
    assert unavailable_here(absent, "elsewhere_pkg") == ""  # not bound anywhere: a real fault
    for qualname in ("elsewhere_pkg.columns", "elsewhere_pkg.Console.width_now"):
        spec, failure = find_synthesized_scenario(qualname, (10,))
        assert spec is None and failure is not None, qualname
        assert failure.kind == Coverage.MISSING_DEPENDENCY, (qualname, failure.reason)
        assert "what this machine lacks (elsewhere_pkg.win defines console_width" in failure.reason
    assert find_synthesized_scenario("elsewhere_pkg.plain", (10,))[0] is not None


def test_a_module_the_package_imports_where_it_uses_it_is_an_absent_dependency(monkeypatch):
    """Undeclared, but imported by an ``import`` statement of the package's own (tqdm's
    ``import matplotlib``); a name the call was given is not one; and an ``ImportError`` of the
    package's own naming a declared requirement that is absent (``update ipywidgets``) is."""
    from optional_pkg import plotting

    from apiprof.engine.discovery import dependencies

    for call, expected in ((lambda: plotting.draw([1]), "apiprof_absent_plotting"),
                           (lambda: plotting.plugin("apiprof_absent_lorem"), "")):  # fmt: skip
        with pytest.raises(ModuleNotFoundError) as raised:
            call()
        assert dependencies.optional_dependency(raised.value, "optional_pkg") == expected
    monkeypatch.setattr(dependencies, "declared_requirements", lambda _: {"frobwidgets"})
    told = ImportError("FrobBar not found. Please update jupyter and frobwidgets.")
    assert dependencies.optional_dependency(told, "optional_pkg") == "frobwidgets"
    assert dependencies.optional_dependency(ImportError("FrobBar not found"), "optional_pkg") == ""


def test_what_only_a_newer_standard_library_has_is_told_apart_from_a_name_given():
    from optional_pkg import plotting

    from apiprof.engine.discovery.dependencies import unavailable_here

    with pytest.raises(AttributeError) as newer:
        plotting.batched([1, 2])
    assert "math has no apiprof_future_pairs: a newer Python has" in unavailable_here(
        newer.value, "optional_pkg"
    )
    with pytest.raises(AttributeError) as given:
        plotting.constant("apiprof_lorem")
    assert unavailable_here(given.value, "optional_pkg") == ""


def test_a_library_the_raising_module_imports_and_says_is_not_installed_is_absent():
    """An import-time ``try: import cachelib`` that set a flag, then an error of the package's
    own when the part is used: that library is missing; a name the caller gave is not."""
    from optional_pkg import caching

    from apiprof.engine.discovery.dependencies import optional_dependency

    with pytest.raises(RuntimeError) as backend:
        caching.CacheBackend()
    assert optional_dependency(backend.value, "optional_pkg") == "apiprof_absent_cachelib"
    with pytest.raises(RuntimeError) as given:
        caching.lookup("apiprof_absent_lorem")
    assert optional_dependency(given.value, "optional_pkg") == ""
