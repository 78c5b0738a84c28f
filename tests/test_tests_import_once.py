"""``--tests`` imports the package once, the suite's way: what its import registers outside its
modules (a codec) must belong to the copy the suite tests, or its ``except`` clauses miss."""

from __future__ import annotations

from pathlib import Path

from suitehelp import run_printing_json

PACKAGE = """
import codecs


class CodecError(ValueError):
    pass


def shout(text):
    if not text.strip():
        raise CodecError("nothing to shout")
    return text.upper().encode("ascii"), len(text)


def _search(name):
    if name == "shouting":
        return codecs.CodecInfo(shout, lambda data: (data.decode("ascii"), len(data)), name=name)
    return None


codecs.register(_search)
"""

SUITE = """
import pytest

import shout_pkg


def test_the_codec_raises_the_packages_own_error():
    assert "hi".encode("shouting") == b"HI"
    with pytest.raises(shout_pkg.CodecError):
        " ".encode("shouting")
"""


def test_an_import_time_registration_belongs_to_the_copy_the_suite_imported(tmp_path: Path):
    (tmp_path / "src" / "shout_pkg").mkdir(parents=True)
    (tmp_path / "src" / "shout_pkg" / "__init__.py").write_text(PACKAGE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_shout.py").write_text(SUITE)
    script = f"""
import json, sys
sys.path.insert(0, {str(tmp_path / "src")!r})
from apiprof.engine.scenarios import testrun
runner = testrun.SuiteRunner({str(tmp_path / "tests")!r}, "shout_pkg")
captured = runner.warm_up(["shout_pkg.shout", "shout_pkg.CodecError"], capture=True)
print(json.dumps({{
    "outcomes": dict(runner.runs[0].outcomes),
    "captured": sorted({{c.shown for c in captured if c.qualname == "shout_pkg.shout"}}),
    "reached": sorted(runner.recorder.reached),
}}))
"""
    found = run_printing_json(script, tmp_path)
    assert found["outcomes"] == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}
    # and the calls the codec machinery made are still captured, with their origin
    assert found["captured"] == ["('hi')", "(' ')"] or set(found["captured"]) == {"('hi')", "(' ')"}
    assert "shout_pkg.shout" in found["reached"]


def test_a_suite_opens_its_data_files_relative_to_the_projects_root(tmp_path: Path):
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "setup.py").write_text("")  # what makes it pytest's rootdir, without an ini file
    (project / "tests" / "data.txt").write_text("tea\n")
    (project / "tests" / "helper.py").write_text("NAME = 'tests/data.txt'\n")
    (project / "tests" / "test_data.py").write_text(
        "from tests.helper import NAME\n\n"  # no __init__.py: the project's root on sys.path
        "def test_reads_its_data():\n    assert open(NAME).read() == 'tea\\n'\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = f"""
import json, os
from apiprof.engine.scenarios import testrun
runner = testrun.SuiteRunner({str(project / "tests" / "test_data.py")!r}, "json")
runner.warm_up(["json.dumps"], capture=True)
print(json.dumps({{"outcomes": dict(runner.runs[0].outcomes), "cwd": os.getcwd()}}))
"""
    found = run_printing_json(script, elsewhere)
    assert found["outcomes"] == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}
    assert found["cwd"] == str(elsewhere)  # given back afterwards


def test_the_workers_may_read_the_suites_project_folder(tmp_path: Path):
    from apiprof.engine.scan import ScanOptions
    from apiprof.engine.testsuite import suite_root

    (tmp_path / "proj" / "tests").mkdir(parents=True)
    (tmp_path / "proj" / "setup.py").write_text("")
    suite = tmp_path / "proj" / "tests" / "tests.py"
    suite.write_text("")
    assert suite_root(str(suite)) == str(tmp_path / "proj")
    options = ScanOptions(tests=str(suite))
    assert str(tmp_path / "proj") in options.worker_options().readable
