"""Temporary paths a suite hands to entry points, replayed in another worker: wherever the path
sits in the arguments (a receiver's attribute, an item of a list) it is rebuilt with its content
in the replaying worker's own temporary folder, and a payload can never make a replay write
outside that folder."""

from __future__ import annotations

import base64
import io
import pickle
import tempfile
import types
from pathlib import Path, PurePosixPath

import pytest
from suitehelp import measured_by_replays, suite_only_options

from apiprof.engine.scan import scan
from apiprof.engine.scenarios import temppaths
from apiprof.engine.scenarios.replayed import resized, sized_index


@pytest.fixture
def two_workers(tmp_path, monkeypatch):
    """The capturing worker's temporary folder, and a function switching to the replaying one."""
    capturing, replaying = tmp_path / "capturing", tmp_path / "replaying"
    capturing.mkdir()
    replaying.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(capturing))
    return capturing, lambda: monkeypatch.setattr(tempfile, "tempdir", str(replaying))


def test_a_path_held_by_a_receiver_or_inside_a_list_travels_with_its_content(two_workers):
    capturing, switch = two_workers
    page = capturing / "pytest-suite" / "test_save0" / "page.txt"
    page.parent.mkdir(parents=True)
    page.write_text("first draft")
    receiver = types.SimpleNamespace(path=str(page), name="/not/under/the/temp/folder")
    data = temppaths.dumps((receiver, [page, str(page)]), {})
    page.write_text("changed after the call")  # the state at the call is what travels

    switch()
    (got, [as_path, as_text]), _ = temppaths.loads(data)
    rebuilt = Path(got.path)
    assert rebuilt != page and rebuilt.is_relative_to(tempfile.gettempdir())
    assert rebuilt.read_text() == "first draft"
    assert got.name == "/not/under/the/temp/folder"  # other absolute texts are left alone
    assert isinstance(as_path, Path) and as_path == rebuilt and as_text == got.path


class _Forging(pickle.Pickler):
    """A pickler that hands ``pid`` as the persistent id of the string "marker" (an instance's
    ``persistent_id`` is read-only on 3.13's C pickler: a subclass defines it)."""

    def __init__(self, file: io.BytesIO, pid: tuple[object, ...]) -> None:
        super().__init__(file)
        self.pid = pid

    def persistent_id(self, obj: object) -> object:
        return self.pid if obj == "marker" else None


def test_a_payload_leading_out_of_the_replay_folder_is_refused(two_workers, tmp_path):
    _, switch = two_workers
    switch()
    outside = tmp_path / "outside.txt"
    for relative, kind, content in [
        ("../../outside.txt", "file", b"x"),
        (str(outside), "file", b"x"),
        ("folder", "dir", {"../../../outside.txt": b"x"}),
    ]:
        buffer = io.BytesIO()
        pid = (temppaths.PATH_ID, str, relative, kind, content)
        _Forging(buffer, pid).dump((("marker",), {}))
        with pytest.raises(pickle.UnpicklingError, match="leading out of its folder"):
            temppaths.loads(buffer.getvalue())
    assert not outside.exists()


NOTEBOOK = '''
class Notebook:
    """Keeps its file's path; save() writes there, load() reads it back."""

    def __init__(self, path):
        self.path = path
        self.lines = []

    def add(self, line):
        self.lines.append(line)

    def save(self):
        with open(self.path, "w", encoding="utf-8") as stream:
            stream.write("\\n".join(self.lines))

    def load(self):
        with open(self.path, encoding="utf-8") as stream:
            return stream.read().splitlines()

    def export(self, path):
        with open(path, "w", encoding="utf-8") as stream:
            stream.write("\\n".join(self.lines))
'''

NOTEBOOK_TESTS = """
import tempfile

from notebook_pkg import Notebook


def test_saves_and_loads_in_tmp_path(tmp_path):
    book = Notebook(str(tmp_path / "book.txt"))
    book.add("one")
    book.save()
    assert book.load() == ["one"]
    book.export(str(tmp_path / "copy.txt"))  # a path to be made: never cut to a size


def test_saves_into_a_mkstemp_file():
    handle, path = tempfile.mkstemp(suffix=".txt")
    book = Notebook(path)
    book.add("two")
    book.save()
    assert book.load() == ["two"]
"""


def test_a_receiver_holding_a_temporary_path_replays_in_its_own_worker(tmp_path):
    """Notebook.save and load are called on a receiver whose path is in the suite worker's
    tmp_path or a mkstemp file, export with a path it makes there: their captured calls replay
    (nothing refused), measured by scenarios of their own."""
    package = tmp_path / "site" / "notebook_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(NOTEBOOK, encoding="utf-8")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_notebook.py").write_text(NOTEBOOK_TESTS, encoding="utf-8")
    db_path = tmp_path / "notebook.db"
    options = suite_only_options(suite, package.parent, capture=True)
    summary = scan("notebook_pkg", db_path=db_path, options=options)

    assert summary.tests.outcomes["passed"] == 2 and summary.tests.blocked == []
    assert summary.not_profiled == []
    replayed = measured_by_replays(db_path)
    assert {
        "notebook_pkg.Notebook.save",
        "notebook_pkg.Notebook.load",
        "notebook_pkg.Notebook.export",
    } <= replayed
    # what was captured names the suite's own temporary paths, which no replay used
    saves = [c for c in summary.tests.captured if c.qualname == "notebook_pkg.Notebook.save"]
    assert saves and all(c.payload for c in saves)
    data = base64.b64decode(saves[0].payload)
    assert temppaths.PATH_ID.encode() in data


def test_paths_outside_the_temporary_folder_pickle_as_they_are(two_workers):
    _, switch = two_workers
    data = temppaths.dumps((PurePosixPath("/etc/hostname"), "/etc/hostname", "relative/x"), {})
    switch()
    assert temppaths.loads(data) == (
        (PurePosixPath("/etc/hostname"), "/etc/hostname", "relative/x"),
        {},
    )
    assert pickle.loads(data) == temppaths.loads(data)  # nothing of ours in it


def test_a_path_is_never_the_size_axis_of_a_replay(two_workers):
    """Cut or stretched, a path names another place: the list beside it is resized instead."""
    capturing, switch = two_workers
    out = capturing / "pytest-suite" / "test_out0" / "out.txt"  # to be made by the call
    out.parent.mkdir(parents=True)
    data = temppaths.dumps((str(out), ["a", "b"]), {})
    switch()
    args, kwargs = temppaths.loads(data)
    assert sized_index(args, kwargs) == (1, 2)
    (path, lines), _ = resized(args, kwargs, 10)
    assert path == args[0] and lines == ["a", "b"] * 5
    assert sized_index((args[0],), {}) is None
    assert sized_index(("/no/such/folder/x", "ab"), {}) == (0, 17)  # text, not a path here
