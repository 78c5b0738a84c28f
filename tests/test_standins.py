"""Classes constructed in C, timed on Python 3.11 through a stand-in the scenario calls by
name (``engine/measure/standins.py``); 3.12+ sees class calls and needs none."""

from __future__ import annotations

import enum
import functools
import json
from pathlib import Path

import pytest
from test_self_drive import run  # apiprof's commands in a subprocess, fixtures importable

from apiprof.engine.measure.probes import HAS_MONITORING
from apiprof.engine.measure.standins import stand_in_for, stand_ins_for
from apiprof.engine.scenarios.spec import ScenarioSpec, compile_scenario
from apiprof.model.records import ScenarioSource

FIXTURES = Path(__file__).parent / "fixtures"


class CBuilt(Exception):
    pass


class Looked(enum.Enum):
    ONE = 1


class PythonBuilt:
    def __init__(self, value: int = 0) -> None:
        self.value = value


def test_a_scenarios_names_for_an_object_are_rebound_after_its_setup():
    spec = ScenarioSpec(
        "synth:x",
        "x",
        ScenarioSource.SYNTHESIZED,
        "",
        "target = int\nalso = int\nkept = (int,)\nfirst = target('7')",
        "(target('5'), also('6'), kept[0]('8'), first)",
    )
    stand_in = lambda text: f"stand-in {text}"  # noqa: E731
    assert compile_scenario(spec, None, stand_ins={id(int): stand_in})() == (
        "stand-in 5",  # names bound to the object reach the stand-in
        "stand-in 6",
        8,  # containers are arguments, not calls: left alone
        7,  # setup ran before the rebinding
    )


@pytest.mark.skipif(HAS_MONITORING, reason="3.12+ times class calls where they are made")
def test_on_311_a_call_the_hook_cannot_see_gets_a_stand_in_that_makes_the_real_call():
    stand_in = stand_in_for(CBuilt)
    assert stand_in is not None and stand_in is stand_in_for(CBuilt)  # one per class
    made = stand_in("stop")
    assert type(made) is CBuilt and made.args == ("stop",)
    assert stand_in.__name__ == "CBuilt"
    assert stand_in_for(PythonBuilt) is None  # its own __init__ is timed instead
    assert stand_in_for(Looked) is not None  # the enum's metaclass answers the call
    assert stand_in_for(len) is None  # a builtin: the hook reports it
    assert stand_in_for(test_on_312_no_stand_in_is_used) is None  # Python code is timed as is
    cached = functools.cache(abs)
    assert stand_in_for(cached) is not None and stand_in_for(cached)(-3) == 3
    assert stand_ins_for([CBuilt, PythonBuilt, len]) == {id(CBuilt): stand_in}


@pytest.mark.skipif(not HAS_MONITORING, reason="3.11 needs the stand-in")
def test_on_312_no_stand_in_is_used():
    assert stand_ins_for([CBuilt, PythonBuilt, len]) == {}


# -- a real scan, through the command line ------------------------------------------------------


def scan(home: Path, *extra: str) -> dict:
    out = run(
        "apiprof-scan",
        "cclass_pkg",
        *("--db", "scan.db", "--summary-json", "scan.json", "--repeat", "3", "--quiet"),
        *extra,
        cwd=home,
    )
    assert out.returncode == 0, out.stderr
    [summary] = json.loads((home / "scan.json").read_text())["packages"]
    return summary


def show(home: Path, qualname: str) -> dict:
    out = run("apiprof", "show", qualname, "--db", "scan.db", "--json", cwd=home)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_class_built_in_c_is_profiled_on_every_python(tmp_path):
    summary = scan(tmp_path)
    assert summary["coverage"] == {"profiled": 3}  # the enum's lookup and the cached call too
    shown = show(tmp_path, "cclass_pkg.Interrupted")
    wall, allocated = shown["metrics"]["wall_ns"], shown["metrics"]["alloc_incl_bytes"]
    assert wall["count"] > 0 and 0 < wall["median"] < 1_000_000
    assert allocated["median"] > 0  # the exception object itself is charged to the call


def test_on_311_a_class_reached_another_way_says_so(tmp_path):
    summary = scan(
        tmp_path,
        "--scenarios",
        str(FIXTURES / "cclass_attribute.toml"),
        "--no-synth",
        "--no-docstrings",
    )
    status = {missed["qualname"]: missed for missed in summary["not_profiled"]}
    if HAS_MONITORING:
        assert "cclass_pkg.Interrupted" not in status
        return
    missed = status["cclass_pkg.Interrupted"]
    assert missed["status"] == "unsupported"
    assert "a name of its own" in missed["reason"] and "scenario file" in missed["reason"]
