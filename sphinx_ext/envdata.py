"""What the build environment remembers: which documents show which APIs, and which database
contents they were read against. Kept parallel-safe (purge/merge per document) and used to
re-read exactly the documents that show costs when the database changes."""

from __future__ import annotations

from collections.abc import Iterable

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

from apiprof.sphinx_ext.profiles import profiles_for


def _uses(env: BuildEnvironment) -> dict[str, dict[str, str]]:
    if not hasattr(env, "apiprof_uses"):
        env.apiprof_uses = {}
    return env.apiprof_uses


def note_reader(env: BuildEnvironment, docname: str) -> None:
    """Note that ``docname`` asked the database something (even if it was missing or had no
    answer), so it is re-read when the database changes."""
    _uses(env).setdefault(docname, {})


def record_use(env: BuildEnvironment, docname: str, qualname: str, anchor: str) -> None:
    """Note that ``docname`` shows ``qualname`` at ``#anchor`` (the first mention wins)."""
    _uses(env).setdefault(docname, {}).setdefault(qualname, anchor)


def purge_doc(_app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    _uses(env).pop(docname, None)


def merge_info(
    _app: Sphinx, env: BuildEnvironment, docnames: Iterable[str], other: BuildEnvironment
) -> None:
    theirs = _uses(other)
    for docname in docnames:
        if docname in theirs:
            _uses(env)[docname] = theirs[docname]


def outdated_docs(
    _app: Sphinx, env: BuildEnvironment, _added: set[str], _changed: set[str], _removed: set[str]
) -> list[str]:
    """Documents to re-read because the database changed since they were read."""
    stamp = profiles_for(env).stamp
    previous = getattr(env, "apiprof_stamp", None)
    env.apiprof_stamp = stamp
    if previous == stamp:
        return []
    return sorted(doc for doc in _uses(env) if doc in env.found_docs)


def api_locations(env: BuildEnvironment) -> dict[str, tuple[str, str]]:
    """Canonical name → (docname, anchor) of the API's documentation, for links back."""
    found: dict[str, tuple[str, str]] = {}
    for docname in sorted(_uses(env)):
        for qualname, anchor in _uses(env)[docname].items():
            found.setdefault(qualname, (docname, anchor))
    return found
