"""Lessons about paths: which argument a missing file or directory was, and which argument an
``os`` function refused as no path at all.

``FileNotFoundError`` names the path as the call used it, often not as it was given: made
absolute, or with a separator added to a directory (``'/tmp/.../lorem/'``), so the argument is
matched by its normalised absolute path. A directory is wanted when the path ends with a
separator or the failing expression lists one (``os.scandir``, ``os.walk``...); ``expected
str, bytes or os.PathLike object, not list`` wants a path where a list was given — of a
directory when the failing expression lists one, else of a file.
"""

from __future__ import annotations

import functools
import operator
import os
import re
from collections.abc import Mapping

from apiprof.engine.scenarios.failing import culprit, failing_text, holders
from apiprof.engine.scenarios.wants import Want

NOT_A_PATH = re.compile(
    r"(?:expected|argument must be) str, bytes,? or os\.PathLike object, not '?(\w+)"
)
LISTING = ("scandir", "listdir", "walk", "iterdir", "isdir", "glob", "chdir")
"""Calls in a failing expression that say the path was a directory."""


def path_wanted(error: BaseException, bound: Mapping[str, object]) -> tuple[str, bool, Want] | None:
    """``(parameter, through its elements, FILE or DIRECTORY)`` for a missing path or a value
    an ``os`` function refused as a path, or None."""
    if isinstance(error, FileNotFoundError) and isinstance(error.filename, str):
        missing = _normalised(error.filename)

        def named(value: object) -> bool:
            return isinstance(value, (str, os.PathLike)) and _normalised(value) == missing

        held = next(holders(bound, named), None)
        if held is None:
            return None
        directory = error.filename.endswith(("/", os.sep)) or _lists(error)
        return held[0], held[1], Want.DIRECTORY if directory else Want.FILE
    message = str(error.args[0]) if isinstance(error, TypeError) and error.args else ""
    refused = NOT_A_PATH.search(message)
    if refused is None:
        return None
    type_name = refused.group(1)

    def of_type(value: object) -> bool:
        return type(value).__name__ == type_name

    found = culprit(error, bound, of_type) or next(holders(bound, of_type), None)
    if found is None and type_name == "NoneType":  # ours only held it (a source without an id)
        found = _innermost_holder(error, bound)
    if found is None:
        return None
    return found[0], found[1], Want.DIRECTORY if _lists(error) else Want.FILE


def _innermost_holder(error: BaseException, bound: Mapping[str, object]) -> tuple[str, bool] | None:
    """The argument the innermost frame that still holds one of ours was working on: a
    ``None`` refused as a path came from it (``prepare_input_source(source)`` joining the
    ``systemId`` an input source of ours left unset), so a path goes there instead."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames[1:]):  # the first frame is the call of the entry point
        for value in list(frame.f_locals.values()):
            if value is None or isinstance(value, (str, int, bool)):
                continue
            holder = next(holders(bound, functools.partial(operator.is_, value)), None)
            if holder is not None:
                return holder
    return None


def _normalised(path: str | os.PathLike[str]) -> str:
    return os.path.normpath(os.path.abspath(os.fspath(path)))


def _lists(error: BaseException) -> bool:
    text, _ = failing_text(error)
    return any(f"{call}(" in text for call in LISTING)
