"""Parameter names that name one of the package's own classes.

Untyped packages name parameters after the objects they pass around: ``start_mark`` is a
``Mark``, ``prepared_request`` a ``PreparedRequest``, ``token`` a ``Token``, and a capitalised
``Loader`` is the ``Loader`` class itself (``yaml.load(stream, Loader)``). The whole name is
matched first, then its shorter tails (``prepared_request``, then ``request``), against the
package's class names, ignoring case and underscores.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def classes_named_by(parameter: str, classes: Mapping[str, type]) -> list[Any]:
    """Annotations for a parameter whose name names one of ``classes``: the class itself
    (``type[C]``) for a capitalised name, else an instance of it; most specific first."""
    bare = parameter.strip("_")
    if not bare or not classes:
        return []
    if bare[0].isupper() and bare in classes:
        return [type[classes[bare]]]
    by_key = {name.lower(): cls for name, cls in classes.items()}
    words = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", bare).lower().split("_")
    words = [word for word in words if word]
    found: list[Any] = []
    for start in range(len(words)):
        key = "".join(words[start:])
        cls = by_key.get(key) if start == 0 or len(key) >= 3 else None
        if cls is not None and cls not in found:
            found.append(cls)
    return found
