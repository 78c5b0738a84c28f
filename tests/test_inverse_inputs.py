"""Input an inverse of the entry point makes: ``sign``'s output for ``unsign``, ``dumps``' for
a reader typed ``str | bytes``, and what ``dump`` writes into a stream for ``load(f: IO)``."""

from __future__ import annotations

import io
import typing

from test_argument_search import found

from apiprof.engine.scenarios import inverses
from apiprof.engine.scenarios.factories import inverse_names
from apiprof.engine.scenarios.synth import synthesize
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.model.records import ScenarioSource


def test_a_name_without_its_un_names_what_makes_its_input():
    assert inverse_names("unsign") == ["sign"]
    assert inverse_names("unpackb") == ["packb"]  # the pair first, no repeat
    assert inverse_names("loads") == ["dumps", "saves"]
    assert inverse_names("undo") == []  # too short to be a verb undone
    assert inverse_names("update") == []


def test_a_union_of_texts_and_a_stream_take_what_the_inverse_makes():
    assert inverses.text_members(str | bytes | None) == (str, bytes)
    assert inverses.text_members(int | str) == ()
    assert inverses.is_stream(typing.IO[typing.Any]) and inverses.is_stream(typing.TextIO)
    assert not inverses.is_stream(str)


def test_an_unsign_gets_what_its_class_signs():
    spec = found("roundtrip_pkg.Signer.unsign")
    assert spec.source is ScenarioSource.FACTORIES
    assert "signed_value: factories" in spec.description and "alternative" in spec.description
    synthesis = synthesize("roundtrip_pkg.Signer.unsign", 10, pins={"signed_value": 1})
    assert b"." in synthesis.args[0]


def test_without_the_inverse_the_made_up_value_is_refused():
    spec, failure = find_synthesized_scenario(
        "roundtrip_pkg.Signer.unsign", (10,), sources=("heuristics",)
    )
    assert spec is None and "BadSignature" in failure.reason


def test_a_reader_typed_by_a_union_of_texts_gets_the_dumps_output():
    spec = found("roundtrip_pkg.Serializer.loads")
    assert "s: factories" in spec.description


def test_a_stream_reader_gets_what_the_writer_wrote_into_its_stream():
    spec = found("roundtrip_pkg.Serializer.load")
    assert "f: factories" in spec.description
    assert "obj:" not in spec.description  # the writer's own arguments are not the call's


def test_a_writer_into_a_stream_typed_io_any_gets_a_text_stream():
    synthesis = synthesize("roundtrip_pkg.Serializer.dump", 10)
    assert isinstance(synthesis.args[1], io.StringIO) and synthesis.files


def test_what_a_writer_wrote_is_taken_up_to_where_it_stopped():
    stream = io.StringIO("made-up text beyond")
    stream.write("signed")
    made = inverses.as_stream(None, [3, stream])
    assert isinstance(made, io.StringIO) and made.getvalue() == "signed"
    assert inverses.as_stream(b"xy", []).getvalue() == b"xy"
    assert inverses.as_stream(None, [io.StringIO()]) is None
