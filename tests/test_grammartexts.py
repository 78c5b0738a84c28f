"""Sentences of a grammar a package declares in yacc-style rule docstrings (``rulegrammar_pkg``):
every production gets the shortest sentence that uses it, the self-driven capture feeds them to
the package's parse driver, and that reaches rule methods a made-up word never does. Also: the
drivers of a held entry point's own class run among the first, an untyped command-line value
named like a number is given a number, and tuples an unpacking joins (``a, b, c, d = x + y``) are
typed like tuples unpacked alone (``joined_pkg``)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from apiprof.engine.scan.drive import beside_held, driver_rank
from apiprof.engine.scenarios.argvparser import argv_tokens
from apiprof.engine.scenarios.drive import drive_capture
from apiprof.engine.scenarios.drivenspecs import driver_spec
from apiprof.engine.scenarios.grammartexts import (
    Grammar,
    grammar_spec,
    package_grammar,
    productions_of,
    sentences,
)
from apiprof.engine.scenarios.spec import ScenarioSpec, compile_scenario
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.model.records import ScenarioSource

RULES = "rulegrammar_pkg.parser.Parser"
WATCHED = [
    f"{RULES}.p_statement_let",
    f"{RULES}.p_expr_plus",
    f"{RULES}.p_term_group",
    f"{RULES}.p_term_index",
    "rulegrammar_pkg.lexer.Lexer.t_quoted_chars",
]


def test_a_rule_docstring_reads_as_its_productions():
    assert productions_of("expr : expr '+' term\n     | term %prec UMINUS\n     |") == [
        ("expr", ("expr", "'+'", "term")),
        ("expr", ("term",)),
        ("expr", ()),
    ]
    assert productions_of("pipe : a '|' b") == [("pipe", ("a", "'|'", "b"))]  # a quoted bar
    assert productions_of("Parse a statement: returns its tree.") == []  # prose is no rule


def test_each_production_gets_the_shortest_sentence_that_uses_it():
    grammar = Grammar(
        productions=[
            ("s", ("e",)),
            ("e", ("e", "'+'", "t")),
            ("e", ("t",)),
            ("t", ("NUM",)),
            ("t", ("'('", "e", "')'")),
            ("t", ("ODD",)),  # a terminal nothing says how to write: never used
        ],
        start="s",
        samples={"NUM": "7"},
    )
    assert sentences(grammar) == ["7", "7 + 7", "( 7 )"]


def test_the_package_grammar_covers_every_rule_and_parses():
    import rulegrammar_pkg

    texts = package_grammar("rulegrammar_pkg")
    # one per production (the start symbol's `start`), reserved words and literals as
    # written, then the quoted state entered, run through and left
    assert texts == (
        "let a = 5",
        "5",
        "5 -> a",
        "5 + 5",
        "a",
        "( 5 )",
        "a [ 5 ]",
        '"a"',
    )
    assert all(rulegrammar_pkg.parse(text) is not None for text in texts)
    assert package_grammar("tiny_pkg") == ()  # no rules: nothing to write


def test_a_fresh_worker_numbers_the_sentences_alike():
    """A replaying worker may not have imported the modules holding the rules yet (``parse``
    imports them on first use): the grammar is read after importing every public module."""
    code = (
        "import sys, rulegrammar_pkg\n"
        "assert 'rulegrammar_pkg.parser' not in sys.modules\n"
        "from apiprof.engine.scenarios.grammartexts import grammar_text\n"
        "print(grammar_text('rulegrammar_pkg', 6))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent / "fixtures"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "a [ 5 ]"


@pytest.fixture(scope="module")
def parse_driver() -> ScenarioSpec:
    spec, failure = find_synthesized_scenario("rulegrammar_pkg.parse", (10,))
    assert spec is not None, failure
    return spec


def test_the_grammar_reaches_rules_a_made_up_text_does_not(parse_driver):
    found = drive_capture(WATCHED, [parse_driver])
    assert parse_driver.id not in found.reach  # a word is a NAME: none of these rules
    reached = {name for names in found.reach.values() for name in names}
    assert reached == set(WATCHED)
    trips = [ref for ref in found.reach if "<- grammar:rulegrammar_pkg#" in ref]
    assert trips and all(ref.startswith(f"roundtrip:{parse_driver.id} <- ") for ref in trips)
    copied = [call for call in found.calls if call.qualname == f"{RULES}.p_term_index"]
    assert copied and copied[0].payload  # p is a plain list: replayed from a copy


def test_a_grammar_driver_is_rebuilt_from_its_name(parse_driver):
    ref = f"roundtrip:{parse_driver.id} <- grammar:rulegrammar_pkg#6"
    spec = driver_spec(ref, {parse_driver.id: parse_driver})
    assert spec is not None
    assert compile_scenario(spec, None)() == ("index", "a", 5)
    assert grammar_spec("grammar:not a name#1") is None
    assert grammar_spec("grammar:rulegrammar_pkg#x") is None


def _spec(qualname: str) -> ScenarioSpec:
    return ScenarioSpec(f"synth:{qualname}", qualname, ScenarioSource.SYNTHESIZED, "", "", "")


def test_drivers_of_a_held_entry_points_class_take_every_other_place():
    ranked = [_spec(q) for q in ("p.load", "p.dump", "p.En.to_words", "p.Fr.to_words", "p.Fr.x")]
    held = ["p.Fr.merge"]
    order = [spec.qualname for spec in beside_held(ranked, held)]
    assert order == ["p.Fr.to_words", "p.load", "p.Fr.x", "p.dump", "p.En.to_words"]
    assert beside_held(ranked, []) == ranked


def test_drivers_with_mended_arguments_come_after_the_other_made_up_ones():
    repaired = replace(_spec("p.Bits.bfloat"), source=ScenarioSource.REPAIRED)
    specs = [(repaired, False), (_spec("p.Bits.se"), False), (_spec("p.load"), True)]
    order = [spec.qualname for spec, _ in sorted(specs, key=driver_rank)]
    assert order == ["p.load", "p.Bits.se", "p.Bits.bfloat"]


def test_an_untyped_command_line_value_named_like_a_number_is_one():
    parser = argparse.ArgumentParser()
    parser.add_argument("number")
    parser.add_argument("source")
    assert argv_tokens(parser) == ("=1", "source")


def test_a_command_line_value_whose_help_lists_its_choices_is_the_first_of_them():
    parser = argparse.ArgumentParser()
    parser.add_argument("part", help="One of 'major', 'minor', 'patch', or 'prerelease'")
    parser.add_argument("source", help="the file to read")
    assert argv_tokens(parser) == ("=major", "source")


def test_a_tool_converting_its_number_itself_is_called_with_one():
    spec, failure = find_synthesized_scenario("rulegrammar_pkg.main", (10,))
    assert spec is not None, failure
    assert spec.source is ScenarioSource.REPAIRED
    assert "sys.argv names '1'" in spec.description


def test_tuples_an_unpacking_joins_are_pairs_of_what_their_names_are():
    spec, failure = find_synthesized_scenario("joined_pkg.Speller.merge", (10,))
    assert spec is not None, failure
    assert spec.source is ScenarioSource.HEURISTICS
    args = compile_scenario(spec, 10).__globals__["args"]  # type: ignore[attr-defined]
    assert [len(pair) for pair in args] == [2, 2]
    assert all(isinstance(pair[1], int) for pair in args)  # cnum, nnum: compared to numbers


def test_a_constructor_parameter_looked_up_in_a_registry_is_one_of_its_keys():
    spec, failure = find_synthesized_scenario("joined_pkg.ops.Operation", (10,))
    assert spec is not None, failure
    assert spec.source is ScenarioSource.HEURISTICS
    assert compile_scenario(spec, 10).__globals__["args"][1] in ("+", "-")  # type: ignore[attr-defined]
