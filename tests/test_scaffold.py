"""`apiprof scenarios init`: a template file that loads as generated and runs once filled in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apiprof.engine.discovery.discover import discover
from apiprof.engine.scenarios.files import load_scenario_file
from apiprof.engine.scenarios.scaffold import write_scaffold
from apiprof.engine.scenarios.trial import try_scenario
from apiprof.errors import UsageError

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def discovery():
    return discover("discover_pkg")


def test_one_disabled_template_per_uncovered_entry_point(tmp_path, discovery):
    path = tmp_path / "scenarios.toml"
    covered = {"discover_pkg.area", "discover_pkg.scale"}
    count = write_scaffold(discovery, covered, path)
    text = path.read_text(encoding="utf-8")
    targets = re.findall(r'^target = "(.*)"$', text, re.M)
    assert count == len(targets) == len(discovery.entry_points) - 2
    assert set(targets) == {ep.qualname for ep in discovery.entry_points} - covered
    assert (
        "# discover_pkg.Shape.perimeter(length: float) -> float" in text
    )  # the signature, as a comment
    assert len(re.findall(r"^enabled = false$", text, re.M)) == count
    assert load_scenario_file(path) == []  # loads cleanly as generated


def test_a_filled_in_template_loads_and_runs(tmp_path, discovery):
    path = tmp_path / "scenarios.toml"
    write_scaffold(discovery, set(), path)
    text = path.read_text(encoding="utf-8")
    entry = text[text.index("# discover_pkg.Shape.perimeter") :]
    entry = entry[: entry.index("\n\n")]
    assert "obj = discover_pkg.Shape(...)" in entry and 'call = "obj.perimeter(length)"' in entry
    filled = (
        entry.replace("enabled = false\n", "")
        .replace("discover_pkg.Shape(...)", "discover_pkg.Shape(5)")
        .replace("length = ...", "length = 2.0")
    )
    done = tmp_path / "filled.toml"
    done.write_text(f"format = 1\n\n{filled}\n", encoding="utf-8")
    (spec,) = load_scenario_file(done)
    assert spec.qualname == "discover_pkg.Shape.perimeter"
    assert try_scenario(spec) == (None, 10.0)


def test_templates_for_the_stdlib_parse_even_with_odd_signatures(tmp_path):
    path = tmp_path / "json.toml"
    count = write_scaffold(discover("json"), set(), path)
    assert count > 10 and load_scenario_file(path) == []
    assert "decode(s, _w=" in path.read_text(encoding="utf-8")  # repr defaults stay in the comment


def test_an_existing_file_is_not_overwritten(tmp_path, discovery):
    path = tmp_path / "scenarios.toml"
    path.write_text("mine", encoding="utf-8")
    with pytest.raises(UsageError, match="already exists"):
        write_scaffold(discovery, set(), path)
    assert path.read_text(encoding="utf-8") == "mine"
    assert write_scaffold(discovery, set(), path, overwrite=True) > 0
