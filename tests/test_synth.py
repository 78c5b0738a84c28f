"""Argument synthesis: size-aware builders, name guesses, methods, lazy results, determinism."""

from __future__ import annotations

import datetime
import enum
import io
import sys
import tempfile
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from apiprof.engine.scenarios import signatures, synth
from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.signatures import package_classes
from apiprof.engine.scenarios.spec import compile_scenario
from apiprof.engine.scenarios.synth import (
    CannotSynthesize,
    synthesize,
    synthesize_arguments,
)
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario, raised_by_design
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import ScenarioSource

FIXTURES = Path(__file__).parent / "fixtures"


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


def typed(
    text: str,
    blob: bytes,
    numbers: list[int],
    table: dict[str, float],
    pair: tuple[int, str],
    many: tuple[float, ...],
    tags: set[str],
    maybe: int | None,
    mode: typing.Literal["a", "b"],
    colour: Colour,
    seq: Sequence[str],
    things: Iterable[int],
    mapping: Mapping[int, str],
    *,
    flag: bool,
    when: datetime.date,
    optional: str = "default",
) -> None:
    """Every common annotation once."""


def unguessable(handle, text="x"):
    """`handle` has no annotation, no default and no well-known name."""


def takes_path(where: Path) -> None:
    """Paths are never invented."""


def takes_iterator(items: typing.Iterator[int]) -> None:
    """An iterator is used up by one call."""


def odd_type(value: types.SimpleNamespace) -> types.SimpleNamespace:
    """No builder: hypothesis' from_type draws one."""
    return value


@pytest.fixture(scope="module", autouse=True)
def importable():
    sys.modules.setdefault("synth_subjects", sys.modules[__name__])
    yield
    sys.modules.pop("synth_subjects", None)


def test_sized_builders_follow_n():
    for n in (3, 40):
        result = synthesize("synth_subjects.typed", n)
        text, blob, numbers, table, pair, many, tags, maybe, mode, colour, seq, things, mapping = (
            result.args
        )
        assert len(text) == n and len(blob) == n and len(numbers) == n and len(table) == n
        assert all(isinstance(x, int) for x in numbers) and all(
            isinstance(v, float) for v in table.values()
        )
        assert isinstance(pair, tuple) and [type(x) for x in pair] == [int, str]
        assert (
            len(many) == n
            and len(tags) == n
            and len(seq) == n
            and len(things) == n
            and len(mapping) == n
        )
        assert isinstance(maybe, int) and mode == "a" and colour is Colour.RED
        assert set(result.kwargs) == {"flag", "when"}  # keyword-only, defaults left alone
        assert isinstance(result.kwargs["when"], datetime.date)
        assert result.sized


def test_same_inputs_give_the_same_arguments():
    def arguments(seed: int) -> tuple:
        return synthesize_arguments("synth_subjects.typed", 20, seed=seed)

    assert arguments(1) == arguments(1)
    assert arguments(1) != arguments(2)


def test_variants_offer_other_flavours():
    first = synthesize("synth_subjects.typed", 5, variant=0)
    second = synthesize("synth_subjects.typed", 5, variant=1)
    assert first.choices > 1
    assert (first.args[8], first.args[9]) == ("a", Colour.RED)
    assert (second.args[8], second.args[9]) == ("b", Colour.BLUE)


def test_unannotated_parameters_are_guessed_from_names_and_siblings():
    assert guess_from_name("text") is str and guess_from_name("n") is int
    assert guess_from_name("handle") is None
    assert guess_from_name("fpath") is guess_from_name("path") is guess_from_name("save_path")
    # the sibling's default ("x") says `handle` is probably a string too: a heuristic
    result = synthesize("synth_subjects.unguessable", 10)
    assert isinstance(result.args[0], str) and result.source is ScenarioSource.HEURISTICS
    with pytest.raises(CannotSynthesize, match="parameter 'handle' has no annotation or default"):
        synthesize("synth_subjects.unguessable", 10, sources=())
    with pytest.raises(CannotSynthesize, match="iterator"):
        synthesize("synth_subjects.takes_iterator", 10)


def test_paths_are_real_files_in_the_temporary_directory():
    (where,), _ = synthesize_arguments("synth_subjects.takes_path", 10)
    assert isinstance(where, Path) and where.is_file() and where.read_text().strip()
    assert str(where).startswith(tempfile.gettempdir())


def test_unknown_types_fall_back_to_hypothesis():
    (value,), _ = synthesize_arguments("synth_subjects.odd_type", 10)
    assert isinstance(value, types.SimpleNamespace)


def test_methods_properties_class_and_static_methods():
    method = synthesize("discover_pkg.Shape.perimeter", 10)
    assert method.target.__self__.sides == 3 and isinstance(method.args[0], float)
    prop = synthesize("discover_pkg.Shape.angle_sum", 10)
    assert prop.target(*prop.args) == 180.0
    assert synthesize("discover_pkg.Shape.square", 10).target().sides == 4
    assert synthesize("discover_pkg.Shape.unit", 10).target() == 1.0
    cls = synthesize("discover_pkg.Shape", 10)
    assert cls.args == () and cls.target is sys.modules["discover_pkg"].Shape


def test_c_functions_without_signature_use_their_docstring_line(monkeypatch):
    def no_signature(obj):
        raise ValueError("no signature found for builtin")

    monkeypatch.setattr(signatures.inspect, "signature", no_signature)  # as on Pythons before 3.13
    # doc: "encode_basestring(string)"
    args, _ = synthesize_arguments("json.encoder.encode_basestring", 12)
    assert len(args) == 1 and isinstance(args[0], str) and len(args[0]) == 12


def test_synthesized_scenario_is_code_with_a_size_axis():
    spec, reason = find_synthesized_scenario("discover_pkg.scale", (5, 50))
    assert (
        reason is None
        and spec.id == "synth:discover_pkg.scale"
        and spec.source is ScenarioSource.SYNTHESIZED
    )
    assert (spec.size_axis, spec.sizes) == ("n", (5, 50))
    assert len(compile_scenario(spec, 50)()) == 50
    unsized, _ = find_synthesized_scenario("discover_pkg.Shape.unit", (5, 50))
    assert (unsized.size_axis, unsized.sizes) == ("", ()) and compile_scenario(
        unsized, None
    )() == 1.0


def test_iterator_results_are_consumed_so_lazy_work_is_measured():
    spec, _ = find_synthesized_scenario("discover_pkg.first_lines", (10,))
    assert spec.call == "consume(target(*args, **kwargs), 10 * n + 100)"
    assert try_scenario(spec)[0] is None


def test_rejected_flavours_are_retried_and_failures_explained():
    spec, _ = find_synthesized_scenario("colorsys.hls_to_rgb", (10,))
    assert "variant 0" not in spec.description  # `s` as text fails; a float variant is kept
    assert try_scenario(spec)[0] is None
    spec, reason = find_synthesized_scenario("discover_pkg.needs_handle", (10,))
    assert spec is None and reason is not None and "'handle'" in reason.reason


def test_in_memory_files_are_rewound_before_each_call():
    spec, _ = find_synthesized_scenario("json.load", (10,))
    assert spec.call.startswith("rewind(args, kwargs)")
    run = compile_scenario(spec, 10)
    assert run() == run() and len(run()) == 10
    assert isinstance(run.__globals__["args"][0], io.StringIO)


def test_a_hook_that_always_raises_is_measured_raising():
    assert raised_by_design("json.JSONEncoder.default") == "TypeError"
    assert raised_by_design("json.dumps") == ""  # returns normally
    assert raised_by_design("json.encoder.c_make_encoder") == ""  # no source: no claim
    spec, reason = find_synthesized_scenario("json.JSONEncoder.default", (10,))
    assert reason is None and spec is not None
    assert "except Exception" in spec.call and "always raises TypeError" in spec.description


def test_annotations_imported_only_for_type_checking_resolve_to_the_packages_classes():
    import typed_pkg

    target, args, _ = synth.synthesize_call("typed_pkg.render_with", 10)
    assert isinstance(args[0], typed_pkg.Engine) and target(*args) == "engine" * 3
    assert package_classes("typed_pkg.users")["Engine"] is typed_pkg.Engine
    # only the annotated function's own package
    assert "Engine" not in package_classes("json")


def test_forwarded_any_args_get_no_positional_values():
    assert synthesize_arguments("typed_pkg.forward", 10)[0] == ()
    spec, reason = find_synthesized_scenario("typed_pkg.forward", (10,))
    assert spec is not None and reason is None


def test_a_flavour_that_cannot_be_built_does_not_end_the_search():
    spec, reason = find_synthesized_scenario("typed_pkg.third_time_lucky", (10,))
    # Rejected, Unbuildable, Accepted
    assert reason is None and spec is not None and "variant 2" in spec.description
    with pytest.raises(CannotSynthesize, match="this flavour cannot be built"):
        synthesize("typed_pkg.third_time_lucky", 10, variant=1)


def test_a_one_word_string_is_tried_when_prose_and_other_union_members_are_refused():
    spec, reason = find_synthesized_scenario("typed_pkg.label_only", (10,))
    # prose, bytes, then a word
    assert reason is None and spec is not None and "variant 2" in spec.description
    target, args, _ = synth.synthesize_call("typed_pkg.label_only", 10, variant=2)
    assert args[0].isalpha() and target(*args) == args[0].upper()


def test_stdlib_names_imported_for_type_checking_resolve():
    (path,), _ = synthesize_arguments("typed_pkg.read_config", 10)
    assert isinstance(path, Path) and path.is_file()


def test_keys_and_set_members_of_any_type_are_hashable():
    target, args, _ = synth.synthesize_call("typed_pkg.key_count", 10)
    assert all(isinstance(key, str) for key in args[0]) and all(isinstance(m, str) for m in args[1])
    assert target(*args) == 20


def test_an_object_answering_every_attribute_with_itself_is_profiled(tmp_path, monkeypatch):
    # A null logger's __getattribute__ returns the logger, so its __class__ is no class and an
    # ABC isinstance check raises; that is the object's quirk, not a crash of the target.
    (tmp_path / "nullsink_mod.py").write_text(
        "class NullSink:\n"
        "    def __getattribute__(self, name):\n"
        "        return self\n"
        "    def __call__(self, *args, **kwargs):\n"
        "        return self\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec, reason = find_synthesized_scenario("nullsink_mod.NullSink", (10,))
    assert reason is None and spec is not None
    assert try_scenario(spec)[0] is None
