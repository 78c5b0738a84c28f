"""Arguments only the package's own parts make work: a match of its regular expression (source
``patterns``), its data file (source ``package_data``), a command line its argparse parser
accepts (the repair, reading the parser). Each rule is checked on ``ownparts_pkg`` with its
source and without it (``--no-patterns``, ``--no-package-data``, ``--no-repair``), where the
same entry point stays rejected; then through the command line."""

from __future__ import annotations

import argparse
import re
import sys

import pytest
from ownparts_pkg.tables import load_table
from test_repair import scan_summary  # the fixture scanned through the command line
from test_self_drive import run  # apiprof's commands in a subprocess, fixtures importable

from apiprof.engine.scenarios.argvparser import argv_tokens, parser_of
from apiprof.engine.scenarios.building import SOURCES
from apiprof.engine.scenarios.examples import ExampleValues
from apiprof.engine.scenarios.packagedata import PackageFile, with_package_files
from apiprof.engine.scenarios.regextext import match_of, matching_text
from apiprof.engine.scenarios.repaired import named_word
from apiprof.engine.scenarios.synthesized import find_synthesized_scenario
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.engine.scenarios.typetext import PathMarker
from apiprof.model.records import ScenarioSource

RULES = {
    # a handler called with a match of its own pattern, and the text the match was taken from
    "ownparts_pkg.handlers.Handler.handleMatch": (
        "patterns",
        "m: patterns (a match of '<(?P<name>[a-z]+)>(.*?)</(?P=name)>'), "
        "data: patterns (the text of the match beside it)",
    ),
    # a callback for re.sub: a match of the module's pattern that has both numeric groups
    "ownparts_pkg.on_number": ("patterns", "m: patterns (a match of 'v?(\\\\d+)"),
    # a parser that starts by matching its argument with the module's compiled pattern
    "ownparts_pkg.parse_version": ("patterns", "text: patterns (text 'v?(\\\\d+)"),
    # ... a literal pattern compiled in place, matched against the stripped parameter
    "ownparts_pkg.handlers.parse_pair": (
        "patterns",
        "line: patterns (text '(\\\\w+)=(\\\\w+)' matches)",
    ),
    # ... and a list whose every element it matches
    "ownparts_pkg.handlers.header_levels": (
        "patterns",
        "lines: patterns (texts '(#+) (\\\\w+)' matches)",
    ),
    # ... one call further, where the parser tries three forms and the maker wants the last
    "ownparts_pkg.stamps.clock": ("patterns", "raw: patterns (text '^([01]\\\\d|2[0-3])"),
    # a reader of the package's own data format: the path of the file that ships with it
    "ownparts_pkg.load_table": ("package_data", "path: package_data (the package's table.bin)"),
    # ... and its bytes, where the module names the file
    "ownparts_pkg.table_rows": ("package_data", "(the package's table.bin as bytes)"),
    # argparse: a subcommand whose required options the usage line leaves out
    "ownparts_pkg.main": (
        "repair",
        "learned from the argument parser of SystemExit 'usage: ownparts [-h] {count} ...': "
        "sys.argv names 'count', '--input', 'input', '--unit', 'lines', '--limit', '1'",
    ),
    # ... and a tool that ends with sys.exit(0) when it worked: that is its return
    "ownparts_pkg.cli.check": (
        "repair",
        "sys.argv names 'document'; a clean exit (SystemExit 0) ends the call as a return does",
    ),
    # a text stream where the call reads bytes ("can't concat str to bytes"): a binary one
    "ownparts_pkg.streams.LatinReader": (
        "repair",
        "learned from TypeError can't concat str to bytes: stream of type binary file",
    ),
    # a dotted module name (the repair: "No module named", then the attribute it lacked)
    "ownparts_pkg.plugins.load_plugin": (
        "repair",
        "name the name of a module of the package with 'make_plugin'",
    ),
}


@pytest.mark.parametrize("qualname", list(RULES))
def test_each_rule_builds_the_packages_own_part_and_says_so(qualname):
    source, described = RULES[qualname]
    argv = list(sys.argv)
    spec, failure = find_synthesized_scenario(qualname, (10,))
    assert spec is not None, failure
    assert described in spec.description
    credited = ScenarioSource.REPAIRED if source == "repair" else ScenarioSource(source)
    assert spec.source is credited
    assert try_scenario(spec)[0] is None  # as the measuring worker rebuilds it
    sys.argv[:] = argv
    without = tuple(name for name in SOURCES if name != source)
    off, _ = find_synthesized_scenario(qualname, (10,), sources=without)
    sys.argv[:] = argv
    assert off is None, "the other sources already call it: the rule is not what made it"


@pytest.mark.parametrize(
    ("pattern", "groups"),
    [
        (r"(\*)([^\*]+)\1", (1, 2)),  # a backreference repeats the group
        (r"(?P<year>\d{4})-(?P<month>\d\d)", ("year", "month")),
        (r"(?<=@)(\w+)\.(com|org)", (1, 2)),  # a look-behind is written before the match
        (r"<(/?[a-z]+)(?:\s+[^>]*)?>", (1,)),
        (r"(?i)[^\W\d_x]+(x)?", (1,)),  # an optional group takes part
        (rb"\x00(\d+)\xff", (1,)),
    ],
)
def test_generated_text_matches_with_every_group(pattern, groups):
    compiled = re.compile(pattern)
    found = matching_text(compiled, 10)
    assert found is not None
    match = match_of(compiled, found[0])
    assert match is not None
    assert all(match.group(group) is not None for group in groups)


def test_the_first_unbounded_repetition_is_the_size_axis():
    pattern = re.compile(r"(\d+)\.(\d+)")
    small, sized = matching_text(pattern, 10) or ("", False)
    large, _ = matching_text(pattern, 1000) or ("", False)
    assert sized and len(large) - len(small) == 990


def test_a_parsers_command_line_names_every_required_part():
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("source")
    parser.add_argument("--out", type=argparse.FileType("w"), required=True)
    parser.add_argument("--pair", nargs=2, type=float, required=True)
    parser.add_argument("-v", action="store_true")
    either = parser.add_mutually_exclusive_group(required=True)
    either.add_argument("--fast", action="store_true")
    either.add_argument("--slow", action="store_true")
    tokens = argv_tokens(parser)
    assert tokens == ("--out", "out_out", "--pair", "=1.0", "=1.0", "--fast", "source")
    try:
        parser.parse_args([])
    except SystemExit as error:
        assert parser_of(error) is parser  # the parser that raised, read from the traceback


def test_a_trial_gives_the_standard_streams_their_bytes_as_measuring_does():
    spec, failure = find_synthesized_scenario("ownparts_pkg.write_bytes", (10,))
    assert spec is not None, failure  # sys.stdout.buffer exists in a trial too


def test_unhashable_candidates_pass_through_the_data_files_offer():
    examples = ExampleValues(({"zone": "UTC"},))  # unhashable: compared by identity
    found = [(examples, "examples"), (PathMarker, "heuristics")]
    offered = with_package_files(load_table, "path", found, "package_data")
    assert offered[0] == (examples, "examples")
    assert isinstance(offered[1][0], PackageFile) and offered[2][0] is PathMarker


# -- a real scan, through the command line ------------------------------------------------------


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """The default command, and with the three rules switched off."""
    home = tmp_path_factory.mktemp("ownparts")
    off = ("--no-patterns", "--no-package-data", "--no-repair")
    on = scan_summary(home, "on", package="ownparts_pkg")
    return home, {"on": on, "off": scan_summary(home, "off", *off, package="ownparts_pkg")}


def test_the_default_scan_profiles_them_and_credits_each_source(scans):
    home, found = scans
    on, off = found["on"], found["off"]
    assert on["profiled"] == on["discovered"]
    assert on["profiled_by_source"]["patterns"] >= 3
    assert on["profiled_by_source"]["package_data"] >= 2
    assert on["profiled_by_source"]["repaired"] >= 1
    assert not {"patterns", "package_data", "repaired"} & set(off["profiled_by_source"])
    assert off["profiled"] <= on["profiled"] - 8
    shown = run("apiprof", "show", "ownparts_pkg.on_number", "--db", "on.db", cwd=home)
    assert shown.returncode == 0, shown.stderr
    assert "[patterns]" in shown.stdout and "a match of" in shown.stdout


def test_a_main_that_exits_after_its_help_names_the_parser_it_held():
    """No usage error: the parser parsed nothing it refused, and the main exited itself."""

    def main():
        parser = argparse.ArgumentParser(prog="tool")
        parser.add_subparsers().add_parser("compare").add_argument("version1")
        parser.parse_args([])
        raise SystemExit()

    try:
        main()
    except SystemExit as error:
        parser = parser_of(error)
    assert parser is not None and argv_tokens(parser) == ("=compare", "version1")
    assert named_word("version1") == "1.2.3"  # on the command line: a version, not a file
    assert named_word("source") == ""
