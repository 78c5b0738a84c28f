"""Syntax-tree nodes built from what their classes list (the ``nodes`` source): a code
generator's ``visit_X(self, n)`` gets a well-formed ``X`` whose children are leaf nodes."""

from __future__ import annotations

import pytest

from apiprof.engine.scenarios.synth import SOURCES, synthesize
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.treenodes import NodeSlots, leaf_classes, node_slots
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.engine.scenarios.visitors import visited_class
from apiprof.model.records import ScenarioSource

WITHOUT_NODES = tuple(source for source in SOURCES if source != "nodes")
UNMENDED = tuple(source for source in WITHOUT_NODES if source not in ("repair", "results"))
"""Without the error-guided repair and the working calls' values either: what the other sources
build on their own."""


def test_a_node_class_says_which_attributes_are_children_lists_and_plain_values():
    from trees_pkg import nodes

    assert node_slots(nodes.Call) == NodeSlots(single=("func",), many=("args",))
    assert node_slots(nodes.Decl) == NodeSlots(single=("init",), plain=("name", "quals"))
    assert node_slots(nodes.Name) == NodeSlots(plain=("name",))
    assert node_slots(int) is None  # no child lister: no node class


def test_leaves_are_the_tree_classes_that_hold_no_children_shortest_name_first():
    from trees_pkg import nodes

    assert leaf_classes(nodes.Call) == (nodes.Num, nodes.Name)


def test_a_visit_method_is_named_after_the_class_it_takes():
    from trees_pkg import Generator, nodes

    assert visited_class(Generator.visit_Call) is nodes.Call
    assert visited_class(Generator.visit) is None


@pytest.mark.parametrize("method", ["visit_Call", "visit_Decl", "visit_Block"])
def test_each_visit_method_gets_its_node_with_leaf_children(method):
    from trees_pkg import nodes

    qualname = f"trees_pkg.Generator.{method}"
    spec, failure = find_synthesized_scenario(qualname, (10,))
    assert spec is not None, failure
    assert try_scenario(spec)[0] is None
    assert spec.source is ScenarioSource.NODES and "n: nodes" in spec.description
    node = synthesize(qualname, None).args[0]
    assert type(node).__name__ == method.removeprefix("visit_")
    for _, child in node.children():  # every child a leaf node of the same tree
        assert isinstance(child, (nodes.Name, nodes.Num))


def test_a_list_of_children_is_sized_and_a_plain_value_is_text():
    result = synthesize("trees_pkg.Generator.visit_Block", 30)
    assert len(result.args[0].items) == 30 and result.sized
    decl = synthesize("trees_pkg.Generator.visit_Decl", None).args[0]
    assert isinstance(decl.name, str) and isinstance(decl.quals, str)


@pytest.mark.parametrize(
    "qualname",
    [
        "trees_pkg.Generator.visit",
        "trees_pkg.Generator.generic_visit",
        "trees_pkg.NodeVisitor.visit",  # annotated with the bare base class, no visit_X
        "trees_pkg.NodeVisitor.generic_visit",
    ],
)
def test_dispatchers_take_a_node_class_the_tree_has_not_its_bare_base(qualname):
    from trees_pkg import nodes

    spec, failure = find_synthesized_scenario(qualname, (10,))
    assert spec is not None, failure
    assert "node: nodes" in spec.description
    assert type(synthesize(qualname, None).args[0]) is not nodes.Node


@pytest.mark.parametrize(
    "qualname",
    [
        "trees_pkg.Generator.visit_Call",
        "trees_pkg.Generator.visit_Decl",
        "trees_pkg.Generator.visit_Block",
        "trees_pkg.Generator.visit",
        "trees_pkg.NodeVisitor.generic_visit",
    ],
)
def test_without_the_nodes_source_the_visitors_are_not_profiled(qualname):
    spec, failure = find_synthesized_scenario(qualname, (10,), sources=UNMENDED)
    assert spec is None and failure is not None


def test_no_nodes_switches_the_source_off():
    import argparse

    from apiprof.cli.scan import add_scan_arguments, scan_options

    parser = argparse.ArgumentParser()
    add_scan_arguments(parser)
    options = scan_options(parser.parse_args(["pkg", "--no-nodes"]))
    assert not options.nodes and options.argument_sources == list(WITHOUT_NODES)


def test_a_parser_gets_the_snippets_of_its_grammar_the_package_shows_and_it_accepts():
    import trees_pkg

    from apiprof.engine.scenarios.parsetexts import parser_texts, snippets

    assert "let answer = 42;" in snippets("trees_pkg")
    assert parser_texts(trees_pkg.parse, "text").values == ("let answer = 42;",)
    assert parser_texts(trees_pkg.Generator.visit, "node") is None  # not a parser's name
    spec, failure = find_synthesized_scenario("trees_pkg.parse", (10,))
    assert spec is not None, failure
    assert try_scenario(spec)[0] is None and "text: examples" in spec.description
    # the tokenizer's own pattern (source patterns) would give it text it accepts as well
    without = tuple(source for source in SOURCES if source not in ("examples", "patterns"))
    assert find_synthesized_scenario("trees_pkg.parse", (10,), sources=without)[0] is None


def test_a_parser_of_files_gets_each_accepted_snippet_in_a_sandbox_file():
    import trees_pkg

    from apiprof.engine.scenarios.parsetexts import SnippetFiles, parser_texts

    files = parser_texts(trees_pkg.parse_file, "filename")
    assert files == SnippetFiles(("let answer = 42;",))
    spec, failure = find_synthesized_scenario("trees_pkg.parse_file", (10,))
    assert spec is not None, failure
    assert try_scenario(spec)[0] is None and "filename: examples" in spec.description
    path = synthesize("trees_pkg.parse_file", None, variant=1).args[0]
    with open(path, encoding="utf-8") as written:
        assert written.read() == "let answer = 42;"
