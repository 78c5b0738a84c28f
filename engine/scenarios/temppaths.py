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

REPLAYED = "captured"
"""The folder, inside the replaying worker's temporary directory, that rebuilt paths go to."""


class TempPathTooLarge(ValueError):
    """A captured path's temporary folder holds more than a replay should carry."""


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, root: str) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.root = root

    def reducer_override(self, obj: object) -> Any:
        if isinstance(obj, PurePath):
            moved = snapshot(os.fspath(obj), self.root)
            if moved is not None:
                return rebuild, (type(obj), *moved)
        if isinstance(obj, _TempText):
            return rebuild, (str, *obj.moved)
        if isinstance(obj, types.ModuleType) and sys.modules.get(obj.__name__) is obj:
            return importlib.import_module, (obj.__name__,)  # a module is copied by its name
        return NotImplemented


class _TempText:
    """A string argument naming a temporary path (strings never reach ``reducer_override``)."""

    def __init__(self, moved: tuple[str, str, object]) -> None:
        self.moved = moved


def dumps(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """``pickle.dumps((args, kwargs))`` with paths under the temporary directory carried over
    (:exc:`TempPathTooLarge` when one holds too much to carry)."""
    root = os.path.realpath(tempfile.gettempdir())

    def marked(value: object) -> object:
        moved = snapshot(value, root) if isinstance(value, str) else None
        return _TempText(moved) if moved is not None else value

    buffer = io.BytesIO()
    _Pickler(buffer, root).dump(
        (tuple(marked(v) for v in args), {k: marked(v) for k, v in kwargs.items()})
    )
    return buffer.getvalue()


def snapshot(path: str, root: str) -> tuple[str, str, object] | None:
    """``(path relative to root, kind, content)`` of a path under ``root``, else None. Kind is
    "dir" (content: relative file name -> bytes), "file" (bytes) or "absent" (None)."""
    if not os.path.isabs(path):
        return None
    real = os.path.realpath(path)
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
    it had when captured."""
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
