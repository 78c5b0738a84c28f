"""What only another part of the package makes work: a method that reads what only a sibling
method sets gets that sibling called first (source ``prepared``, ``--no-prepare``); a reader
that rejects a made-up file or stream gets one the package's own classes save or its writer
writes, and an argument a helper unpacks gets tuples of the fields it names (the repair,
source ``repaired``); a call that wraps and closes the standard input leaves it open; a
named tuple's fields take any value. Each rule is checked on ``siblings_pkg`` with its source and without it, where
the same entry point stays rejected; then through the command line."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from siblings_pkg.catalogs import (
    MAGIC,
    Catalog,
    TextCatalog,
    catfile,
    load_catalog,
    textcatalog,
)
from siblings_pkg.reports import DeferredReport, Report
from siblings_pkg.tallies import Tally
from siblings_pkg.tokens import area, widest_token
from test_repair import scan_summary  # the fixture scanned through the command line
from test_self_drive import run  # apiprof's commands in a subprocess, fixtures importable

from apiprof.engine.scenarios.building import SOURCES
from apiprof.engine.scenarios.fields import stored_as_is
from apiprof.engine.scenarios.lessons import learn, may_teach
from apiprof.engine.scenarios.preparers import preparer_of
from apiprof.engine.scenarios.refusals import BINARY_STREAM
from apiprof.engine.scenarios.savedfiles import saving_methods
from apiprof.engine.scenarios.synth import synthesize, synthesize_call
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.engine.scenarios.wants import Lesson, Want
from apiprof.model.records import ScenarioSource

ALONE = tuple(source for source in SOURCES if source != "results")
"""The sources without the values the package's working calls make, which would also reach a
prepared receiver (a sibling's receiver is one of its results), more slowly."""


def found(qualname: str, sources: tuple[str, ...]) -> str | None:
    """The description of the scenario found for ``qualname`` (checked to run, as measured),
    or None when none is."""
    spec, _ = find_synthesized_scenario(qualname, (10,), sources=sources)
    if spec is None:
        return None
    assert try_scenario(spec)[0] is None
    return f"{spec.source}: {spec.description}"


def test_the_sibling_that_sets_what_a_method_reads_is_found_from_the_source():
    assert preparer_of(Report(3), "error") == "start_file"  # sets filename and found
    assert preparer_of(DeferredReport(3), "error") == "start_file"  # sets deferred (own body)
    assert preparer_of(DeferredReport(3), "flush") == ""  # sets deferred itself before reading
    prepared = Report(3)
    prepared.start_file("a.py", ["x = 1"])
    assert preparer_of(prepared, "error") == ""  # nothing lacking: nothing to call


@pytest.mark.parametrize(
    ("qualname", "sibling"),
    [
        ("siblings_pkg.reports.Report.error", "start_file"),
        ("siblings_pkg.reports.DeferredReport.error", "start_file"),
        ("siblings_pkg.reports.Tokenizer.data_state", "__iter__"),  # a generator, advanced
        ("siblings_pkg.reports.Tokenizer.entity_state", "__iter__"),  # read by what it calls
    ],
)
def test_a_prepared_receiver_is_called_on_and_credited(qualname, sibling):
    owner = qualname.split(".")[-2]
    described = found(qualname, ALONE)
    assert described is not None
    assert described.startswith("prepared: ")
    assert f"made ready by {owner}.{sibling}(" in described
    assert found(qualname, tuple(s for s in ALONE if s != "prepare")) is None


def test_the_prepared_receiver_starts_each_call_afresh():
    """The sibling runs before every call on a receiver renewed as it was built: the method
    sees one error recorded each time, not the errors of the calls before it."""
    synthesis = synthesize("siblings_pkg.reports.Report.error", 10, sources=ALONE)
    target, args, warmup = synthesis.target, synthesis.args, synthesis.warmup
    assert warmup is not None
    counts = []
    for _ in range(3):
        target, args = warmup(target, args)
        counts.append(target(*args, **synthesis.kwargs))
    assert counts == [1, 1, 1]


def test_a_reader_refusing_a_made_up_file_learns_it_wants_the_packages_own(tmp_path):
    made_up = tmp_path / "catfile.txt"
    made_up.write_text("lorem ipsum\n")
    try:
        catfile(str(made_up))
    except OSError as error:
        lesson = learn(error, {"catfile": str(made_up)})
    assert lesson == Lesson("catfile", Want.WRITTEN, (), cause=lesson.cause)
    try:
        textcatalog(str(made_up))
    except ValueError as error:  # no OSError, but the message names the file it read
        lesson = learn(error, {"textcatalog": str(made_up)})
    assert lesson is not None and lesson.want is Want.WRITTEN
    assert learn(ValueError("bad value"), {"path": str(made_up)}) is None  # not about the file
    assert may_teach(
        f"the call raised ValueError: Syntax error in {made_up}".replace(
            str(tmp_path), "/tmp/apiprof-inputs"
        )
    )


def test_a_reader_refusing_a_made_up_stream_learns_it_wants_the_packages_output():
    try:
        load_catalog(io.BytesIO(b"lorem ipsum"))
    except ValueError as error:
        lesson = learn(error, {"stream": io.BytesIO(b"lorem ipsum")})
    assert lesson == Lesson("stream", Want.WRITTEN, (BINARY_STREAM,), cause=lesson.cause)
    assert "a binary stream holding what the package's own writer writes" in lesson.describe()
    closed = ValueError("I/O operation on closed file.")
    assert learn(closed, {"stream": io.BytesIO()}) is None  # the first call closed it
    [stream] = synthesize_call(
        "siblings_pkg.catalogs.load_catalog", 10, repairs=(lesson.literal(),)
    )[1]
    assert stream.read().startswith(MAGIC)  # what dump_catalog, the inverse writer, makes


def test_an_object_to_read_from_is_a_stream_of_the_packages_output():
    """Given the writer's bytes, the reader asks them for read(): a stream of them."""
    described = found("siblings_pkg.catalogs.load_catalog", ALONE)
    assert described is not None and described.startswith("repaired: ")
    assert "stream an object with attribute 'read()'" in described
    lesson = Lesson("stream", Want.ATTRIBUTES, ("read()",))
    [stream] = synthesize_call(
        "siblings_pkg.catalogs.load_catalog", 10, repairs=(lesson.literal(),)
    )[1]
    assert isinstance(stream, io.BytesIO) and stream.read().startswith(MAGIC)


def test_a_failed_unpacking_names_the_fields_of_the_argument_a_helper_unpacks():
    """The loop is in a helper the entry point hands the list to: its local is the list."""
    tokens = [("name", "text", 1, 4)]
    try:
        widest_token(tokens)
    except ValueError as error:
        lesson = learn(error, {"tokens": tokens})
    assert lesson is not None and lesson.want is Want.FIELDS and lesson.element
    # typed by the name rules where they know the name, else by the helper's use (end - start)
    assert lesson.names == ("kind", "text", "start", "end:int", "line")
    box = [1, 2, 3]
    try:
        area(box)
    except ValueError as error:  # an assignment: the argument itself is the tuple
        lesson = learn(error, {"box": box})
    assert lesson == Lesson(
        "box", Want.FIELDS, ("left:int", "top:int", "right:int", "bottom:int"), cause=lesson.cause
    )


@pytest.mark.parametrize(
    ("qualname", "taught"),
    [
        (
            "siblings_pkg.tokens.widest_token",
            "elements of tokens a tuple of 'kind', 'text', 'start', 'end: int', 'line'",
        ),
        ("siblings_pkg.tokens.area", "box a tuple of 'left: int', 'top: int', 'right: int'"),
    ],
)
def test_an_unpacked_argument_gets_tuples_of_its_fields(qualname, taught):
    described = found(qualname, ALONE)
    assert described is not None and described.startswith("repaired: ")
    assert taught in described
    assert found(qualname, tuple(s for s in ALONE if s != "repair")) is None


def test_the_savers_are_methods_naming_the_reader_then_the_class_named_like_it():
    assert saving_methods(catfile) == [(Catalog, "save_as_catfile")]
    assert saving_methods(textcatalog) == [(TextCatalog, "save")]


@pytest.mark.parametrize(
    "qualname", ["siblings_pkg.catalogs.catfile", "siblings_pkg.catalogs.textcatalog"]
)
def test_a_reader_gets_the_file_the_packages_class_saves(qualname):
    described = found(qualname, ALONE)
    assert described is not None and described.startswith("repaired: ")
    assert "the path of a file holding what the package's own writer writes" in described
    assert found(qualname, tuple(s for s in ALONE if s != "repair")) is None


def test_the_saved_file_is_in_the_readers_format():
    lesson = Lesson("catfile", Want.WRITTEN)
    [path] = synthesize_call("siblings_pkg.catalogs.catfile", 10, repairs=(lesson.literal(),))[1]
    assert Path(str(path)).read_bytes().startswith(MAGIC)


def test_the_standard_input_survives_a_call_that_wraps_and_closes_it():
    """Measured calls read the worker's standard input again and again: the first call's
    collected wrapper must not close it for the next (in a trial, and in the worker)."""
    assert found("siblings_pkg.console.stdin_text", ALONE) is not None
    call = "import siblings_pkg.console as c; print(repr(c.stdin_text() + c.stdin_text()))"
    fixtures = str(Path(__file__).parent / "fixtures")
    for kept, expected in ((True, "''"), (False, "closed file")):
        setup = "from apiprof.engine.scenarios.trial import keep_standard_input_open as k; k(); "
        ran = subprocess.run(
            [sys.executable, "-c", (setup if kept else "") + call],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": fixtures},
            timeout=120,
            check=False,
        )
        assert expected in ran.stdout + ran.stderr


def test_a_named_tuples_fields_take_any_value():
    assert stored_as_is(Tally, "hits") and not stored_as_is(Tally, "total")
    assert not stored_as_is(Report, "limit")  # a class whose constructor can be read
    described = found("siblings_pkg.tallies.Tally", ALONE)
    assert described == (
        "heuristics: synthesised arguments (variant 0); types from hits: heuristics, "
        "misses: heuristics"
    )
    assert found("siblings_pkg.tallies.Tally", tuple(s for s in ALONE if s != "heuristics")) is None


# -- a real scan, through the command line ------------------------------------------------------


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """The default command, and ``--no-prepare --no-results``."""
    home = tmp_path_factory.mktemp("siblings")
    on = scan_summary(home, "on", package="siblings_pkg")
    off = scan_summary(home, "off", "--no-prepare", "--no-results", package="siblings_pkg")
    return home, {"on": on, "off": off}


def test_the_default_scan_prepares_receivers_and_reads_saved_files(scans):
    home, summaries = scans
    on, off = summaries["on"], summaries["off"]
    assert on["profiled"] == on["discovered"], on["not_profiled"]
    assert on["profiled_by_source"]["prepared"] >= 2
    assert on["profiled_by_source"]["repaired"] >= 5  # 3 files or streams, 2 unpackings
    assert "prepared" not in off["profiled_by_source"]
    missed = {entry["qualname"] for entry in off["not_profiled"]}
    assert {"siblings_pkg.reports.Report.error", "siblings_pkg.reports.DeferredReport.error"} <= (
        missed
    )
    shown = run("apiprof", "show", "siblings_pkg.reports.Report.error", "--db", "on.db", cwd=home)
    assert shown.returncode == 0, shown.stderr
    assert "Report.start_file(" in shown.stdout
    assert ScenarioSource.PREPARED.value in shown.stdout
