"""Argument synthesis on an untyped parser shaped like real ones (fixture ``handoff_pkg``):
parameters named after the package's classes, arguments checked only by the method they are
handed to, and a loader class passed in where the stub says only ``type[Any]``."""

from __future__ import annotations

import inspect
import typing

import pytest

from apiprof.engine.discovery.discover import discover
from apiprof.engine.scenarios.choices import listed_choices
from apiprof.engine.scenarios.classnames import classes_named_by
from apiprof.engine.scenarios.collect import gather_scenarios
from apiprof.engine.scenarios.factories import factories_for
from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.instances import declared_returns
from apiprof.engine.scenarios.parameters import parameter_candidates
from apiprof.engine.scenarios.registered import registered_keys
from apiprof.engine.scenarios.signatures import package_classes, signature_of, type_hints
from apiprof.engine.scenarios.synth import synthesize
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.engine.scenarios.typetext import PathMarker
from apiprof.model.records import ScenarioSource


@pytest.fixture(scope="module")
def gathered():
    return gather_scenarios(discover("handoff_pkg"), sizes=(10, 100))


def test_every_entry_point_of_the_fixture_is_profiled(gathered):
    assert set(gathered.unscenarioed()) == {"handoff_pkg.registry.Registry.drop"}  # see below
    for spec in gathered.specs:
        assert try_scenario(spec)[0] is None, spec.id


def test_a_parameter_named_after_a_class_of_the_package_is_an_instance_of_it(gathered):
    import handoff_pkg

    token = synthesize("handoff_pkg.Token", 10)
    assert [type(arg) for arg in token.args] == [handoff_pkg.Mark, handoff_pkg.Mark]
    assert token.used["start_mark"] is token.used["end_mark"] is ScenarioSource.HEURISTICS
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.Token.span")
    assert try_scenario(spec)[0] is None


def test_a_class_named_in_a_public_module_wins_over_a_private_namesake():
    import handoff_pkg

    assert package_classes("handoff_pkg")["Mark"] is handoff_pkg.Mark


def test_names_match_whole_then_by_their_tail_and_capitalised_names_mean_the_class():
    class Request:
        pass

    class PreparedRequest:
        pass

    classes = {"Request": Request, "PreparedRequest": PreparedRequest}
    assert classes_named_by("prepared_request", classes) == [PreparedRequest, Request]
    assert classes_named_by("preparedRequest", classes) == [PreparedRequest, Request]
    assert classes_named_by("Request", classes) == [type[Request]]
    assert classes_named_by("req", classes) == [Request]  # an abbreviation
    assert classes_named_by("pr", classes) == [PreparedRequest]  # its initials
    assert classes_named_by("rst", classes) == [Request]  # first and last letters
    assert classes_named_by("rq", classes) == []
    assert classes_named_by("prep_rst", classes) == [PreparedRequest]  # its words joined
    assert classes_named_by("a_request", {}) == []
    assert classes_named_by("req", classes, abbreviations=False) == []
    assert classes_named_by("request", classes, abbreviations=False) == [Request]


def test_a_well_known_name_is_no_abbreviation_of_a_class(gathered):
    from handoff_pkg import plural

    signature = inspect.signature(plural.shout)
    candidates = parameter_candidates(
        plural.shout, signature.parameters["text"], signature, type_hints(plural.shout)
    )
    assert plural.TextWrapper not in [typed for typed, _ in candidates]
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.plural.shout")
    failure, shouted = try_scenario(spec)
    assert failure is None and isinstance(shouted, str)


def test_an_abbreviated_class_name_is_an_instance_of_that_class():
    import handoff_pkg

    result = synthesize("handoff_pkg.token_fields", 10)
    assert isinstance(result.args[0], handoff_pkg.Token)
    assert result.target(*result.args) == ["end_mark", "start_mark"]


def test_a_parameter_checked_by_the_method_it_is_handed_to_gets_what_that_method_checks():
    import handoff_pkg

    result = synthesize("handoff_pkg.Constructor.construct_text", 10)
    assert isinstance(result.args[0], handoff_pkg.ScalarNode)
    assert result.target(*result.args) == str(result.args[0].value)


def test_a_capitalised_parameter_gets_the_class_when_the_stub_only_says_type_any():
    import handoff_pkg

    result = synthesize("handoff_pkg.load", 10)
    assert result.args[1] is handoff_pkg.Loader
    assert result.used["Loader"] is ScenarioSource.HEURISTICS
    assert result.target(*result.args) == result.args[0].split()


def test_a_parameter_handed_to_a_method_that_looks_nothing_up_is_no_registry_key():
    import handoff_pkg

    assert registered_keys(handoff_pkg.Constructor.construct_text, "node") == []


def test_a_parameter_passed_on_to_a_function_of_the_package_is_its_registrys_key(gathered):
    from handoff_pkg import registry

    assert [repr(key) for key in registered_keys(registry.signed, "method")] == [
        "RegisteredKey(DIGESTS)"
    ]
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.registry.signed")
    assert try_scenario(spec)[0] is None


def test_a_parameter_named_after_a_builtin_type_is_one(gathered):
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.registry.from_int")
    assert spec.source is ScenarioSource.HEURISTICS


def test_a_key_of_a_registry_that_starts_empty_says_so():
    missing = gather_scenarios(discover("handoff_pkg.registry"), sizes=(10,)).unscenarioed()
    assert set(missing) == {"handoff_pkg.registry.Registry.drop"}
    assert missing["handoff_pkg.registry.Registry.drop"].reason.endswith(
        "parameter 'a' is looked up in self.entries, which holds no keys on the receiver built "
        "here: a scenario must add one first"
    )


def test_annotations_naming_what_only_type_checking_imports_resolve(gathered):
    import ipaddress

    from handoff_pkg import late

    assert type_hints(late.is_loopback)["address"] is ipaddress.IPv4Address
    assert type_hints(late.total)["counts"] == dict[str, int]
    # defined in the block (a protocol, a variable bound to it), or in the imported module's
    formatter = type_hints(late.register)["formatter"]
    assert isinstance(formatter, typing.TypeVar) and formatter.__bound__.__name__ == "Formatter"
    assert type_hints(late.render)["renderer"].__name__ == "Renderer"
    qualnames = ("is_loopback", "total", "register", "render")
    for qualname in (f"handoff_pkg.late.{name}" for name in qualnames):
        spec = next(s for s in gathered.specs if s.qualname == qualname)
        assert spec.source is ScenarioSource.SYNTHESIZED


def test_a_receiver_usable_only_from_its_own_factory_is_made_by_it(gathered):
    from handoff_pkg.rules import Lexer

    assert factories_for(Lexer, declared_returns) == [Lexer.get_default_instance]
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.rules.Lexer.is_keyword")
    assert try_scenario(spec)[0] is None


def test_a_re_exported_exception_group_gets_a_message_and_exceptions():
    """A backport's top level re-exporting the builtin: its API, built with a message and the
    exceptions it groups (C code without a text signature)."""
    backport = gather_scenarios(discover("backport_pkg"), sizes=(10,))
    [spec] = [s for s in backport.specs if s.qualname == "backport_pkg.ExceptionGroup"]
    failure, made = try_scenario(spec)
    assert failure is None and isinstance(made, ExceptionGroup) and made.exceptions


def test_a_re_exported_standard_library_class_is_kept_but_not_its_methods():
    """``unicode = str`` in a compatibility module: the class is the package's name for it;
    str's 47 methods are the standard library's API, not the package's; an abstract class
    re-exported (``Mapping``, even listed in ``__all__``) is no entry point at all."""
    found = {ep.qualname for ep in discover("handoff_pkg").entry_points}
    compat = {q for q in found if q.startswith("handoff_pkg.compat.")}
    assert compat == {
        f"handoff_pkg.compat.{name}" for name in ("ExceptionGroup", "StringIO", "unicode")
    }


def test_a_plural_of_a_well_known_name_is_a_list_of_what_the_singular_is(gathered):
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.plural.apply_all")
    assert spec.source is ScenarioSource.HEURISTICS
    assert try_scenario(spec)[0] is None


def test_the_member_of_a_union_the_name_says_comes_first():
    result = synthesize("handoff_pkg.loading.words_in", 10)
    assert isinstance(result.args[0], str) and result.used["text_str"] is ScenarioSource.STUBS


def test_a_plural_of_a_name_that_means_anything_is_no_list():
    assert guess_from_name("defaults") is None  # a tuple, a dict...: not a list of anything
    assert guess_from_name("paths") == list[PathMarker]


def test_a_feeder_that_refuses_what_it_holds_gets_a_renewed_receiver_for_every_call(gathered):
    """``raw_append(key, value)`` works once per key: every measured call gets the receiver
    built again from copies of its arguments (the list it wraps came back filled)."""
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.keyed.Section.raw_append")
    assert "<Section renewed before each call>: factories" in spec.description
    assert try_scenario(spec, calls=3)[0] is None


def test_a_cursor_is_one_that_ran_a_query_and_runs_it_again_before_each_call(gathered):
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.records.table_from")
    assert spec.source is ScenarioSource.HEURISTICS and spec.size_axis
    failure, rows = try_scenario(spec, 100, calls=3)  # fetchall() used the rows up each time
    assert failure is None and len(rows) == 100 and set(rows[0]) == {"name", "amount", "price"}


def test_a_property_that_always_raises_is_measured_raising(gathered):
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.keyed.Blank.key")
    assert "always raises RuntimeError, so this is the cost of raising it" in spec.description
    assert try_scenario(spec)[0] is None


def test_a_class_whose_new_takes_anything_is_called_as_its_init_says(gathered):
    from handoff_pkg.lazy import Schema

    assert list(signature_of(Schema).parameters) == ["owner", "rules"]
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.lazy.Schema")
    failure, made = try_scenario(spec)
    assert failure is None and isinstance(made.rules, dict)


def test_a_method_that_works_once_per_receiver_gets_one_built_again_for_each_call(gathered):
    """Its first call worked and the second raised: the repair learns that the receiver is
    to be built again before each call (not measured)."""
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.keyed.Ledger.seal")
    assert spec.source is ScenarioSource.REPAIRED
    assert "the receiver built again before each call" in spec.description
    assert try_scenario(spec, calls=3)[0] is None


def test_an_operand_the_constructor_stored_is_built_with_the_type_the_method_needs(gathered):
    """``self.code & GROUP`` refused a str ``code``: the receiver is built with an int one."""
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.keyed.Flagged.is_group")
    assert spec.source is ScenarioSource.REPAIRED
    assert "self.code of type int" in spec.description
    assert try_scenario(spec)[0] is None


def test_a_taker_is_given_its_key_by_an_adder_whose_item_is_optional(gathered):
    """``add(key, item=None)`` refuses a key alone: the key is passed as its own item too."""
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.keyed.Shelf.remove")
    assert "Shelf.add(<the call's own arguments>)" in spec.description
    assert try_scenario(spec, calls=3)[0] is None


def test_a_taker_of_many_is_given_them_all_by_an_adder_of_many(gathered):
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.keyed.Words.remove")
    assert "Words.add(<the call's own arguments>)" in spec.description
    assert try_scenario(spec, calls=3)[0] is None


def test_a_value_refused_with_the_list_of_accepted_ones_becomes_the_first_of_them(gathered):
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.keyed.locale")
    assert spec.source is ScenarioSource.REPAIRED and "code 'ja'" in spec.description
    assert listed_choices("mode must be one of: 'r', 'w'") == ["r", "w"]
    assert listed_choices("not available on this platform") == []


def test_args_handed_to_c_code_that_wants_more_pass_as_many_as_it_said(gathered):
    """``dict.pop`` says ``expected at least 1 argument, got 0`` of ``pop(*args)``."""
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.keyed.Settings.pop")
    assert "*args 1 item(s)" in spec.description
    assert try_scenario(spec, calls=3)[0] is None


def test_a_parameter_named_after_a_kind_of_class_called_in_a_callee_is_such_a_class(gathered):
    """``renderer`` names no class but ends the names of two; ``convert`` hands it through
    ``renderers.markdown(text, renderer)``, which calls it: the concrete class itself."""
    spec = next(s for s in gathered.specs if s.qualname == "handoff_pkg.convert.convert")
    assert spec.source is ScenarioSource.HEURISTICS
    failure, rendered = try_scenario(spec)
    assert failure is None and rendered == rendered.upper()
