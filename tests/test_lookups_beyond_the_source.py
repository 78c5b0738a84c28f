"""Where the module's source does not say what to pass: names a module hands its own doctest
run, and typeshed stubs of compiled standard-library code the package re-exports (a C
accelerator's object, a class stubbed by its ``__new__``, overloads)."""

from __future__ import annotations

import functools

from apiprof.engine.discovery.discover import discover, resolve_object
from apiprof.engine.scenarios.doctestglobs import declared_globals, doctest_globals
from apiprof.engine.scenarios.doctests import docstring_scenarios, example_globals, identity_of
from apiprof.engine.scenarios.stubs import stub_signature
from apiprof.engine.scenarios.synth import synthesize
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import ScenarioSource


def test_the_names_a_module_hands_its_doctest_run_are_read_not_run():
    assert declared_globals("doctestglobs_pkg") == {
        "tools": "{'checker': Checker()}",
        "checker": "Checker()",
        "unused": "object()",
    }
    values = doctest_globals("doctestglobs_pkg")
    assert type(values["checker"]).__name__ == "Checker"
    assert "checker" in example_globals("doctestglobs_pkg")
    assert declared_globals("bodyuse_pkg") == {}  # no doctest run: nothing is declared


def test_examples_using_those_names_run_as_scenarios():
    discovery = discover("doctestglobs_pkg")
    entry = discovery.entry("doctestglobs_pkg.is_small")
    obj = resolve_object(entry.qualname)
    specs, reason = docstring_scenarios(entry, obj, {id(identity_of(obj)): entry.qualname})
    assert specs, reason
    assert all(spec.source is ScenarioSource.DOCSTRING for spec in specs)
    assert all(try_scenario(spec)[0] is None for spec in specs)


def test_a_c_accelerators_function_is_described_by_the_stub_of_its_public_module():
    assert functools.reduce.__module__ == "_functools"
    stub = stub_signature(functools.reduce, "reexport_pkg.reduce")
    assert stub is not None and stub.origin == "functools"
    assert stub.signature is not None
    required = [p for p in stub.signature.parameters.values() if p.default is p.empty]
    assert [p.name for p in required] == ["function", "iterable"]  # the shorter overload
    made = synthesize("reexport_pkg.reduce", 10)
    assert made.source is ScenarioSource.STUBS
    made.target(*made.args, **made.kwargs)


def test_a_class_its_stub_builds_with_new_takes_those_arguments():
    stub = stub_signature(functools.partial, "reexport_pkg.partial")
    assert stub is not None and stub.signature is not None
    assert list(stub.signature.parameters) == ["func", "args", "kwargs"]
    made = synthesize("reexport_pkg.partial", 10)
    assert callable(made.args[0])
    assert isinstance(made.target(*made.args, **made.kwargs), functools.partial)
