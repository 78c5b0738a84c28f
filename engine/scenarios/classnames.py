"""Parameter names that name one of the package's own classes.

Untyped packages name parameters after the objects they pass around: ``start_mark`` is a
``Mark``, ``prepared_request`` a ``PreparedRequest``, ``token`` a ``Token``, and a capitalised
``Loader`` is the ``Loader`` class itself (``yaml.load(stream, Loader)``). The whole name is
matched first, then its shorter tails (``prepared_request``, then ``request``), against the
package's class names, ignoring case and underscores. A name that matches none may be
an abbreviation of one (``stmt`` a ``Statement``, ``tlist`` a ``TokenList``, ``req`` a
``Request``, ``cj`` a ``CookieJar``, ``tb_info`` a ``TracebackInfo``): used when it abbreviates at most two of the classes
(exceptions left out). A one-word name that names no class may name a kind of them
(``renderer``: the package's ``HtmlRenderer``, its concrete classes first).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any


def classes_named_by(
    parameter: str, classes: Mapping[str, type], *, abbreviations: bool = True
) -> list[Any]:
    """Annotations for a parameter whose name names one of ``classes``: the class itself
    (``type[C]``) for a capitalised name, else an instance of it; most specific first.
    Without ``abbreviations`` only whole names and their tails count (for a name with a
    well-known meaning of its own: ``text`` is no abbreviation of ``TextTestRunner``)."""
    bare = parameter.strip("_")
    if not bare or not classes:
        return []
    if bare[0].isupper() and bare in classes:
        return [type[classes[bare]]]
    by_key = {name.lower(): cls for name, cls in classes.items()}
    words = _words(bare)
    found: list[Any] = []
    for start in range(len(words)):
        key = "".join(words[start:])
        cls = by_key.get(key) if start == 0 or len(key) >= 3 else None
        if cls is not None and cls not in found:
            found.append(cls)
    if not found and len(words) > 1 and words[-1] in GENERIC_NOUNS:
        found = _family(words[:-1], classes)  # `asn1Object`: one of the package's Asn1 classes
    if not found and len(words) == 1:
        found = _kind_of(words[0], classes)  # `renderer`: an HtmlRenderer
    if found or not abbreviations:
        return found
    abbreviated = sorted(
        (
            name
            for name, cls in classes.items()
            if not issubclass(cls, BaseException)  # `sql` is not an SQLParseError
            and _abbreviates("".join(words), name)
        ),
        key=len,
    )
    return [classes[name] for name in abbreviated] if len(abbreviated) <= MAX_ABBREVIATED else []


GENERIC_NOUNS = frozenset({"object", "obj", "instance"})
"""Last words of a parameter's name that say "an instance of the family its first words name"."""
FAMILY_TAILS = ("item", "type", "object", "base")
"""What follows a family's name in the names of its root classes (``Asn1Item``, ``Asn1Type``)."""


def _family(words: list[str], classes: Mapping[str, type]) -> list[Any]:
    """The package's classes named after ``words`` and one of :data:`FAMILY_TAILS`,
    subclasses before their bases (the most specific first)."""
    prefix = "".join(words)
    named = [
        cls
        for name, cls in sorted(classes.items())
        if name.lower() in {prefix + tail for tail in FAMILY_TAILS}
    ]
    return sorted(named, key=lambda cls: -len(cls.__mro__))


def _kind_of(word: str, classes: Mapping[str, type]) -> list[Any]:
    """The package's classes whose names end with ``word`` (``renderer``: ``HtmlRenderer``,
    ``BaseRenderer``), concrete ones first, then by name; none for a short word or an
    exception's name."""
    if len(word) < MIN_KIND_LENGTH:
        return []
    named = [
        cls
        for name, cls in sorted(classes.items())
        if name.lower().endswith(word) and not issubclass(cls, BaseException)
    ]
    return sorted(named, key=lambda cls: inspect.isabstract(cls) or cls.__name__.startswith("Base"))


MIN_KIND_LENGTH = 5
"""Shortest last word read as a kind of class (``lexer``, ``parser``, ``renderer``)."""
MAX_ABBREVIATED = 2
"""An abbreviation that fits more classes than this says nothing."""


def snake_case(name: str) -> str:
    """``startMark`` and ``StartMark`` → ``start_mark`` (runs of capitals stay one word:
    ``HTTPError`` → ``httperror``)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _words(name: str) -> list[str]:
    """``start_mark`` and ``startMark`` → ``["start", "mark"]``."""
    return [word for word in snake_case(name).split("_") if word]


def _abbreviates(short: str, class_name: str) -> bool:
    """Whether ``short`` abbreviates ``class_name``: its initials (``cj``), a prefix of three
    letters or more (``req``), or its first and last letters with some in between in order
    (``stmt``, ``tlist``)."""
    words = _words(class_name)
    full = "".join(words)
    if len(words) > 1 and short == "".join(word[0] for word in words):
        return True
    if len(short) < 3 or len(short) >= len(full) or short[0] != full[0]:
        return False
    if full.startswith(short):
        return True
    letters = iter(full)
    return short[-1] == full[-1] and all(letter in letters for letter in short)
