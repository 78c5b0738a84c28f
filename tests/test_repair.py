"""Error-guided argument repair: a rejected call's exception says what one parameter wanted
(a key, an attribute, a mapping, a file, parameter names, command-line arguments), and the
argument search rebuilds that parameter and calls again. Each rule is checked on
``repair_pkg`` with the repair and without it (``--no-repair``), where the same entry point
stays rejected."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sourcehelp import made_only_by
from test_self_drive import run  # apiprof's commands in a subprocess, fixtures importable

from apiprof.engine.scenarios import repair
from apiprof.engine.scenarios.building import SOURCES
from apiprof.engine.scenarios.choices import required_value
from apiprof.engine.scenarios.lengths import receiver_length, wanted_length
from apiprof.engine.scenarios.lessons import learn
from apiprof.engine.scenarios.stops import Running, Stop, scenario_key, watching
from apiprof.engine.scenarios.synth import synthesize_call
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.wants import Lesson, Want, merged
from apiprof.model.records import Coverage, Failure, ScenarioSource

REPAIR_ALONE = tuple(source for source in SOURCES if source != "results")
"""The sources with the repair as the last resort: the values the package's working calls make
(tests/test_results.py) would call some of these fixtures before the repair is asked."""
WITHOUT_REPAIR = tuple(source for source in REPAIR_ALONE if source != "repair")


def repaired(qualname: str) -> str:
    """The description of the scenario the repair found (checked to run, as measured)."""
    return made_only_by(
        qualname, ScenarioSource.REPAIRED, "repairs=(", REPAIR_ALONE, WITHOUT_REPAIR
    )


RULES = {
    # a missing attribute: the package's class whose instances have it (self.weight = ...)
    "repair_pkg.doubled_weight": (
        "learned from AttributeError 'weight': item an object with attribute 'weight'"
    ),
    # ... no class of the package has it: a standard-library object (a DOM element) does
    "repair_pkg.first_child_name": "node an object with attribute 'firstChild'",
    # ... nothing has it and it is called: a namespace carrying a callable
    "repair_pkg.notify": "target an object with attribute 'on_event()'",
    # missing keys, asked one after the other, accumulate into one dict
    "repair_pkg.label": "value a dict with keys 'name', 'data'",
    # a value under a key of the repaired dict is repaired in turn (a dict: it asks items())
    "repair_pkg.extra_names": "value['extra'] an object with attribute 'items()'",
    # the elements of a list argument
    "repair_pkg.count_words": "elements of tokens a dict with key 'text'",
    # a list indexed by strings
    "repair_pkg.lookup_all": "table a mapping with string keys",
    # a path that does not exist
    "repair_pkg.load": "source the path of a file that exists",
    # a C function's "missing required argument 'width' (pos 1)", then 'text' (pos 2)
    "repair_pkg.native_repeat": "the call takes the parameters 'width', 'text'",
    # a C function's "argument 2 must be dict"
    "repair_pkg.native_scale": "table of type dict",
    # an optional parameter whose default of None the call iterates
    "repair_pkg.scaled": "learned from TypeError 'NoneType' object is not iterable: scale of type list",
    # ... an attribute of the receiver its constructor left at a default of None
    "repair_pkg.Basket.heaviest": "learned from TypeError 'NoneType' object is not iterable: "
    "self.stock of type list",
    # ... an attribute the receiver's constructor stored from a required parameter
    "repair_pkg.Journal.note": "learned from AttributeError 'function' object has no attribute "
    "'write': self.f an object with attribute 'write()'",
    # the receiver's constructor refused its argument: every attribute it reads, at once
    "repair_pkg.ColouredReport.paint": "self.options an object with attributes 'width', "
    "'colour', 'keys_counted'",
    # a parser quoting the literal it looked for in a text
    "repair_pkg.sections": 'learned from ValueError "usage:" (case-insensitive) not found.: '
    "doc a text containing 'usage:'",
    # the positional items of *args
    "repair_pkg.heaviest_of": "elements of items an object with attribute 'weight'",
    # a key looked up lazily in C: the mapping arguments lacking it are told by the arguments
    "repair_pkg.values_under": "elements of mappings a dict with key '",
    # numbers read with an explicit base: their decimal text
    "repair_pkg.allowed_ports": "elements of ports of type digits",
    # an argument used as a key: text, then the mappings hold that text
    "repair_pkg.plucked": "learned from KeyError: the function passed as key was looked up "
    "as a key: key of type str",
    # an argument naming an attribute: one the objects have
    "repair_pkg.invoked": "named an attribute of the object: name '",
    # a main() exiting with its usage line; the same from argparse (usage on stderr)
    # a fixed-width view refusing its receiver's length: by the class's constructor of a
    # length, else by its constructor at the size that makes it that long (bytes: 8 bits each)
    "repair_pkg.BitWord.half": "<BitWord instance>: repaired (from_zeros(16), 16 long",
    "repair_pkg.Digest.checksum": "received a length of 80.: self 24 long",
    # a loader that adds its own suffix to a name: a stem whose file with it exists
    "repair_pkg.Shelf.load": "name the path of a file, less its suffix '.tmpl'",
    # a message naming the one value a parameter of the receiver's constructor may have
    # (the constructor's own call finds it among the alternatives of `year`: a False)
    "repair_pkg.YearZero.label": "learned from ValueError year must be 0: self.year 0",
    "repair_pkg.main": "sys.argv names 'infile'",
    "repair_pkg.cli": "learned from the argument parser of SystemExit 'usage: repair-cli [-h] "
    "infile': sys.argv names 'infile'",
}


@pytest.mark.parametrize("qualname", list(RULES))
def test_each_rule_builds_what_the_error_asked_for_and_says_so(qualname):
    before = list(sys.argv)
    assert RULES[qualname] in repaired(qualname)
    assert sys.argv == before  # only the worker measuring a main() keeps the new sys.argv


def built(qualname: str, lesson: Lesson) -> tuple[object, ...]:
    """The arguments synthesis builds for ``qualname`` with ``lesson`` learned."""
    return synthesize_call(qualname, 10, repairs=(lesson.literal(),))[1]


def test_the_class_with_the_attribute_is_the_packages_own():
    [item] = built("repair_pkg.doubled_weight", Lesson("item", Want.ATTRIBUTES, ("weight",)))
    assert type(item).__name__ == "Record"  # set in its __init__: self.weight = weight


def test_the_existing_file_holds_what_the_packages_writer_writes():
    [path] = built("repair_pkg.load", Lesson("source", Want.FILE))
    text = Path(str(path)).read_text()
    assert text and all(" = " in line for line in text.splitlines())  # what dumps writes


def test_learned_parameter_names_are_typed_by_the_name_rules():
    width, text = built("repair_pkg.native_repeat", Lesson("", Want.NAMES, ("width", "text")))
    assert isinstance(width, int) and isinstance(text, str)


def test_what_is_still_rejected_says_what_the_errors_asked_for(monkeypatch):
    monkeypatch.setattr(repair, "MAX_REPAIR_CALLS", 3)  # a mapping, 'name', then out of calls
    spec, failure = find_synthesized_scenario("repair_pkg.label", (10,), sources=REPAIR_ALONE)
    assert spec is None and failure is not None
    assert "list indices must be integers" in failure.reason  # what the plain call raised
    assert "repair tried learned from KeyError 'name': value a dict with key 'name'" in (
        failure.reason
    )
    assert "then the call raised KeyError: 'data'" in failure.reason


def test_lessons_round_trip_as_literals_and_accumulate():
    first = Lesson("token", Want.KEYS, ("type",), cause="KeyError 'type'")
    assert Lesson.from_literal(first.literal()) == first
    both = merged((first,), Lesson("token", Want.KEYS, ("data",), cause="KeyError 'data'"))
    assert both == (Lesson("token", Want.KEYS, ("type", "data"), cause=both[0].cause),)
    replaced = merged(both, Lesson("token", Want.MAPPING, cause="TypeError"))
    assert [lesson.want for lesson in replaced] == [Want.MAPPING]


def test_learning_reads_the_object_the_failing_expression_worked_on():
    given = {"a": [1, 2], "b": {"x": 1}}
    try:
        given["b"]["missing"]
    except KeyError as error:
        lesson = learn(error, {"first": given["a"], "second": given["b"]})
    assert lesson == Lesson("second", Want.KEYS, ("missing",), cause="KeyError 'missing'")
    try:
        given["b"]["missing"]
    except KeyError as error:
        lesson = learn(error, {"value": given})  # the dict that lacked it, not the outer one
    assert lesson is not None and lesson.parameter == "value['b']"
    unknown = learn(ValueError("bad"), {"first": 1})
    assert unknown is None  # a message it does not understand teaches nothing


# -- a real scan, through the command line ------------------------------------------------------


def scan_summary(home: Path, name: str, *extra: str, package: str = "repair_pkg") -> dict:
    """``package`` scanned through the command line into ``name``.db: its summary."""
    options = ("--repeat", "3", "--sizes", "10,30", "--quiet", "--no-self-drive", *extra)
    files = ("--db", f"{name}.db", "--summary-json", f"{name}.json")
    out = run("apiprof-scan", package, *files, *options, cwd=home)
    assert out.returncode == 0, out.stderr
    return json.loads((home / f"{name}.json").read_text())["packages"][0]


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """The default command, and ``--no-repair`` (both with ``--no-results``: see REPAIR_ALONE)."""
    home = tmp_path_factory.mktemp("repair")
    on = scan_summary(home, "on", "--no-results")
    return home, {"on": on, "off": scan_summary(home, "off", "--no-repair", "--no-results")}


def test_the_default_scan_repairs_and_says_what_it_learned(scans):
    home, found = scans
    on, off = found["on"], found["off"]
    assert on["profiled"] == on["discovered"]
    assert on["profiled_by_source"]["repaired"] >= 10
    assert "repaired" not in off["profiled_by_source"]
    assert off["profiled"] <= on["profiled"] - 10
    shown = run("apiprof", "show", "repair_pkg.label", "--db", "on.db", cwd=home)
    assert shown.returncode == 0, shown.stderr
    assert "[repaired]" in shown.stdout
    assert "learned from KeyError 'name', KeyError 'data'" in shown.stdout


def test_a_repaired_call_that_ended_its_worker_is_not_made_again():
    announced: list[Running] = []
    with watching(announced.append, ()):
        spec, _ = find_synthesized_scenario("repair_pkg.lookup_all", (10,), sources=REPAIR_ALONE)
    assert spec is not None
    # the worker died in the repaired call: a new worker gives that call up, not the rest
    keys = [run.key for run in announced]
    assert keys.count(scenario_key(spec)) >= 2  # the repair's own call, then the trial's
    mended = next(run for run in announced if run.key == scenario_key(spec))
    died = Stop.of(mended, Failure(Coverage.TIMED_OUT, "stuck in C"))
    announced.clear()
    with watching(announced.append, [died]):
        again, _ = find_synthesized_scenario("repair_pkg.lookup_all", (10,), sources=REPAIR_ALONE)
    assert announced and died.key not in {run.key for run in announced}
    assert again is None or scenario_key(again) != died.key  # another variant, mended too


def test_a_quoted_literal_is_wanted_only_when_no_argument_already_holds_it():
    from apiprof.engine.scenarios.quoted import text_lacking, wanted_literal

    assert wanted_literal('"usage:" (case-insensitive) not found.') == "usage:"
    assert wanted_literal("expected 'BEGIN' at line 1") == "BEGIN"
    assert wanted_literal('missing "[section]" header') == "[section]"
    assert wanted_literal("the value 'x' is of the wrong type") is None
    assert text_lacking("BEGIN", {"n": 3, "text": "lorem"}) == "text"
    assert text_lacking("lorem", {"key": "lorem", "text": "ipsum"}) is None  # our input, echoed


def test_a_number_shifted_into_a_sequence_parameter_is_told_by_what_failed_to_iterate():
    from repair_pkg import windows

    try:
        windows(8, 11)  # the second argument is taken as the sequence
    except TypeError as error:
        lesson = learn(error, {"size": 8, "step": 11})
    assert lesson == Lesson(
        "step", Want.TYPE, ("list",), cause="TypeError 'int' object is not iterable"
    )


def test_a_wanted_length_is_read_from_the_message_and_must_be_the_receivers():
    assert wanted_length("'f' dtypes must have a length in (16, 32, 64), but received 0.") == (
        16,
        0,
    )
    assert wanted_length("key must be 32 bytes long") == (32, None)
    assert wanted_length("expected length 4, got 3") == (4, 3)
    assert wanted_length("expected 2 arguments, got 3") is None
    error = "the view must have a length of 16, but received a length of 8."
    assert receiver_length(error, b"12345678", "ValueError") == Lesson(
        "self", Want.LENGTH, ("16",), cause="ValueError"
    )
    assert receiver_length(error, b"xy", "ValueError") is None  # another object was 8 long
    assert receiver_length(error, None, "ValueError") is None
    assert receiver_length(error, 16, "ValueError") is None  # no length of its own


def test_a_message_naming_the_one_accepted_value_gives_it_as_a_literal():
    assert required_value("year must be 0", {"year": 2024}) == ("year", "0")
    assert required_value("year must be 0", {"year": 0}) is None  # it was not the year
    assert required_value("year must be 0", {"month": 3}) is None  # no such parameter
    assert required_value("year must be an integer", {"year": "x"}) is None
    lesson = Lesson("year", Want.EQUALS, ("0",), cause="ValueError year must be 0")
    assert built("repair_pkg.YearZero", lesson)[0] == 0
