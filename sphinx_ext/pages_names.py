"""Where drill-down pages live, shared by the summary links and the page writer.

Qualified names come from the database, which is untrusted input: a name may hold ``/``,
``..``, quotes or characters a file system refuses. Every page name is therefore a *slug* made
only of ``[A-Za-z0-9_.-]`` inside :data:`PAGES_DIR`, never ``.``/``..`` or hidden, never the
index page's name, and unique even on case-insensitive file systems (``numpy.Inf`` and
``numpy.inf`` get different files).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from sphinx.builders import Builder

PAGES_DIR = "apiprof"
INDEX_PAGE = f"{PAGES_DIR}/index"
PAGE_BUILDERS = frozenset({"html", "dirhtml"})

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.]+")
_MAX_SLUG = 120  # leaves room for the hash, ".html" and "/index.html" under a 255-byte limit
# names some file systems refuse whatever the extension (Windows devices)
_RESERVED = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
)


def _digest(qualname: str) -> str:
    return hashlib.sha256(qualname.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def _slug(qualname: str) -> tuple[str, bool]:
    """``(slug, plain)``: plain slugs are the dotted name itself, the others carry a hash."""
    if (
        _PLAIN.match(qualname)
        and len(qualname) <= _MAX_SLUG
        and qualname.split(".", 1)[0].lower() not in _RESERVED
        and qualname != "index"
    ):
        return qualname, True
    readable = _UNSAFE.sub("_", qualname).strip("._")[:_MAX_SLUG] or "api"
    return f"{readable}-{_digest(qualname)}", False


def assign_page_names(qualnames: Iterable[str]) -> dict[str, str]:
    """Page name (no suffix) of each API's drill-down page, e.g. ``apiprof/json.dumps``.

    Deterministic for a given set of names: of names that differ only in case, the one with
    the fewest capitals (``numpy.inf`` before ``numpy.Inf``) keeps the plain slug and the others
    get a hashed one.
    """
    taken: set[str] = set()
    out: dict[str, str] = {}
    capitals = str.maketrans("", "", "abcdefghijklmnopqrstuvwxyz")
    order = sorted(set(qualnames), key=lambda n: (n.casefold(), len(n.translate(capitals)), n))
    for qualname in order:
        slug, plain = _slug(qualname)
        if plain and slug.casefold() in taken:
            slug = f"{slug}-{_digest(qualname)}"
        taken.add(slug.casefold())
        out[qualname] = f"{PAGES_DIR}/{slug}"
    return out


def pages_enabled(builder: Builder) -> bool:
    return builder.name in PAGE_BUILDERS and builder.config.apiprof_pages != "none"
