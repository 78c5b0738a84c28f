"""Python syntax trees as arguments: a module parsed from a sized program, any node class found
in the parse of a program that uses every construct, handlers named after node classes."""

from __future__ import annotations

import ast

import pytest

from apiprof.engine.scenarios import pysyntax
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.engine.scenarios.visitors import visited_class
from apiprof.model.records import ScenarioSource

DEPRECATED = {"slice", "Index", "ExtSlice", "Suite", "AugLoad", "AugStore", "Param", "Ellipsis"}
"""Aliases kept for old code: no parse makes them."""
TYPE_COMMENTS = {"type_ignore", "TypeIgnore"}
"""Made only when parsing with type comments."""


class _Context:
    def __init__(self, n: int) -> None:
        self.n, self.sized = n, False


def test_every_node_class_of_this_python_is_found_well_formed():
    context = _Context(10)
    for name, cls in pysyntax._ast_classes().items():
        if name in DEPRECATED | TYPE_COMMENTS:
            continue
        node = pysyntax.syntax_node(cls, context, "node")  # type: ignore[arg-type]
        assert isinstance(node, cls), name
        if isinstance(node, (ast.stmt, ast.expr)):
            assert node.lineno >= 1 and ast.unparse(node)


def test_a_module_grows_with_n_and_compiles():
    small = pysyntax.syntax_node(ast.AST, _Context(10), "tree")  # type: ignore[arg-type]
    large_context = _Context(100)
    large = pysyntax.syntax_node(ast.Module, large_context, "tree")  # type: ignore[arg-type]
    assert isinstance(small, ast.Module) and large_context.sized
    assert len(large.body) - len(small.body) == 90
    compile(large, "<sized>", "exec")


def test_handlers_named_after_node_classes():
    import astwalk_pkg

    assert visited_class(astwalk_pkg.FunctionCollector.visit_FunctionDef) is ast.FunctionDef
    assert visited_class(astwalk_pkg.FunctionCollector.visit_arg) is ast.arg
    assert visited_class(astwalk_pkg.Checker.ANNASSIGN) is ast.AnnAssign
    assert visited_class(astwalk_pkg.Checker.handle) is None
    # capitals name a node class only where the owner has several such handlers
    assert pysyntax.handled_node_class("NAME", lambda: ["NAME", "RUN"]) is None
    assert pysyntax.handled_node_class("NAME", lambda: ["NAME", "IF", "FOR", "CALL", "ARG"])


@pytest.mark.parametrize(
    ("qualname", "node_class"),
    [
        ("astwalk_pkg.count_names", ast.Module),
        ("astwalk_pkg.FunctionCollector.visit_FunctionDef", ast.FunctionDef),
        ("astwalk_pkg.FunctionCollector.visit_arg", ast.arg),
        ("astwalk_pkg.Checker.MATCH", ast.Match),
        ("astwalk_pkg.Checker.IMPORTFROM", ast.ImportFrom),
    ],
)
def test_entry_points_taking_trees_are_profiled(qualname, node_class):
    spec, reason = find_synthesized_scenario(qualname, (10,))
    assert reason is None and spec is not None, reason
    assert try_scenario(spec)[0] is None
    assert spec.source in (ScenarioSource.SYNTHESIZED, ScenarioSource.NODES)
    assert node_class.__name__ in spec.inputs
