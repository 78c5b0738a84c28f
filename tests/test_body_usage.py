"""What a body does with an unannotated parameter says what to pass: one only printed into
text (``"%s" % x``, ``f"{x}"``, ``.format(x)``, ``str(x)``) takes a string, one entered with
``with x:`` a context manager."""

from __future__ import annotations

import pytest

from apiprof.engine.scenarios.heuristics import ContextManagerMarker
from apiprof.engine.scenarios.synth import CannotSynthesize, synthesize
from apiprof.engine.scenarios.usage import infer_from_usage, only_formatted, usage_of
from apiprof.model.records import ScenarioSource


def test_each_way_of_printing_a_value_is_read_as_printing():
    from bodyuse_pkg import LoopDetected, NotAllowed, labelled, measured

    assert only_formatted(usage_of(LoopDetected, "option"))  # "…%s…" % option
    assert only_formatted(usage_of(NotAllowed, "component_value"))  # "{!r}".format(…)
    assert only_formatted(usage_of(labelled, "frob"))  # f"<{frob}>"
    assert only_formatted(usage_of(labelled, "zork"))  # str(zork)
    assert not only_formatted(usage_of(NotAllowed, "allowed_values"))  # sorted(): iterated
    assert not only_formatted(usage_of(measured, "frob"))  # also frob.upper()


@pytest.mark.parametrize("qualname", ["bodyuse_pkg.LoopDetected", "bodyuse_pkg.labelled"])
def test_printed_parameters_get_text_from_the_heuristics(qualname):
    made = synthesize(qualname, 10)
    assert made.args and all(isinstance(arg, str) for arg in made.args)
    assert made.source is ScenarioSource.HEURISTICS
    made.target(*made.args, **made.kwargs)  # the call accepts them


def test_exception_with_formatted_and_iterated_fields_is_built():
    made = synthesize("bodyuse_pkg.NotAllowed", 10)
    error = made.target(*made.args, **made.kwargs)
    assert "was required to be one of" in str(error)


def test_without_heuristics_nothing_is_guessed():
    with pytest.raises(CannotSynthesize, match="no annotation or default"):
        synthesize("bodyuse_pkg.LoopDetected", 10, sources=())


def test_a_parameter_entered_with_with_gets_a_context_manager():
    from bodyuse_pkg import guarded

    strong, _ = infer_from_usage(usage_of(guarded, "ctx"), None, {})
    assert strong == [ContextManagerMarker]
    made = synthesize("bodyuse_pkg.guarded", 10)
    with made.args[0]:  # enterable, and again for the next call
        pass
    assert made.target(*made.args) == made.target(*made.args) == 1


def test_retry_counts_are_numbers_by_name():
    made = synthesize("bodyuse_pkg.retried", 10)
    assert isinstance(made.args[0], int)


def test_a_logger_parameter_gets_a_logger_that_prints_nothing(capsys):
    import logging

    made = synthesize("bodyuse_pkg.set_logger", 10)
    [logger] = made.args
    assert isinstance(logger, logging.Logger) and not logger.propagate
    logger.error("kept to itself")
    assert made.target(*made.args) is logger
    assert capsys.readouterr().err == ""


def test_a_parameter_handed_on_takes_the_type_of_the_default_it_lands_on():
    """``zork`` says nothing by its name or use; ``_sized(count, binary=zork)`` has
    ``binary=False``: a bool."""
    from bodyuse_pkg import shown_size

    from apiprof.engine.scenarios.callees import usage_through_callees

    usage = usage_through_callees(shown_size, "zork")
    assert usage is not None and usage.defaults == [False]
    made = synthesize("bodyuse_pkg.shown_size", 10)
    assert isinstance(made.args[1], bool)
    assert made.target(*made.args).endswith(" bytes")
