"""Captured paths into a test's temporary folder, carried over to the worker that replays them.

Tests hand entry points paths in pytest's ``tmp_path`` or a ``tempfile.mkdtemp()`` folder. Those
folders live in the temporary directory of the worker that ran the suite; a replay in another
worker may neither read nor write there (the sandbox refuses, and the refusal would mark the entry
point blocked). So a path under the temporary directory is pickled with what it held when the
entry point was called — a folder's files, a file's bytes, or nothing yet (an output path) — and
unpickling rebuilds that state under the replaying worker's own temporary directory, afresh for
every replay. A module passed as an argument (``getETreeBuilder(xml.etree.ElementTree)``) is
pickled as its name and imported again.
"""

from __future__ import annotations

import importlib
import io
import os
import pickle
import shutil
import sys
import tempfile
import types
from pathlib import Path, PurePath
from typing import Any

MAX_SNAPSHOT = 64 * 1024
"""Bytes of files a captured temporary path may carry; a larger one is not replayed."""

MAX_FILES = 64
"""Files a captured temporary folder may carry."""

MAX_PATH = 4096
"""Characters of the longest text looked at as a path (PATH_MAX on Linux)."""

REPLAYED = "captured"
"""The folder, inside the replaying worker's temporary directory, that rebuilt paths go to."""


class TempPathTooLarge(ValueError):
    """A captured path's temporary folder holds more than a replay should carry."""


class _Pickler(pickle.Pickler):
    """Pickles a path under ``root`` — a ``str`` or a :class:`~pathlib.PurePath`, at any depth
    (an argument, a receiver's attribute, an item of a list) — as a persistent id holding what
    it names, for :class:`_Unpickler` to rebuild. ``persistent_id`` is asked of every object,
    strings too (``reducer_override`` is not: the pickler saves them before asking)."""

    def __init__(self, file: io.BytesIO, root: str) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.root = root
        self.moved: dict[tuple[type, str], tuple[object, ...] | None] = {}

    def persistent_id(self, obj: object) -> object:
        if type(obj) is str or isinstance(obj, PurePath):
            key = (type(obj), os.fspath(obj))
            if key not in self.moved:
                found = snapshot(key[1], self.root)
                self.moved[key] = (PATH_ID, type(obj), *found) if found is not None else None
            return self.moved[key]
        return None

    def reducer_override(self, obj: object) -> Any:
        if isinstance(obj, types.ModuleType) and sys.modules.get(obj.__name__) is obj:
            return importlib.import_module, (obj.__name__,)  # a module is copied by its name
        return NotImplemented


PATH_ID = "apiprof-temp-path"
"""The mark of a persistent id that is a captured temporary path."""


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self.rebuilt: dict[tuple[object, object], object] = {}

    def persistent_load(self, pid: Any) -> object:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == PATH_ID):
            raise pickle.UnpicklingError("a persistent id that is not a captured path")
        if pid[1] is not str and not (isinstance(pid[1], type) and issubclass(pid[1], PurePath)):
            raise pickle.UnpicklingError("a captured path of a type that is not a path")
        key = (pid[1], pid[2])
        if key not in self.rebuilt:  # the same path met twice is rebuilt once
            self.rebuilt[key] = rebuild(*pid[1:])
        return self.rebuilt[key]


def dumps(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """``pickle.dumps((args, kwargs))`` with paths under the temporary directory carried over
    (:exc:`TempPathTooLarge` when one holds too much to carry)."""
    buffer = io.BytesIO()
    _Pickler(buffer, os.path.realpath(tempfile.gettempdir())).dump((args, kwargs))
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    """What :func:`dumps` pickled, its temporary paths rebuilt under this worker's own
    temporary directory, each as it was when captured."""
    return _Unpickler(io.BytesIO(data)).load()


def snapshot(path: str, root: str) -> tuple[str, str, object] | None:
    """``(path relative to root, kind, content)`` of a path under ``root``, else None. Kind is
    "dir" (content: relative file name -> bytes), "file" (bytes) or "absent" (None)."""
    if not os.path.isabs(path) or len(path) > MAX_PATH or "\0" in path:
        return None
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    if not real.startswith(root + os.sep):
        return None
    relative = os.path.relpath(real, root)
    if os.path.isdir(real):
        files: dict[str, bytes] = {}
        for folder, _, names in os.walk(real):
            for name in names:
                full = os.path.join(folder, name)
                files[os.path.relpath(full, real)] = _read(full, path)
                if len(files) > MAX_FILES or sum(map(len, files.values())) > MAX_SNAPSHOT:
                    raise TempPathTooLarge(f"{path}: the temporary folder holds too much to copy")
        return relative, "dir", files
    if os.path.isfile(real):
        return relative, "file", _read(real, path)
    return relative, "absent", None


def _read(path: str, shown: str) -> bytes:
    if os.path.getsize(path) > MAX_SNAPSHOT:
        raise TempPathTooLarge(f"{shown}: a temporary file too large to copy")
    with open(path, "rb") as file:
        return file.read()


def rebuild(kind_of: type, relative: str, kind: str, content: object) -> object:
    """The path, as ``kind_of``, under this worker's temporary directory, reset to the state
    it had when captured. Whatever the payload says, nothing is written outside that folder:
    a name leading out of it (absolute, or through ``..``) is refused."""
    names = [relative, *(content if kind == "dir" and isinstance(content, dict) else ())]
    if kind not in ("dir", "file", "absent") or not all(map(_stays_inside, names)):
        raise pickle.UnpicklingError(f"a captured path leading out of its folder: {relative!r}")
    target = Path(tempfile.gettempdir(), REPLAYED, relative)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "dir":
        target.mkdir()
        assert isinstance(content, dict)
        for name, data in content.items():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes(data)
    elif kind == "file":
        assert isinstance(content, bytes)
        target.write_bytes(content)
    return kind_of(target)


def _stays_inside(name: object) -> bool:
    """Whether ``name`` is a relative path that cannot lead out of the folder it is joined to."""
    if not isinstance(name, str) or not name or "\0" in name:
        return False
    path = PurePath(name)
    return not path.is_absolute() and ".." not in path.parts
