"""What a call's refusal says about arguments whose type nothing else says (the repair, source
``repaired``): an optional parameter the error names must be given (``start or end
required``), an operand of the wrong type wants the other operand's (``timedelta + int``), and
a method a plain number lacks wants the standard number type that has it (``to_integral``: a
``Decimal``), a name the receiver did not find is one its listing method names. Each on ``siblings_pkg.periods`` and ``windows``, with the repair and without."""

from __future__ import annotations

import datetime
import decimal

import pytest
from siblings_pkg.periods import floor_steps
from siblings_pkg.shelves import Shelf
from test_siblings import ALONE, found

from apiprof.engine.scenarios.echoes import receiver_listing
from apiprof.engine.scenarios.lessons import learn, may_teach
from apiprof.engine.scenarios.refusals import named_optional, operand_type, richer_number
from apiprof.engine.scenarios.synth import synthesize_call
from apiprof.engine.scenarios.wants import Lesson, Want

WITHOUT_REPAIR = tuple(source for source in ALONE if source != "repair")

RULES = {
    # both optional parameters left at None are refused: the first one the message names
    "siblings_pkg.windows.window_bounds": "learned from ValueError size or count required: "
    "size a value, not its default of None",
    # ... then given an int, it is added to the receiver's timedelta: a timedelta after all
    "siblings_pkg.periods.Period.ends": "learned from TypeError unsupported operand type(s) for "
    "+: 'datetime.timedelta' and 'int': start of type timedelta",
    # a list subtracted from an int, then a float asked for to_integral(): a Decimal
    "siblings_pkg.periods.floor_steps": "learned from AttributeError 'float' object has no "
    "attribute 'to_integral': value of type Decimal",
    # a list concatenated to the receiver's text: text
    "siblings_pkg.periods.Buffer.feed": "learned from TypeError can only concatenate str (not "
    '"list") to str: data of type str',
    # a standard-library parser's syntax error: a document of its format, in the same form
    "siblings_pkg.documents.item_names": "text a valid XML document (text)",
    "siblings_pkg.documents.outline": "stream a valid XML document",
    "siblings_pkg.documents.settings_from": "path a valid JSON document (file)",
    # a mapping the message says must have a member: a dict with that key
    "siblings_pkg.documents.Change.target": "learned from ValueError A change must have a "
    "'path' member: self.change a dict with key 'path'",
    # a name the receiver looked up and did not find: the first its listing method names
    "siblings_pkg.shelves.Shelf.pages": "title was not among what the receiver lists: title 'Dune'",
}


@pytest.mark.parametrize("qualname", list(RULES))
def test_each_refusal_teaches_the_type_and_says_so(qualname):
    described = found(qualname, ALONE)
    assert described is not None and described.startswith("repaired: ")
    assert RULES[qualname] in described
    assert found(qualname, WITHOUT_REPAIR) is None


def test_an_optional_parameter_is_given_when_the_message_names_it():
    bound = {"total": 3, "size": None, "count": None}
    refused = ValueError("either count or size required")
    assert named_optional(refused, str(refused), bound) == "count"  # the message's order
    assert named_optional(ValueError("bad total"), "bad total", bound) is None  # not None
    assert named_optional(KeyError("size"), "size", bound) is None  # a key, not a refusal
    assert may_teach("the call raised ValueError: start or end required in call")
    kwargs = synthesize_call(
        "siblings_pkg.windows.window_bounds",
        10,
        repairs=(Lesson("count", Want.GIVEN).literal(),),
    )[2]
    assert isinstance(kwargs["count"], int) and "size" not in kwargs


def test_the_operand_of_the_rarer_type_takes_the_others():
    message = "unsupported operand type(s) for -: 'list' and 'int'"
    assert operand_type(message, {"val": [1], "low": 1, "high": 2}) == ("val", "int")
    joined = 'can only concatenate str (not "list") to str'
    assert operand_type(joined, {"text": "a", "data": [1], "more": [2]}) == ("data", "str")
    timed = "unsupported operand type(s) for +: 'datetime.timedelta' and 'int'"
    assert operand_type(timed, {"start": 3, "end": None}) == ("start", "timedelta")
    same = "unsupported operand type(s) for +: 'int' and 'int'"
    assert operand_type(same, {"a": 1}) is None
    error = TypeError(timed)
    assert learn(error, {"start": 3}) == Lesson(
        "start", Want.TYPE, ("timedelta",), cause=(f"TypeError {timed}")
    )
    [start] = synthesize_call(
        "siblings_pkg.periods.Period.ends", 10, repairs=(learn(error, {"start": 3}).literal(),)
    )[2].values()
    assert isinstance(start, datetime.timedelta)


def test_the_receivers_listing_names_what_it_has():
    shelf = Shelf(("Emma", "Dune"))
    assert receiver_listing(shelf) == ("Dune", "Emma")  # sorted: the same first every time
    try:
        shelf.pages("lorem")
    except LookupError as error:
        lesson = learn(error, {"title": "lorem"}, receiver=shelf)
    assert lesson is not None and (lesson.want, lesson.names) == (Want.ONE_OF, ("Dune",))
    assert learn(LookupError("'x' not found"), {"title": "x"}, receiver=shelf) is None  # short
    assert may_teach("the call raised LookupError: 'lorem' not found on the shelf in call")


def test_a_method_of_a_richer_number_turns_the_first_number_into_one():
    try:
        floor_steps(7, 1, 3)
    except AttributeError as error:
        assert richer_number(error, {"value": 7, "low": 1, "high": 3}) == ("value", "Decimal")
        assert richer_number(error, {"value": "7"}) is None  # no number argument to change
    assert floor_steps(decimal.Decimal(7), 1, 3) == 3
