"""The ``results`` source: entry points nothing else could call take what the package's own
related working calls make — a returned document, a processor an extension leaves registered
in a converter, a node of the kind a visitor method names (from a text of the parser's grammar
grown from the package's punctuation), a mapping with the keys the error asked for. Each rule
is checked on ``results_pkg`` with the source and without it (``--no-results``), where the same
entry point stays rejected."""

from __future__ import annotations

import pytest
from sourcehelp import made_only_by
from test_repair import scan_summary  # a fixture package scanned through the command line
from test_self_drive import run  # apiprof's commands in a subprocess, fixtures importable

from apiprof.engine.scenarios import resultsearch
from apiprof.engine.scenarios.building import SOURCES
from apiprof.engine.scenarios.grown import grown_texts, kinds, tokens
from apiprof.engine.scenarios.reachable import follow, reachable, shown_path
from apiprof.engine.scenarios.stops import Running, Stop, watching
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.taken import Taken
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import Coverage, Failure, ScenarioSource

RESULTS_ALONE = tuple(source for source in SOURCES if source != "prepare")
"""The sources without the prepared receivers, which reach a receiver a sibling method left
ready (``MarkerExtension.registered`` after ``install``) first (tests/test_siblings.py)."""
WITHOUT_RESULTS = tuple(source for source in RESULTS_ALONE if source != "results")


def taken_by(qualname: str) -> str:
    """The description of the scenario the source found (checked to run, as measured)."""
    return made_only_by(qualname, ScenarioSource.RESULTS, "taken=(", RESULTS_ALONE, WITHOUT_RESULTS)


RULES = {
    # a value of the class the rejected call was given, returned by a related call (by name)
    "results_pkg.unparse": "document: the dict that results_pkg.document.parse",
    # a receiver held by what a working call leaves in its argument: a registry's item
    "results_pkg.MarkerProcessor.run": (
        "receiver: the MarkerProcessor that MarkerExtension.install() leaves in its receiver, "
        "at self.converter.processors[0]"
    ),
    # a receiver as a sibling method left it (install() stored the converter it extended)
    "results_pkg.MarkerExtension.registered": (
        "receiver: the MarkerExtension that MarkerExtension.install() leaves in its receiver"
    ),
    # the node a visitor method names, parsed from a text grown from the package's tokens
    "results_pkg.Interpreter.visit_pipe": "node: the dict that results_pkg.expressions."
    "compile_expression(",
    "results_pkg.Interpreter.visit_not_expression": "compile_expression('!",
    "results_pkg.Interpreter.visit_subexpression": "compile_expression(",
    # a dispatcher takes a node of a kind its visitor has a method for
    "results_pkg.Interpreter.visit": "node: the dict that results_pkg.expressions.",
    # a mapping with the key the error asked for ('style'), returned by a method of the package
    "results_pkg.render_rule": "settings: the dict that Theme.settings() returns",
}


@pytest.mark.parametrize("qualname", list(RULES))
def test_each_rule_takes_what_a_working_call_made_and_says_so(qualname):
    assert RULES[qualname] in taken_by(qualname)


def test_the_repair_mends_the_other_arguments_around_a_taken_receiver():
    spec, failure = find_synthesized_scenario("results_pkg.MarkerProcessor.run_on", (10,))
    assert spec is not None, failure
    assert "taken=(" in spec.setup and "repairs=(" in spec.setup
    assert "receiver: the MarkerProcessor that MarkerExtension.install()" in spec.description
    assert "learned from KeyError 'text': page a dict with key 'text'" in spec.description
    assert try_scenario(spec)[0] is None
    alone, _ = find_synthesized_scenario(
        "results_pkg.MarkerProcessor.run_on", (10,), sources=WITHOUT_RESULTS
    )
    assert alone is None


def test_what_no_working_call_makes_is_said_in_the_reason():
    spec, failure = find_synthesized_scenario("results_pkg.Interpreter.visit_slice", (10,))
    assert spec is None and failure is not None
    assert "the package's related working calls made no slice node" in failure.reason


def test_the_search_is_bounded_in_calls(monkeypatch):
    tried: list[object] = []
    real = resultsearch.try_scenario

    def counted(spec, *args, **kwargs):
        tried.append(spec)
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(resultsearch, "try_scenario", counted)
    monkeypatch.setattr(resultsearch, "MAX_TRIALS", 1)
    find_synthesized_scenario("results_pkg.Interpreter.visit_slice", (10,))
    assert len(tried) <= 1


def test_a_producer_that_ended_its_worker_is_not_called_again():
    announced: list[Running] = []
    with watching(announced.append, ()):
        spec, _ = find_synthesized_scenario("results_pkg.unparse", (10,))
    assert spec is not None
    producer = "results:results_pkg.unparse <- results_pkg.document.parse"
    calling = next(run for run in announced if run.scenario == producer)
    died = Stop.of(calling, Failure(Coverage.CRASHED, "segmentation fault"))
    announced.clear()
    with watching(announced.append, [died]):
        again, failure = find_synthesized_scenario("results_pkg.unparse", (10,))
    assert again is None and failure is not None  # parse alone made its document
    assert producer not in {run.scenario for run in announced}


def test_taken_values_round_trip_as_plain_data():
    taken = Taken("self", "pkg.Ext.extend", 2, "arg0", (("attr", "processors"), ("iter", 0)), "P")
    assert Taken.from_literal(taken.literal()) == taken
    assert eval(repr(taken.literal())) == taken.literal()  # written into the scenario's setup
    assert "receiver: the P that Ext.extend() leaves in its argument 0" in taken.describe()


def test_reachable_objects_are_found_again_by_their_path():
    from results_pkg.extensions import Converter, MarkerExtension, MarkerProcessor

    converter = Converter([MarkerExtension()])
    found = {
        shown_path(path): held
        for path, held in reachable(converter, "results_pkg")
        if isinstance(held, MarkerProcessor)
    }
    assert list(found) == [".processors[0]"]
    rebuilt = Converter([MarkerExtension()])
    path = next(p for p, held in reachable(rebuilt, "results_pkg") if shown_path(p) in found)
    assert isinstance(follow(rebuilt, path), MarkerProcessor)


def test_reachable_reads_slots_and_is_bounded():
    class Slotted:
        __slots__ = ("child", "unset")

    Slotted.__module__ = "results_pkg.slotted"
    root = Slotted()
    root.child = {"deep": [1, 2, 3]}
    paths = [shown_path(path) for path, _ in reachable(root, "results_pkg")]
    assert ".child" in paths and ".child['deep'][2]" in paths
    wide = [[f"{row}-{column}" for column in range(30)] for row in range(30)]
    assert len(list(reachable(wide, "results_pkg", limit=50))) == 50
    assert len(list(reachable([list(range(1000))], "results_pkg"))) == 2 + 40  # items capped


def test_a_text_too_slow_to_parse_is_passed_over(monkeypatch):
    import time

    from apiprof.engine.scenarios import grown

    monkeypatch.setattr(grown, "TRY_SECONDS", 0.05)

    def slow_on_pipes(text):
        if "|" in text:
            time.sleep(1)
        return {"type": text}

    texts = grown.grown_texts(slow_on_pipes, ("a",), "results_pkg")
    assert texts and not any("|" in text for text in texts)


def test_grammar_texts_grow_from_the_packages_punctuation():
    from results_pkg.expressions import compile_expression

    assert {"|", ".", "!"} <= set(tokens("results_pkg"))
    texts = grown_texts(compile_expression, ("a",), "results_pkg")
    shown = set().union(*(kinds(compile_expression(text), "results_pkg") for text in texts))
    assert {"type=field", "type=pipe", "type=not_expression", "type=subexpression"} <= shown
    assert len(texts) == len(set(texts)) <= 8  # only texts that show a new kind are kept


# -- a real scan, through the command line ------------------------------------------------------


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """The default command, and ``--no-results`` (both with ``--no-prepare``: see RESULTS_ALONE)."""
    home = tmp_path_factory.mktemp("results")
    on = scan_summary(home, "on", "--no-prepare", package="results_pkg")
    off = scan_summary(home, "off", "--no-results", "--no-prepare", package="results_pkg")
    return home, {"on": on, "off": off}


def test_the_default_scan_takes_values_and_shows_where_they_came_from(scans):
    home, found = scans
    on, off = found["on"], found["off"]
    assert on["profiled_by_source"]["results"] >= len(RULES)
    assert "results" not in off["profiled_by_source"]
    assert off["profiled"] <= on["profiled"] - len(RULES)
    missed = {name for group in on["not_profiled_by_reason"] for name in group["entry_points"]}
    assert missed == {"results_pkg.Interpreter.visit_slice"}
    shown = run("apiprof", "show", "results_pkg.MarkerProcessor.run", "--db", "on.db", cwd=home)
    assert shown.returncode == 0, shown.stderr
    assert "[results]" in shown.stdout
    assert "at self.converter.processors[0]" in shown.stdout
