"""Lessons about names a loader completes: a text argument that came back quoted with a file
suffix in a not-found error.

A template or configuration loader given a name (``load_template("lorem")``) adds its own
suffix and looks in its folders: ``File 'lorem.mustache' not found in dirs: ['.']``. The
argument names a file, less its suffix, so it becomes the path (in the sandbox, absolute:
a folder joined to it gives it back) of a stem whose file with that suffix exists.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from apiprof.engine.scenarios.wants import Lesson, Want

NOT_FOUND = re.compile(r"(?i)not found|no such|cannot find|can't find|could not find|locate")
_QUOTED_FILE = re.compile(r"""['"]([^'"\n]*?)(\.[A-Za-z][A-Za-z0-9]{0,7})['"]""")
MIN_STEM = 3
"""Shortest argument taken as the quoted name's stem (a letter may start any name)."""


def completed_name(message: str, bound: Mapping[str, object], cause: str) -> Lesson | None:
    """The text argument a not-found error quotes with a suffix added (``'lorem.mustache'``
    for ``lorem``): a stem whose file with that suffix exists."""
    if NOT_FOUND.search(message) is None:
        return None
    for stem, suffix in _QUOTED_FILE.findall(message):
        for name, value in bound.items():
            if not isinstance(value, str) or len(value) < MIN_STEM:
                continue
            if stem == value or stem.endswith(("/" + value, "\\" + value)):
                return Lesson(name, Want.STEM, (suffix,), cause=cause)
    return None
