"""Scenario specs, the TOML scenario-file format (with file:line errors), compiling, collecting."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from apiprof.engine.discovery.discover import discover
from apiprof.engine.scenarios.collect import collect_scenarios
from apiprof.engine.scenarios.files import load_scenario_file
from apiprof.engine.scenarios.locate import locate_keys
from apiprof.engine.scenarios.spec import ScenarioSpec, compile_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.errors import ScenarioFileError
from apiprof.model.codec import from_data, to_data
from apiprof.model.records import Coverage, Failure, Scenario, ScenarioSource

FIXTURES = Path(__file__).parent / "fixtures"
DOCS = Path(__file__).parent.parent / "docs" / "scenario-format.md"


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


VALID = '''
format = 1
package = "textwrap"

[defaults]
setup = "import textwrap"
size_axis = "n"
repeat = 5

[[scenario]]
name = "wrap-words"
target = "textwrap.wrap"
description = "n words"
inputs = { word = "abc", width = 20 }
setup = """
text = " ".join([word] * n)
"""
call = "textwrap.wrap(text, width=width)"
sizes = [1, 50]
targets = ["textwrap.wrap", "textwrap.TextWrapper.wrap"]

[[scenario]]
name = "dedent"
target = "textwrap.dedent"
call = "textwrap.dedent('  x')"
size_axis = ""
repeat = 3

[[scenario]]
name = "template"
target = "textwrap.fill"
enabled = false
call = "textwrap.fill(...)"
'''


def test_a_valid_file_gives_specs_with_defaults_inputs_and_sizes(tmp_path):
    wrap, dedent = load_scenario_file(write(tmp_path, VALID))
    assert wrap.id == "file:s.toml#wrap-words" and wrap.source is ScenarioSource.FILE
    assert (wrap.qualname, wrap.size_axis, wrap.sizes, wrap.repeat) == (
        "textwrap.wrap",
        "n",
        (1, 50),
        5,
    )
    assert wrap.targets == ("textwrap.wrap", "textwrap.TextWrapper.wrap")
    assert (
        wrap.setup.index("import textwrap")
        < wrap.setup.index("word = 'abc'")
        < wrap.setup.index("join")
    )
    assert (dedent.size_axis, dedent.sizes, dedent.repeat, dedent.measured) == (
        "",
        (),
        3,
        ("textwrap.dedent",),
    )
    assert compile_scenario(wrap, 50)() == textwrap.wrap(" ".join(["abc"] * 50), width=20)
    assert compile_scenario(dedent, None)() == "x"


def test_spec_round_trips_through_json_and_converts_to_a_record(tmp_path):
    spec = load_scenario_file(write(tmp_path, VALID))[0]
    assert from_data(ScenarioSpec, json.loads(json.dumps(to_data(spec)))) == spec
    assert spec.to_scenario() == Scenario(
        spec.id, "textwrap.wrap", ScenarioSource.FILE, "n words", "n", spec.setup, spec.call
    )


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = "t"\ncall = "f()"\nsize = [1]\n',
            6,
            "unknown key `size` in [[scenario]]; did you mean `sizes`?",
        ),
        (
            'format = 1\n\n[[scenario]]\nname = "a"\ntarget = "t"\ncall = "f()"\n'
            '[[scenario]]\nname = "b"\ntarget = "t"\ncall = "f()"\nsize_axis = "n"\nsizes = ["ten"]\n',
            12,
            "`sizes` must be a non-empty array of integers >= 0, got ['ten']",
        ),
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = 3\ncall = "f()"\n',
            4,
            "`target` must be a string, got 3",
        ),
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = "t"\nrepeat = true\ncall = "x"\n',
            5,
            "`repeat` must be an integer, got True",
        ),
        ('package = "x"\n', 1, "missing `format = 1`"),
        ("# comment\nformat = 2\n", 2, "unsupported format 2; this apiprof reads format 1"),
        ('format = 1\n[[scenario]]\nname = "a"\ntarget = "t"\n', 2, "[[scenario]] needs `call`"),
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = "t"\ncall = "x"\nsizes = [1]\n',
            6,
            "`sizes` needs `size_axis`",
        ),
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = "t"\ncall = "x"\n'
            '[[scenario]]\nname = "a"\ntarget = "t"\ncall = "y"\n',
            7,
            "duplicate scenario name 'a' (first used on line 3)",
        ),
        (
            'format = 1\n[defaults]\nsetupp = "x"\n',
            3,
            "unknown key `setupp` in [defaults]; did you mean `setup`?",
        ),
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = "t"\ncall = "x"\n[scenario.inputs]\n"bad name" = 1\n',
            7,
            "input name 'bad name' is not a Python variable name",
        ),
        ("format = 1\nfoo = [\n  1,\n]\n", 2, "unknown key `foo` in the file"),
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = "t"\ncall = "f(("\n',
            5,
            "Python syntax error in `call`: '(' was never closed",
        ),
        (
            'format = 1\n[[scenario]]\nname = "a"\ntarget = "t"\n\ncall = "return 1"\n',
            6,
            "Python syntax error in `call`: 'return' outside function",
        ),
        ('format = 1\n[[scenario]\nname = "a"\n', 2, "not valid TOML"),
        ("format = 1\nx = \n", 2, "not valid TOML"),
    ],
)
def test_errors_name_the_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario_file(path)
    assert caught.value.line == line, str(caught.value)
    assert caught.value.path == str(path)
    assert message in caught.value.problem
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_syntax_error_inside_multiline_setup_points_at_the_bad_line(tmp_path):
    path = write(
        tmp_path,
        '''
        format = 1

        [[scenario]]
        name = "a"
        target = "t"
        setup = """
        x = 1
        y = (
        """
        call = "x"
    ''',
    )
    with pytest.raises(ScenarioFileError) as caught:
        load_scenario_file(path)
    assert caught.value.line == 8  # the `y = (` line of the file


def test_unreadable_file_is_a_scenario_file_error(tmp_path):
    with pytest.raises(ScenarioFileError, match="cannot read the scenario file"):
        load_scenario_file(tmp_path / "missing.toml")


def test_locate_keys_ignores_code_in_multiline_strings_and_arrays():
    text = textwrap.dedent('''
        format = 1
        [[scenario]]
        setup = """
        name = "not a key"
        """
        sizes = [
          1,
        ]
        [[scenario]]
        name = "second"
        [scenario.inputs]
        text = 'a = b'
    ''').lstrip("\n")
    lines = locate_keys(text)
    assert lines[("format",)] == 1
    assert lines[("scenario", 0)] == 2 and lines[("scenario", 0, "setup")] == 3
    assert ("scenario", 0, "name") not in lines
    assert lines[("scenario", 0, "sizes")] == 6
    assert lines[("scenario", 1, "name")] == 10
    assert lines[("scenario", 1, "inputs", "text")] == 12


def test_compile_scenario_binds_the_size_and_gives_each_size_a_fresh_namespace():
    spec = ScenarioSpec(
        "t#1",
        "builtins.sorted",
        ScenarioSource.FILE,
        "",
        setup="data = list(range(n, 0, -1))\ncalls = 0",
        call="calls = calls + 1\nresult = sorted(data)\nlen(result)",
        size_axis="n",
        sizes=(3, 10),
    )
    small = compile_scenario(spec, 3)
    assert small() == 3 and small() == 3
    big = compile_scenario(spec, 10)
    assert big() == 10
    # assignments behave as at module level: they rebind the namespace's names, run after run
    assert small.__globals__["calls"] == 2 and big.__globals__["calls"] == 1
    assert small.__globals__["result"] == [1, 2, 3]
    with pytest.raises(ValueError, match="has size axis 'n'"):
        compile_scenario(spec, None)


def test_compile_scenario_handles_statements_that_cannot_live_in_a_function():
    setup = (
        "import sys, types\nbox = sys.modules['_apiprof_test_box'] = types.SimpleNamespace(runs=[])"
    )
    spec = ScenarioSpec(
        "t#2",
        "math.sqrt",
        ScenarioSource.FILE,
        "",
        setup=setup,
        call="from math import *\nbox.runs.append(sqrt(16.0))",
    )
    run = compile_scenario(spec, None)
    try:
        run()
        run()
        assert sys.modules["_apiprof_test_box"].runs == [
            4.0,
            4.0,
        ]  # a star import needs module level
    finally:
        del sys.modules["_apiprof_test_box"]
    empty = ScenarioSpec("t#3", "x", ScenarioSource.FILE, "", setup="", call="# nothing")
    assert compile_scenario(empty, None)() is None


def test_try_scenario_reports_where_it_failed():
    def spec(setup: str, call: str) -> ScenarioSpec:
        return ScenarioSpec("t", "x", ScenarioSource.FILE, "", setup=setup, call=call)

    def reason(setup: str, call: str) -> str:
        failure, _ = try_scenario(spec(setup, call))
        assert failure is not None and failure.kind == Coverage.NO_ARGUMENTS
        return failure.reason

    assert try_scenario(spec("x = 1", "x + 1")) == (None, 2)
    assert reason("1/0", "x") == "raised ZeroDivisionError: division by zero in setup"
    assert reason("it = iter([1])", "next(it)") == "raised StopIteration in repeated call"
    assert reason("import sys", "sys.exit(3)") == "raised SystemExit: 3 in call"
    memory, _ = try_scenario(spec("", "raise MemoryError"))
    assert memory is not None and memory.kind == Coverage.MEMORY
    # a package exception whose __str__ itself raises (PyYAML's marks over synthesised state)
    # is still a rejected argument, not a crash of the entry point
    unprintable = "class Marked(Exception):\n    def __str__(self):\n        return 'ab'[5]\n"
    assert reason(unprintable, "raise Marked()") == (
        "raised Marked: <its message could not be formed: IndexError> in call"
    )


def test_collect_combines_files_docstrings_and_synthesis(tmp_path):
    discovery = discover("discover_pkg")
    path = write(
        tmp_path,
        """
        format = 1
        [[scenario]]
        name = "handle"
        target = "discover_pkg.needs_handle"
        setup = "import discover_pkg"
        call = "discover_pkg.needs_handle(object())"
    """,
    )
    specs, missing = collect_scenarios(discovery, [path], sizes=(4, 8))
    sources = {(spec.qualname, spec.source) for spec in specs}
    assert ("discover_pkg.needs_handle", ScenarioSource.FILE) in sources
    assert ("discover_pkg.scale", ScenarioSource.DOCSTRING) in sources
    assert ("discover_pkg.scale", ScenarioSource.SYNTHESIZED) in sources
    synth_scale = next(s for s in specs if s.id == "synth:discover_pkg.scale")
    assert synth_scale.sizes == (4, 8) and synth_scale.size_axis == "n"
    # its example uses open() and is not run; its `path` (annotation unresolvable) becomes a
    # real file in the temporary directory, by the parameter's name
    assert set(missing) == set()
    assert ("discover_pkg.read_config", ScenarioSource.HEURISTICS) in sources
    for spec in specs:  # everything collected runs
        assert try_scenario(spec)[0] is None, spec.id


def test_collect_reports_why_and_respects_disabled_sources():
    discovery = discover("discover_pkg")
    specs, missing = collect_scenarios(discovery, docstrings=False)
    assert all(spec.id.startswith("synth:") for spec in specs)
    assert missing["discover_pkg.needs_handle"].kind is Coverage.NO_ARGUMENTS
    assert missing["discover_pkg.needs_handle"].reason.startswith(
        "needs arguments we could not synthesise: parameter 'handle' has no annotation or "
        "default, and no source says what it is (asked: annotation, docstring types, examples, "
        "heuristics"
    )
    specs, missing = collect_scenarios(discovery, docstrings=False, synthesize=False)
    assert specs == [] and missing["discover_pkg.area"].reason == "no scenario source was enabled"


def test_stdlib_packages_reach_ninety_percent_coverage():
    for package in ("textwrap", "statistics", "colorsys"):
        discovery = discover(package)
        specs, missing = collect_scenarios(discovery)
        covered = {q for spec in specs for q in spec.measured}
        ratio = len(covered & {ep.qualname for ep in discovery.entry_points}) / len(
            discovery.entry_points
        )
        assert ratio >= 0.9, (package, missing)


def test_the_documented_examples_are_valid_and_run(tmp_path):
    blocks = re.findall(r"```toml\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 2
    for index, block in enumerate(blocks):
        specs = load_scenario_file(write(tmp_path, block, f"example{index}.toml"))
        assert specs
        for spec in specs:
            for size in spec.sizes[:2] or (None,):
                assert try_scenario(spec, size)[0] is None, spec.id


def test_trials_time_out_and_leave_an_enclosing_timer_running(monkeypatch):
    import signal

    from apiprof.engine.scenarios import trial as scenarios

    monkeypatch.setattr(scenarios, "TRIAL_SECONDS", 0.05)
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        spec = ScenarioSpec("t", "x", ScenarioSource.FILE, "", setup="", call="while True: pass")
        timed_out = Failure(
            Coverage.TIMED_OUT,
            "took longer than 0.05 s on a trial call",
            scenario="t",
            phase="call",
        )
        assert try_scenario(spec) == (timed_out, None)
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25.0 < remaining <= 30.0 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
