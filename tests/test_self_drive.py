"""Self-driven capture: the methods of a parser and a scanner that only work mid-stream
(``driven_pkg``: no annotations on them, no docstring examples) are profiled with what the
package passes them while its own working scenarios run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from apiprof.engine.isolation.contract import violation
from apiprof.engine.isolation.protocol import DriveCapture, Driven
from apiprof.engine.measure import profiler
from apiprof.engine.scenarios.capture import CapturedCall, capturing, recorder_for
from apiprof.engine.scenarios.doctexts import docstring_text, literal_blocks
from apiprof.engine.scenarios.drive import drive_capture
from apiprof.engine.scenarios.drivenspecs import driver_spec, replay_spec, through_driver_spec
from apiprof.engine.scenarios.replayed import captured_spec
from apiprof.engine.scenarios.shown import shown_arguments
from apiprof.engine.scenarios.spec import ScenarioSpec, compile_scenario
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.model.records import Metric, ScenarioSource

FIXTURES = Path(__file__).parent / "fixtures"
SCAN_NUMBER = "driven_pkg.Scanner.scan_number"
PARSE_ITEM = "driven_pkg.Parser.parse_item"
WATCHED = [SCAN_NUMBER, PARSE_ITEM]
EXAMPLE = ScenarioSpec(
    "doc:driven_pkg.parse#1",
    "driven_pkg.parse",
    ScenarioSource.DOCSTRING,
    "an example",
    "import driven_pkg\n",
    "driven_pkg.parse('[1, [22, 3]]')",
)


@pytest.fixture(scope="module")
def driven():
    return drive_capture(WATCHED, [EXAMPLE])


def test_a_driver_reaches_mid_stream_methods_and_their_arguments_are_kept(driven):
    assert driven.reach == {EXAMPLE.id: sorted(WATCHED)}
    copied = [call for call in driven.calls if call.qualname == SCAN_NUMBER]
    assert copied and all(call.payload and call.driver == EXAMPLE.id for call in copied)
    assert "Scanner(text='[1, [22, 3]]', pos=1, depth=1)" in copied[0].shown  # state, no address
    [uncopyable] = [call for call in driven.calls if call.qualname == PARSE_ITEM]
    assert not uncopyable.payload and "generator" in uncopyable.problem


def test_a_receiver_whose_state_points_back_at_it_is_shown_one_level_deep():
    # html5lib's parser holds phases that hold the parser: showing state recursively raised
    # RecursionError inside the capture hook, and every call captured from an example was lost
    class Phase:
        def __init__(self, parser: object) -> None:
            self.parser = parser

    class Parser:
        def __init__(self) -> None:
            self.text = "<p>"
            self.phase = Phase(self)

    shown = shown_arguments((Parser(),), {})
    assert shown == "(Parser(text='<p>', phase=<Phase>))"


def test_calls_apiprof_itself_makes_while_capturing_are_not_the_packages():
    # the worker encodes its protocol messages with json.dumps while an example runs: they
    # were captured and replayed as json.dumps scenarios
    import json

    from apiprof.engine.isolation.protocol import encode

    recorder = recorder_for(["json.dumps"])
    with capturing(recorder):
        encode("single", {"key": "from apiprof"})
        json.dumps({"key": "from the example"})
    [call] = recorder.results()
    assert "from the example" in call.shown


def test_each_measured_call_gets_a_fresh_receiver_and_only_its_own_cost_is_measured(driven):
    call = next(call for call in driven.calls if call.qualname == SCAN_NUMBER)
    spec = replay_spec(call, 1)
    assert spec.source is ScenarioSource.DRIVEN and EXAMPLE.id in spec.description
    assert try_scenario(spec, calls=3)[0] is None
    # the same receiver for every call: the scanner has moved past its number after the first
    reused = captured_spec(CapturedCall(SCAN_NUMBER, call.payload, EXAMPLE.id), 1)
    assert "ValueError: no number" in try_scenario(reused)[0].reason
    import driven_pkg

    target = profiler.Target(SCAN_NUMBER, driven_pkg.Scanner.scan_number)
    run = compile_scenario(spec, None)
    report = profiler.profile(run, [target], scenario_id=spec.id, repeat=5, max_seconds=2)
    calls = next(m.histogram for m in report.measurements if m.metric is Metric.CALLS)
    assert (
        report.seen == {SCAN_NUMBER} and calls.total == calls.count
    )  # one call per run: not the copying


def test_uncopyable_receivers_rerun_the_driver_measuring_only_their_calls():
    spec = through_driver_spec(PARSE_ITEM, EXAMPLE.id, EXAMPLE, "cannot pickle generator")
    assert spec.measured == (PARSE_ITEM,) and spec.source is ScenarioSource.DRIVEN
    assert try_scenario(spec)[0] is None
    import driven_pkg

    target = profiler.Target(PARSE_ITEM, driven_pkg.Parser.parse_item)
    report = profiler.profile(
        compile_scenario(spec, None), [target], scenario_id=spec.id, repeat=5, max_seconds=2
    )
    calls = next(m.histogram for m in report.measurements if m.metric is Metric.CALLS)
    assert calls.total == 6 * calls.count  # [ 1 [ 22 3 ] ] after the opening bracket: 6 steps


def test_a_round_trip_feeds_one_drivers_text_to_another():
    """``parse`` made up a word (it parses as itself and reaches nothing); ``dump``'s output is
    a list in the language, so ``parse(dump(...))`` reaches the scanner and the parser."""
    drivers = [
        find_synthesized_scenario(q, (10, 100))[0] for q in ("driven_pkg.parse", "driven_pkg.dump")
    ]
    assert all(drivers)
    found = drive_capture(WATCHED, drivers)
    trip = "roundtrip:synth:driven_pkg.parse <- synth:driven_pkg.dump"
    assert found.reach[trip] == sorted(WATCHED)
    assert all(ref.startswith("roundtrip:") for ref in found.reach)  # alone, neither reaches
    # parse, dump, dump fed two richer values, parse fed the three texts dump made and the
    # one a docstring shows
    assert found.drivers_run == 8
    documented = "roundtrip:synth:driven_pkg.parse <- doctext:driven_pkg.Parser.parse#1"
    assert found.reach[documented] == sorted(WATCHED)


def test_literal_blocks_of_docstrings_are_texts_of_the_package():
    doc = """Render it.

    .. sourcecode:: jinja
       :linenos:

        {% for x in y %}{{ x }}{% endfor %}

    In short::

        [1, 2]

    >>> render("{{ 1 }}")
    '1'
    """
    assert literal_blocks(doc) == ["{% for x in y %}{{ x }}{% endfor %}\n", "[1, 2]\n"]
    # a first line's block, as written and as Python 3.13 strips it: one paragraph
    for first in ("Such as::\n\n        [1]\n\n    More.\n", "Such as::\n\n[1]\n\nMore.\n"):
        assert literal_blocks(first) == ["[1]\n"]
    assert docstring_text("driven_pkg.Parser.parse", 1) == "[7, [8, 9]]\n"
    assert driver_spec("doctext:driven_pkg.Parser.parse#1", {}).call == (
        "docstring_text('driven_pkg.Parser.parse', 1)"
    )
    assert driver_spec("doctext:not a name#1", {}) is None


def test_drivers_are_named_so_the_scanner_rebuilds_them_from_what_it_sent():
    dump = find_synthesized_scenario("driven_pkg.dump", (10, 100))[0]
    drivers = {EXAMPLE.id: EXAMPLE, dump.id: dump}
    trip = driver_spec(f"roundtrip:{EXAMPLE.id} <- rich:{dump.id}", drivers)
    assert trip is not None and "rich_value('rich')" in trip.setup and not trip.size_axis
    assert driver_spec(f"plain:{dump.id}", drivers).id == f"plain:{dump.id}"
    for invented in ("rich:synth:elsewhere", f"roundtrip:{EXAMPLE.id} <- doc:x#1", "exec:x"):
        assert driver_spec(invented, drivers) is None


def test_a_round_trip_whose_name_would_be_too_long_is_not_run():
    parse, dump = (
        find_synthesized_scenario(q, (10,))[0] for q in ("driven_pkg.parse", "driven_pkg.dump")
    )
    long = replace(parse, id="synth:" + "p" * 500)
    found = drive_capture(WATCHED, [long, dump])
    assert found.reach == {}  # parse(dump(...)) would be named over 512 characters
    assert (
        violation(
            DriveCapture("driven_pkg", WATCHED, [long, dump]), Driven(found.calls, found.reach)
        )
        == ""
    )


def test_a_worker_may_not_name_drivers_or_entry_points_it_was_not_given(driven):
    request = DriveCapture("driven_pkg", WATCHED, [EXAMPLE])
    assert violation(request, Driven(driven.calls, driven.reach)) == ""
    invented = Driven([], {"file:evil.toml#x": [SCAN_NUMBER]})
    assert "did not send" in violation(request, invented)
    elsewhere = Driven([], {EXAMPLE.id: ["driven_pkg.parse"]})
    assert "did not watch" in violation(request, elsewhere)


# -- a real scan, through the command line ------------------------------------------------------


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(FIXTURES), COLUMNS="200")
    bin_dir = Path(sys.executable).parent
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """The fixture scanned with the default command, and with ``--no-self-drive``."""
    home = tmp_path_factory.mktemp("driven")
    found = {}
    for name, extra in (("on", []), ("off", ["--no-self-drive"])):
        out = run(
            "apiprof-scan",
            "driven_pkg",
            *("--db", f"{name}.db", "--summary-json", f"{name}.json"),
            *("--repeat", "3", "--sizes", "10,30", "--quiet", *extra),
            cwd=home,
        )
        assert out.returncode == 0, out.stderr
        [summary] = json.loads((home / f"{name}.json").read_text())["packages"]
        found[name] = summary
    return home, found


def test_the_default_scan_profiles_mid_stream_methods_and_says_how(scans):
    home, found = scans
    summary = found["on"]
    assert summary["profiled"] == summary["discovered"]
    drive = summary["self_drive"]
    assert set(WATCHED) <= set(drive["profiled_entry_points"]) and drive["reached"] >= 2
    shown = run("apiprof", "show", SCAN_NUMBER, "--db", "on.db", cwd=home)
    assert shown.returncode == 0, shown.stderr
    assert f"driven:{SCAN_NUMBER}#1 [driven]" in shown.stdout
    assert "mid-stream while" in shown.stdout and "fresh copy" in shown.stdout
    shown = run("apiprof", "show", PARSE_ITEM, "--db", "on.db", cwd=home)
    assert "[driven]" in shown.stdout and "only these calls are measured" in shown.stdout


def test_no_self_drive_leaves_them_unprofiled(scans):
    _, found = scans
    summary = found["off"]
    assert summary["self_drive"] is None
    missing = {row["qualname"] for row in summary["not_profiled"]}
    assert set(WATCHED) <= missing


class _Walker:
    """A receiver no copy can be made of, whose copy attempts are counted."""

    attempts = 0

    def __reduce__(self):
        _Walker.attempts += 1
        raise TypeError("cannot pickle a walker mid-walk")


def test_a_receiver_that_cannot_be_copied_is_tried_once_not_on_every_handler_call():
    from apiprof.engine.scenarios.capture import Recorder

    recorder = Recorder({})
    walker = _Walker()
    for number in range(40):  # a walker's handlers, each called on the same receiver
        name = f"pkg.Walker.HANDLER{number % 8}"
        recorder.calls.setdefault(name, [])
        recorder.record(name, (walker, number), {})
    assert _Walker.attempts == 2  # the first call's copy, and the receiver alone
    problems = [call.problem for calls in recorder.calls.values() for call in calls]
    assert len(problems) == 8 and all("cannot pickle a walker" in p for p in problems)
    other = _Walker()  # another receiver is tried afresh
    recorder.record("pkg.Walker.HANDLER0", (other, 1), {})
    assert _Walker.attempts == 4
