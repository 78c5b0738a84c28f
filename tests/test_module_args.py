"""Arguments a lexer-generator-shaped package needs: one of its own modules for ``module``, a
lexer for ``lexer=None``, and a lexer that iterates only after ``input()`` measured as made."""

from __future__ import annotations

import types

from apiprof.engine.scenarios.synth import synthesize
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario


def test_a_module_parameter_takes_the_packages_own_modules_in_turn():
    made = [synthesize("lexgen_pkg.build", 10, 0, variant).kwargs for variant in range(8)]
    modules = [kwargs["module"] for kwargs in made if "module" in kwargs]
    assert all(isinstance(module, types.ModuleType) for module in modules)
    # the late variants that fill optional parameters take the modules in order
    assert [m.__name__ for m in modules] == [
        "lexgen_pkg.lexer",
        "lexgen_pkg.preprocess",
        "lexgen_pkg.rules",
    ]


def test_a_lexer_that_iterates_only_after_input_is_measured_as_made():
    spec, reason = find_synthesized_scenario("lexgen_pkg.build", (10,))
    assert reason is None and spec is not None, reason
    assert "module=<module 'lexgen_pkg.rules'" in spec.inputs
    assert not spec.call.startswith("consume(")  # iterating it right away needs input first
    assert try_scenario(spec)[0] is None


def test_a_generator_refusing_its_arguments_is_never_measured_uniterated():
    from apiprof.engine.scenarios.synthesized import iterated_later

    def refuses():
        raise ValueError("bad")
        yield

    lexer = __import__("lexgen_pkg").Lexer()
    not_ready = "raised RuntimeError: No input string given with input() in call"
    assert not iterated_later(refuses(), "lexgen_pkg.build", not_ready)
    assert iterated_later(lexer, "lexgen_pkg.build", not_ready)
    assert not iterated_later(lexer, "other_pkg.build", not_ready)
    # a wrong argument shows while iterating too: that is no lexer waiting for its input
    assert not iterated_later(lexer, "lexgen_pkg.build", "raised TypeError: can't concat str")


def test_an_optional_parameter_named_after_a_package_class_gets_one():
    spec, reason = find_synthesized_scenario("lexgen_pkg.Preprocessor.rule_names", (10,))
    assert reason is None and spec is not None, reason
    assert try_scenario(spec)[0] is None


def test_a_lexer_is_given_its_input_before_each_token_is_asked_for():
    spec, reason = find_synthesized_scenario("lexgen_pkg.Lexer.token", (10,))
    assert reason is None and spec is not None, reason
    assert "Lexer.input(" in spec.description
    assert try_scenario(spec)[0] is None
