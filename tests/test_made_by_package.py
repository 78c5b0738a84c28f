"""What only the package's own running makes, each rule checked on ``madeby_pkg`` with its
source and without it: a base class built as the subclass a function named after it returns
(``getTreeBuilder('plain')``, source ``factories``); a parameter without a default typed by its
namesake's default elsewhere in the package; a method reading what the constructor left empty
(``openElements = []``, ``pending = None``) called after the sibling that fills it (source
``prepared``); Python source for a text its module parses (source ``nodes``); an override's
parameters typed by the definition it overrides; an object the receiver holds made ready by
its own method that sets what a call asked of it, a ``None`` refused as a path taken for the
argument that held it (source ``repaired``); and the subclass a body asserts tried first."""

from __future__ import annotations

import ast
import gc

import pytest
from madeby_pkg.builders import TreeBuilder, getTreeBuilder
from test_siblings import ALONE, found

from apiprof.engine.scenarios.callees import usage_through_callees
from apiprof.engine.scenarios.classfactories import class_factories, subclass_made
from apiprof.engine.scenarios.importedclasses import imported_classes_with
from apiprof.engine.scenarios.lessons import learn
from apiprof.engine.scenarios.namesakes import namesake_default
from apiprof.engine.scenarios.narrowing import checked_subclasses
from apiprof.engine.scenarios.preparers import fills, is_empty, preparer_of
from apiprof.engine.scenarios.pysyntax import takes_python_source
from apiprof.engine.scenarios.signatures import borrowed_hints, type_hints
from apiprof.engine.scenarios.synth import synthesize
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.wants import Lesson, Want
from apiprof.engine.scenarios.wrappers import handed_to

BUILDERS = "madeby_pkg.builders"


def test_a_function_named_after_a_class_is_asked_for_its_subclass():
    assert [f.__name__ for f in class_factories(TreeBuilder)] == ["getTreeBuilder"]
    made = getTreeBuilder("plain")
    assert subclass_made(made, TreeBuilder) is made
    assert subclass_made({"TreeBuilder": made, "x": 1}, TreeBuilder) is made  # `locals()`
    assert subclass_made(TreeBuilder, TreeBuilder) is None  # the class itself is no subclass
    with pytest.raises(TypeError):  # why the rule exists: the base cannot be built
        TreeBuilder(True)


def test_a_base_class_is_built_as_the_subclass_its_factory_function_returns():
    gc.collect()  # subclasses earlier calls made and dropped would be found as subclasses
    described = found(f"{BUILDERS}.TreeBuilder.getDocument", ALONE)
    assert described is not None
    assert "factories (the subclass getTreeBuilder() returns)" in described
    no_factories = tuple(source for source in ALONE if source != "subclasses")
    assert found(f"{BUILDERS}.TreeBuilder.getDocument", no_factories) is None


def test_a_parameter_without_a_default_takes_the_type_of_its_namesakes_default():
    assert namesake_default(TreeBuilder.__init__, "namespaceHTMLElements") is bool
    assert namesake_default(TreeBuilder.__init__, "no_such_parameter") is None


def test_what_the_constructor_left_empty_is_filled_by_the_sibling_that_fills_it():
    builder = getTreeBuilder("plain")(True)
    assert is_empty(builder, "openElements") and is_empty(builder, "pending")
    assert not is_empty(builder, "document")
    assert "openElements" in fills(TreeBuilder, "insertRoot")  # appends to it
    assert "pending" in fills(TreeBuilder, "startTag")  # assigns it a non-empty dict
    assert "pending" not in fills(TreeBuilder, "__init__")  # None leaves it empty
    assert preparer_of(builder, "insertComment") == "insertRoot"
    assert preparer_of(builder, "currentName") == "startTag"
    assert preparer_of(builder, "describe") == ""  # a cache read with .get() and filled on the way
    # what is absent outranks what is empty: without the queue the call fails whatever else
    assert preparer_of(builder, "emitPending") == "_open"
    builder.insertRoot()
    assert preparer_of(builder, "insertComment") == ""  # filled: nothing to call first


@pytest.mark.parametrize(
    ("member", "sibling"), [("insertComment", "insertRoot"), ("currentName", "startTag")]
)
def test_a_method_reading_an_empty_attribute_is_called_on_a_prepared_receiver(member, sibling):
    qualname = f"{BUILDERS}.TreeBuilder.{member}"
    described = found(qualname, ALONE)
    assert described is not None
    assert described.startswith("prepared: ")
    assert f".{sibling}(" in described
    assert found(qualname, tuple(s for s in ALONE if s != "prepare")) is None


def test_a_text_its_module_parses_as_python_is_a_program_with_every_construct():
    from madeby_pkg.sourcetools import constructs_used

    assert takes_python_source(constructs_used, "source_text")
    assert not takes_python_source(constructs_used, "count")  # not named like source
    assert not takes_python_source(getTreeBuilder, "text")  # its module parses no Python
    qualname = "madeby_pkg.sourcetools.constructs_used"
    described = found(qualname, ALONE)
    assert described is not None
    assert "source_text: nodes" in described
    synthesis = synthesize(qualname, 10, sources=ALONE)
    (source,) = synthesis.args
    assert isinstance(ast.parse(source), ast.Module)
    assert found(qualname, tuple(s for s in ALONE if s != "nodes")) is None


def test_an_override_without_annotations_takes_those_of_the_definition_it_overrides():
    from madeby_pkg.converters import Converter, Emphasis

    hints = type_hints(Emphasis)
    assert hints["converter"] is Converter and hints["options"] is dict


def test_an_annotation_borrowed_from_an_overridden_definition_is_a_candidate_not_a_promise():
    """``Strong(match)`` reads a group no synthesised match has: the override is still
    profiled with what its body reads of ``token``, the next candidate."""
    from madeby_pkg.converters import Emphasis, Extension, Strong, TextRenderer

    assert type_hints(TextRenderer.render_strong)["token"] is Strong
    assert borrowed_hints(TextRenderer.render_strong) == {"token"}
    assert borrowed_hints(Emphasis) == {"converter", "options"}
    assert borrowed_hints(Extension) == set()  # its own annotations
    described = found("madeby_pkg.converters.TextRenderer.render_strong", ALONE)
    assert described is not None
    assert "token: heuristics" in described
    assert found("madeby_pkg.converters.Renderer.render_strong", ALONE) is None


def test_a_wrapper_without_functools_wraps_is_called_with_what_its_function_takes():
    from madeby_pkg import legacy

    assert handed_to(legacy.join) is legacy.join.__closure__[0].cell_contents
    assert handed_to(legacy.tagged) is None  # adds an argument of its own
    assert handed_to(legacy.joined) is None  # not a wrapper
    with pytest.raises(TypeError, match="missing 2 required positional arguments"):
        legacy.join()  # why the rule exists: the wrapper's signature says nothing
    described = found("madeby_pkg.legacy.join", ALONE)
    assert described is not None
    assert "words: " in described and "separator: " in described


@pytest.mark.parametrize(
    ("handler", "command"),
    [("cmd_greet", "'greet "), ("cmd_shout", "'shout "), ("cmd_shout", " loud'")],
)
def test_a_subcommand_handler_takes_what_the_package_parser_makes_of_its_command_line(
    handler, command
):
    import argparse

    from madeby_pkg import cli

    with pytest.raises(AttributeError):  # why the rule exists: an empty Namespace lacks all
        getattr(cli, handler)(argparse.Namespace())
    described = found(f"madeby_pkg.cli.{handler}", ALONE)
    assert described is not None
    assert "args: factories (the parser's reading of '" in described and command in described
    no_factories = tuple(source for source in ALONE if source != "subclasses")
    assert "the parser's reading" not in (found(f"madeby_pkg.cli.{handler}", no_factories) or "")


def test_attributes_asked_of_an_argument_are_looked_for_in_the_standard_classes_imported():
    import array

    from madeby_pkg import packing

    assert imported_classes_with("madeby_pkg.packing.describe", ["typecode"]) == [array.array]
    assert imported_classes_with("madeby_pkg.packing.describe", ["typecode", "nope"]) == []
    spec, _ = find_synthesized_scenario("madeby_pkg.packing.describe", (10,), sources=ALONE)
    assert spec is not None and "learned from AttributeError 'typecode'" in spec.description
    made: dict = {"n": 10}
    exec(spec.setup, made)
    assert isinstance(made["args"][0], array.array)
    assert packing.describe(made["args"][0])


def test_a_class_built_for_an_argument_is_called_again_with_its_parameters_next_guesses():
    from madeby_pkg.buffers import Block, Buffer

    assert Block(Buffer()).children == []
    described = found("madeby_pkg.buffers.render", ALONE)
    assert described is not None and "block: synthesized" in described
    first_guess_only = synthesize("madeby_pkg.buffers.Block", 3, sources=ALONE)
    with pytest.raises(AttributeError):  # why: the guess from the rows' use comes first
        Block(*first_guess_only.args)


def test_an_object_the_receiver_holds_is_made_ready_to_have_what_its_own_method_read():
    """``Emphasis.run`` calls ``self.converter.hash_span()``, which reads ``self.spans``: only
    ``Converter.reset()`` makes it. The lesson is read off the converter's own frame and names
    the receiver's constructor parameter (stored by the base class's ``__init__``)."""
    from madeby_pkg.converters import Converter, Emphasis

    emphasis = Emphasis(Converter(), {})
    with pytest.raises(AttributeError) as raised:
        emphasis.run("lorem")
    lesson = learn(raised.value, {"text": "lorem"}, receiver=emphasis)
    assert lesson == Lesson("self.converter", Want.ATTRIBUTES, ("spans",), cause=lesson.cause)
    qualname = "madeby_pkg.converters.Emphasis.run"
    described = found(qualname, ALONE)
    assert described is not None
    assert described.startswith("repaired: ")
    assert "self.converter an object with attribute 'spans'" in described
    assert found(qualname, tuple(s for s in ALONE if s != "repair")) is None


def test_a_none_refused_as_a_path_is_taken_for_the_argument_that_held_it():
    from madeby_pkg.sources import Source, read_source

    source = Source()
    with pytest.raises(TypeError, match=r"argument must be str, bytes, or os\.PathLike") as raised:
        read_source(source)
    lesson = learn(raised.value, {"source": source})
    assert lesson is not None
    assert (lesson.parameter, lesson.want) == ("source", Want.FILE)
    described = found("madeby_pkg.sources.read_source", ALONE)
    assert described is not None and described.startswith("repaired: ")
    assert found("madeby_pkg.sources.read_source", tuple(s for s in ALONE if s != "repair")) is None


def test_the_subclass_the_body_asserts_comes_before_the_annotated_base():
    from madeby_pkg.sources import Key, SecretKey, sign

    assert checked_subclasses(usage_through_callees(sign, "key"), Key, None, {}) == []  # unnamed
    namespace = {"SecretKey": SecretKey}
    assert checked_subclasses(usage_through_callees(sign, "key"), Key, None, namespace) == [
        SecretKey
    ]
    synthesis = synthesize("madeby_pkg.sources.sign", 10, sources=ALONE)
    assert type(synthesis.args[1]) is SecretKey  # the first variant: OpenKey sorts first
    alone = tuple(s for s in ALONE if s != "heuristics")
    assert type(synthesize("madeby_pkg.sources.sign", 10, sources=alone).args[1]) is not SecretKey


def test_a_module_argument_is_captured_by_its_name():
    import pickle
    import xml.etree.ElementTree as tree_module

    from apiprof.engine.scenarios.temppaths import dumps

    args, kwargs = pickle.loads(dumps((tree_module, False), {"module": ast}))
    assert args == (tree_module, False) and kwargs == {"module": ast}
