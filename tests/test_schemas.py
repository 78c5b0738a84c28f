"""Schemas users fill in (``schemas_pkg``): siblings of one collection get values of their own
(two fields of one record never share a name), a class whose fields only users' subclasses set
is called through the subclass its documentation shows (source ``examples``: also a sibling
class that leaves the same fields empty), a name the receiver did not find is one of the names
of what it holds, and a ``*args`` that a function made inside the call takes fewer of passes
as many as it takes, and a call that refuses the parameters its copied signature shows takes
the last ones (source ``repaired``); a base class's alternative constructor makes the subclass
(source ``subclasses``). Each with its source and without it."""

from __future__ import annotations

import io
import json
import re

import pytest
from schemas_pkg.choices import Selection
from schemas_pkg.fields import Field, Fields, Record, Row
from test_siblings import ALONE, found

from apiprof.engine.scenarios.arity import fewer_items, fewer_parameters
from apiprof.engine.scenarios.building import BuildContext
from apiprof.engine.scenarios.docsubclasses import documented_subclasses, unset
from apiprof.engine.scenarios.heldnames import held_names
from apiprof.engine.scenarios.lessons import learn, may_teach
from apiprof.engine.scenarios.mixups import wrong_kind
from apiprof.engine.scenarios.preparers import preparer_of
from apiprof.engine.scenarios.schemanote import schema_note
from apiprof.engine.scenarios.synth import synthesize_call
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.wantedtext import text_wanted
from apiprof.engine.scenarios.wants import Lesson, Want

WITHOUT_SUBCLASSES = tuple(source for source in ALONE if source != "subclasses")


def only_with(switch: str, credited: str, qualname: str) -> str:
    """The description of the scenario found for ``qualname`` (credited to ``credited``, run
    as measured); with every source but the one ``switch`` turns off, none is found."""
    described = found(qualname, ALONE)
    assert described is not None and described.startswith(f"{credited}: ")
    assert found(qualname, tuple(other for other in ALONE if other != switch)) is None
    return described


def test_siblings_of_a_collection_draw_values_of_their_own():
    _, args, _ = synthesize_call("schemas_pkg.fields.Fields", 10)
    names = [field.name for field in args]
    assert len(args) == 2 and len(set(names)) == 2  # drawn alike, they were one name twice
    context = BuildContext("pkg.f", 10, 0, 0)
    drawn = context.apart(3, lambda i: context.rng("name").random())
    assert len(set(drawn)) == 3 and context.sibling == ""
    first = BuildContext("pkg.f", 10, 0, 0).rng("name").random()
    assert drawn[0] == first  # the first sibling keeps what it always drew


def test_a_documented_subclass_fills_what_the_base_leaves_empty():
    [point] = documented_subclasses(Record)
    assert point.__name__ == "Point" and issubclass(point, Record)
    assert [field.name for field in point.fields] == ["lat", "lon"]
    [borrowed] = documented_subclasses(Row)  # Row leaves `fields` empty as Record does
    assert issubclass(borrowed, Row) and not issubclass(borrowed, Record)
    assert documented_subclasses(Field) == ()
    assert unset(None) and unset(Fields()) and not unset("") and not unset(Fields(Field("a", 1)))


@pytest.mark.parametrize(
    "qualname", ["schemas_pkg.fields.Record.total_width", "schemas_pkg.fields.Row.widest"]
)
def test_a_method_of_an_empty_schema_runs_on_the_documented_subclass(qualname):
    assert "its subclass Point as the documentation writes it" in only_with(
        "examples", "examples", qualname
    )


def test_a_name_not_found_is_one_the_receiver_holds():
    held = Fields(Field("width", 3), Field("height", 4))
    assert held_names(held) == ("width", "height")  # its elements' names, in order
    assert held_names(Record()) == ()  # holds nothing
    refused = LookupError("Name lorem not found")
    assert may_teach(f"the call raised LookupError: {refused} in call")
    assert learn(refused, {"name": "lorem"}, receiver=held) == Lesson(
        "name",
        Want.ONE_OF,
        ("width",),
        cause="LookupError Name lorem not found: name was not among what the receiver lists",
    )
    described = only_with(
        "repair", "repaired", "schemas_pkg.fields.Record.offset_of"
    )  # Point's fields
    assert "name 'lat'" in described


def test_an_echoed_item_of_star_args_passes_that_one_name():
    refused = LookupError("Unknown names: {'lorem', 'ipsum'}")
    lesson = learn(refused, {"names": ("lorem", "ipsum")}, receiver=Fields(Field("a", 1)))
    assert lesson is not None and lesson.parameter == "names" and lesson.names == ("a",)


def test_a_function_made_in_the_call_that_takes_fewer_items_trims_star_args():
    message = "_splitter.<locals>.<lambda>() takes 1 positional argument but 2 were given"
    assert may_teach(f"the call raised TypeError: {message} in call")
    bound = {"sep": "a", "texts": ("b", "c")}
    assert fewer_items(message, bound) == Lesson(
        "texts", Want.ITEMS, ("1",), cause=f"TypeError {message}"
    )
    assert fewer_items(message, {"sep": "a", "texts": ("b", "c", "d")}) is None  # not those
    assert fewer_items("f() takes 1 positional argument but 2 were given", bound) is None
    _, args, _ = synthesize_call(
        "schemas_pkg.sequences.split_all",
        10,
        variant=1,
        repairs=(fewer_items(message, bound).literal(),),
    )
    assert len(args) == 2  # the separator and one text
    assert "*texts 1 item(s)" in only_with("repair", "repaired", "schemas_pkg.sequences.split_all")


def test_a_call_refusing_the_parameters_its_signature_shows_takes_the_last_ones():
    message = "_post_processing() takes 1 positional argument but 2 were given"
    try:
        (lambda func: func)(1, 2)  # raised by the call itself: only this frame
    except TypeError as raised:
        refused = TypeError(message).with_traceback(raised.__traceback__)
    assert fewer_parameters(refused, {"call": 1, "func": 2}) == Lesson(
        "", Want.NAMES, ("func",), cause=f"TypeError {message}"
    )
    assert fewer_parameters(refused, {"call": 1}) is None  # given more than it was bound
    described = only_with("repair", "repaired", "schemas_pkg.stamps.collecting")
    assert "the call takes the parameter 'func'" in described


def test_a_bases_alternative_constructor_makes_the_subclass():
    described = found("schemas_pkg.stamps.Stamp.as_date", ALONE)
    assert described is not None and "<Stamp instance>: factories" in described
    assert found("schemas_pkg.stamps.Stamp.as_date", WITHOUT_SUBCLASSES) is None  # the switch


def test_a_regular_expression_applied_to_a_number_of_ours_wants_texts():
    finder = _regex_finder()
    for bound, want in (
        ({"text": 7}, ("str",)),  # the argument itself
        ({"texts": [7]}, ("texts",)),  # one of its items
        ({"seqs": ([7, 8],)}, ("texts",)),  # an item of one of the *seqs: one list of texts
    ):
        number = next(value for value in _leaves(bound) if value == 7)
        try:
            finder(number)
        except TypeError as refused:
            lesson = text_wanted(str(refused), refused, bound)
        assert lesson is not None and lesson.names == want and lesson.parameter in bound
    assert text_wanted("expected string or bytes-like object, got 'int'", TypeError(), {}) is None
    assert "seqs of type texts" in only_with("repair", "repaired", "schemas_pkg.sequences.find_all")


def test_a_stream_given_to_json_loads_wants_text():
    stream = io.StringIO("{}")
    with pytest.raises(TypeError) as refused:
        json.loads(stream)  # type: ignore[arg-type]
    lesson = text_wanted(str(refused.value), refused.value, {"stream": stream})
    assert lesson is not None and (lesson.parameter, lesson.names) == ("stream", ("str",))


def _regex_finder():
    regex = re.compile("a")

    def find(text):  # a frame of its own holds the text, as a package's matcher does
        return regex.findall(text)

    return find


def _leaves(bound):
    for value in bound.values():
        if isinstance(value, (list, tuple)):
            for item in value:
                yield from item if isinstance(item, list) else [item]
        else:
            yield value


def test_text_and_bytes_mixed_up_with_none_of_ours_of_the_refused_kind_flips_ours():
    message = "cannot use a bytes pattern on a string-like object"
    assert wrong_kind(message, {"f": b"ab", "seqs": (["x"],)}, ()) == ("f", "str")
    assert wrong_kind(message, {"f": "ab"}, ()) == ("f", "bytes")  # ours was the text
    assert wrong_kind("must be str, not bytes", {"sep": "a"}, ()) == ("sep", "bytes")


def test_a_method_still_refused_says_which_empty_attribute_it_reads():
    note = schema_note("schemas_pkg.fields.Row.widest")
    assert note.startswith("; Row.fields is left empty (")
    assert "widest reads it: a scenario may need to call it on a subclass" in note
    assert note.endswith("(its documented subclasses Point did not do)")
    assert schema_note("schemas_pkg.fields.Fields.position_of") == ""  # reads no such thing
    assert schema_note("schemas_pkg.sequences.split_all") == ""  # not a method
    without = tuple(source for source in ALONE if source != "examples")
    spec, failure = find_synthesized_scenario(
        "schemas_pkg.fields.Row.widest", (10,), sources=without
    )
    assert spec is None and failure is not None
    assert "Row.fields is left empty" in failure.reason


def test_a_class_level_none_placeholder_is_prepared_by_the_method_that_sets_it():
    assert preparer_of(Selection(), "chosen_option") == "choose"
    described = only_with("prepare", "prepared", "schemas_pkg.choices.Selection.chosen_option")
    assert "made ready by Selection.choose(" in described
