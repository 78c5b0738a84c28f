"""The ``package_data`` source: the package's own data files, where a path or file is wanted.

An entry point that reads the package's own data (a model table, a grammar, a word list, a
bundled configuration) rejects any made-up file ("corrupt models.bin"). Its data files — the
non-Python files in the package's directory, which ``importlib.resources`` serves — are offered
to a parameter that takes a path, a file object or raw bytes: as a path, an open in-memory copy,
or the bytes. Where the function's module names one of those files (``"models.bin"``), or the
parameter's name matches one (``grammar_path`` → ``grammar.txt``), they come before the
made-up file; otherwise after it, since a made-up file grows with the size axis and the package's
own does not. Reading a file in the package's directory works in the read-only sandbox.
"""

from __future__ import annotations

import functools
import inspect
import io
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.typetext import BinaryFileMarker, PathMarker, TextFileMarker

MAX_FILES = 3
"""Data files offered to one parameter (flavours), best first."""
MAX_FILE_BYTES = 16_000_000
"""Larger files are not offered (reading one per call would be the whole cost)."""
MAX_LISTED = 2_000
"""Files looked at in a package's directory at most."""
CODE_SUFFIXES = frozenset(
    [
        ".py",
        ".pyc",
        ".pyo",
        ".pyi",
        ".pyd",
        ".so",
        ".dll",
        ".dylib",
        ".c",
        ".h",
        ".cpp",
        ".pxd",
        ".pyx",
        ".typed",
        ".exe",
        ".lib",
        ".a",
        ".o",
    ]
)
"""Suffixes of files that are code or build products, not data."""


@dataclass(frozen=True)
class PackageFile:
    """Annotation marker: one of the package's data files ``paths`` (the variant picks which),
    as ``kind``: ``"path"`` (its path as a string), ``"text"`` or ``"binary"`` (an in-memory
    file holding it), or ``"bytes"``."""

    kind: str
    paths: tuple[str, ...]


_KINDS: dict[Any, str] = {PathMarker: "path", TextFileMarker: "text", BinaryFileMarker: "binary"}


def with_package_files(
    target: Callable[..., object], parameter: str, found: list[tuple[Any, Any]], source: Any
) -> list[tuple[Any, Any]]:
    """``found`` (candidate annotations with their sources) with the package's data files
    offered beside each file-like candidate (and a ``bytes`` one, when the module names a data
    file): before it when the module or the parameter's name points at them, else after it."""
    files = package_files(target)
    if not files:
        return found
    named = _named_in_module(target, files)
    chosen = _matching(parameter, files) or named
    result: list[tuple[Any, Any]] = []
    for annotation, origin in found:
        kind = _kind(annotation) or ("bytes" if annotation is bytes and named else "")
        offered = (PackageFile(kind, tuple(chosen or files)[:MAX_FILES]), source)
        if not kind:
            result.append((annotation, origin))
        elif chosen:
            result += [offered, (annotation, origin)]
        else:
            result += [(annotation, origin), offered]
    return result


def _kind(annotation: Any) -> str:
    """How a file-like candidate takes a data file ("" for others; candidates may be
    unhashable, so they are compared by identity)."""
    return next((kind for marker, kind in _KINDS.items() if annotation is marker), "")


def build_package_file(tp: PackageFile, context: BuildContext, name: str) -> Any:
    path = Path(context.pick(list(tp.paths)))
    context.notes[name] = f"the package's {path.name}" + (
        "" if tp.kind == "path" else f" as {tp.kind}"
    )
    try:
        data = path.read_bytes() if tp.kind != "path" else b""
    except OSError as error:
        raise CannotSynthesize(f"parameter {name!r}: cannot read {path}: {error}") from None
    if tp.kind == "path":
        return str(path)
    if tp.kind == "bytes":
        return data
    context.files = True
    if tp.kind == "binary":
        return io.BytesIO(data)
    try:
        return io.StringIO(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CannotSynthesize(f"parameter {name!r}: {path.name} is not text") from None


def package_files(target: Callable[..., object]) -> tuple[str, ...]:
    """The data files of the package ``target`` belongs to (paths, the target's own
    directory first, then by name)."""
    module = getattr(target, "__module__", "") or ""
    return _files_of(module.split(".")[0], module)


@functools.cache
def _files_of(top: str, module: str) -> tuple[str, ...]:
    package = sys.modules.get(top)
    roots = list(getattr(package, "__path__", []) or [])
    here = Path(getattr(sys.modules.get(module), "__file__", "") or "").parent
    found: list[Path] = []
    for root in roots:
        for count, path in enumerate(Path(root).rglob("*")):
            if count >= MAX_LISTED:
                break
            if _is_data(path):
                found.append(path)
    found.sort(key=lambda path: (path.parent != here, len(path.parts), path.name))
    return tuple(str(path) for path in found)


def _is_data(path: Path) -> bool:
    if path.suffix.lower() in CODE_SUFFIXES or "__pycache__" in path.parts:
        return False
    if path.name.startswith(".") or not path.is_file():
        return False
    try:
        return 0 < path.stat().st_size <= MAX_FILE_BYTES
    except OSError:
        return False


def _named_in_module(target: Callable[..., object], files: tuple[str, ...]) -> list[str]:
    """The data files whose name the target's module spells out (``"models.bin"``)."""
    text = _module_text(getattr(target, "__module__", "") or "")
    return [path for path in files if Path(path).name in text] if text else []


def _matching(parameter: str, files: tuple[str, ...]) -> list[str]:
    """The data files whose stem is a word of the parameter's name (``grammar_path``)."""
    words = {word for word in re.split(r"[_\W]+", parameter.lower()) if len(word) > 2}
    words -= {"path", "file", "filename", "name", "dir", "data"}
    return [path for path in files if Path(path).stem.lower() in words]


@functools.cache
def _module_text(module: str) -> str:
    """The module's source; for one compiled from it (mypyc, Cython), the ``.py`` beside it."""
    loaded = sys.modules.get(module)
    try:
        return inspect.getsource(loaded) if loaded is not None else ""
    except (OSError, TypeError):
        pass
    built = Path(getattr(loaded, "__file__", "") or "")
    source = built.with_name(built.name.split(".")[0] + ".py")
    try:
        return source.read_text(encoding="utf-8", errors="replace") if built.name else ""
    except OSError:
        return ""
