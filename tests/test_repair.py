"""Error-guided argument repair: a rejected call's exception says what one parameter wanted
(a key, an attribute, a mapping, a file, parameter names, command-line arguments), and the
argument search rebuilds that parameter and calls again. Each rule is checked on
``repair_pkg`` with the repair and without it (``--no-repair``), where the same entry point
stays rejected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from apiprof.engine.scenarios import repair
from apiprof.engine.scenarios.building import SOURCES
from apiprof.engine.scenarios.lessons import Lesson, Want, learn, merged
from apiprof.engine.scenarios.synth import synthesize_call
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import ScenarioSource

FIXTURES = Path(__file__).parent / "fixtures"

WITHOUT_REPAIR = tuple(source for source in SOURCES if source != "repair")


def repaired(qualname: str) -> str:
    """The description of the scenario the repair found (checked to run, as measured)."""
    spec, failure = find_synthesized_scenario(qualname, (10,))
    assert spec is not None, failure
    assert spec.source is ScenarioSource.REPAIRED
    assert "repairs=(" in spec.setup  # the measuring worker rebuilds the same arguments
    argv = list(sys.argv)
    assert try_scenario(spec)[0] is None  # as the worker measuring it: sys.argv may change
    sys.argv[:] = argv
    without, _ = find_synthesized_scenario(qualname, (10,), sources=WITHOUT_REPAIR)
    assert without is None, "the other sources already call it: the rule is not what made it"
    return spec.description


def test_a_missing_attribute_gives_the_packages_class_that_has_it():
    description = repaired("repair_pkg.doubled_weight")
    assert "learned from AttributeError 'weight': item an object with attribute 'weight'" in (
        description
    )
    _, args, _ = synthesize_call(
        "repair_pkg.doubled_weight",
        10,
        repairs=(Lesson("item", Want.ATTRIBUTES, ("weight",)).literal(),),
    )
    assert type(args[0]).__name__ == "Record"  # set in its __init__: self.weight = weight


def test_a_missing_attribute_no_package_class_has_gives_a_standard_object():
    description = repaired("repair_pkg.first_child_name")
    assert "attribute 'firstChild'" in description
    spec, _ = find_synthesized_scenario("repair_pkg.first_child_name", (10,))
    assert spec is not None and "DOM Element" in spec.inputs


def test_a_missing_method_nothing_has_gives_a_namespace_carrying_a_callable():
    description = repaired("repair_pkg.notify")
    assert "target an object with attribute 'on_event()'" in description


def test_missing_keys_accumulate_into_one_dict():
    description = repaired("repair_pkg.label")
    assert "value a dict with keys 'name', 'data'" in description


def test_a_value_inside_a_repaired_dict_is_repaired_in_turn():
    description = repaired("repair_pkg.extra_names")
    assert "value a dict with key 'extra'" in description
    assert "value['extra'] an object with attribute 'items()'" in description  # a dict


def test_the_elements_of_a_list_can_be_what_is_repaired():
    description = repaired("repair_pkg.count_words")
    assert "elements of tokens a dict with key 'text'" in description


def test_a_list_indexed_by_strings_becomes_a_mapping():
    description = repaired("repair_pkg.lookup_all")
    assert "table a mapping with string keys" in description


def test_a_missing_file_becomes_one_the_packages_writer_wrote():
    description = repaired("repair_pkg.load")
    assert "source the path of a file that exists" in description
    _, args, _ = synthesize_call(
        "repair_pkg.load", 10, repairs=(Lesson("source", Want.FILE).literal(),)
    )
    text = Path(args[0]).read_text()
    assert text and all(" = " in line for line in text.splitlines())  # what dumps writes


def test_a_c_style_missing_argument_error_names_the_parameters():
    description = repaired("repair_pkg.native_repeat")
    assert "the call takes the parameters 'width', 'text'" in description
    _, args, _ = synthesize_call(
        "repair_pkg.native_repeat",
        10,
        repairs=(Lesson("", Want.NAMES, ("width", "text")).literal(),),
    )
    assert isinstance(args[0], int) and isinstance(args[1], str)  # typed by the name rules


def test_an_argument_of_the_wrong_builtin_type_gets_the_one_named():
    description = repaired("repair_pkg.native_scale")
    assert "learned from TypeError native_scale() argument 2 must be dict" in description
    assert "table of type dict" in description


def test_an_optional_parameter_its_none_default_fails_on_is_passed_what_it_wants():
    description = repaired("repair_pkg.scaled")
    assert "learned from TypeError 'NoneType' object is not iterable: scale of type list" in (
        description
    )


@pytest.mark.parametrize("qualname", ["repair_pkg.main", "repair_pkg.cli"])
def test_a_usage_line_gives_sys_argv_naming_an_input_file(qualname):
    before = list(sys.argv)
    description = repaired(qualname)
    assert "sys.argv names 'infile'" in description
    assert sys.argv == before  # only the worker measuring it keeps the new sys.argv


def test_what_is_still_rejected_says_what_the_errors_asked_for(monkeypatch):
    monkeypatch.setattr(repair, "MAX_REPAIR_CALLS", 3)  # a mapping, 'name', then out of calls
    spec, failure = find_synthesized_scenario("repair_pkg.label", (10,))
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
    unknown = learn(ValueError("bad"), {"first": 1})
    assert unknown is None  # a message it does not understand teaches nothing


# -- a real scan, through the command line ------------------------------------------------------


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(FIXTURES), COLUMNS="200")
    bin_dir = Path(sys.executable).parent
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """``repair_pkg`` scanned with the default command and with ``--no-repair``."""
    home = tmp_path_factory.mktemp("repair")
    found = {}
    for name, extra in (("on", []), ("off", ["--no-repair"])):
        out = run(
            "apiprof-scan",
            "repair_pkg",
            *("--db", f"{name}.db", "--summary-json", f"{name}.json"),
            *("--repeat", "3", "--sizes", "10,30", "--quiet", "--no-self-drive", *extra),
            cwd=home,
        )
        assert out.returncode == 0, out.stderr
        [summary] = json.loads((home / f"{name}.json").read_text())["packages"]
        found[name] = summary
    return home, found


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
