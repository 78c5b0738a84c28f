"""What the build environment remembers: which documents show which APIs, and what those APIs'
data looked like when the documents were read. Kept parallel-safe (purge/merge per document).

A changed database re-reads only the documents whose APIs' summaries changed: each looked-up
name is stored with a digest of its summary, compared again when the database's content
fingerprint differs from the one the environment last saw.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

from apiprof.sphinx_ext.profiles import profiles_for

# per document: {"names": {looked-up name: digest}, "anchors": {canonical name: anchor}}
DocUses = dict[str, dict[str, str]]


def _uses(env: BuildEnvironment) -> dict[str, DocUses]:
    found: Any = getattr(env, "apiprof_docs", None)
    if not isinstance(found, dict):
        found = {}
        env.apiprof_docs = found  # type: ignore[attr-defined]
    return found


def _doc(env: BuildEnvironment, docname: str) -> DocUses:
    return _uses(env).setdefault(docname, {"names": {}, "anchors": {}})


def note_lookup(env: BuildEnvironment, docname: str, name: str) -> None:
    """Note that ``docname`` asked the database about ``name`` (even if it had no answer or the
    database was missing), so the document is re-read when that answer changes."""
    _doc(env, docname)["names"][name] = profiles_for(env).digest(name)


def looked_up(env: BuildEnvironment, docname: str, name: str) -> bool:
    """Whether ``docname`` has asked the database about ``name`` so far in this read."""
    uses = _uses(env).get(docname)
    return uses is not None and name in uses["names"]


def record_use(env: BuildEnvironment, docname: str, qualname: str, anchor: str) -> None:
    """Note that ``docname`` shows ``qualname`` at ``#anchor`` (the first mention wins)."""
    _doc(env, docname)["anchors"].setdefault(qualname, anchor)


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
    """Documents to re-read because what they show from the database changed."""
    profiles = profiles_for(env)
    fingerprint = profiles.fingerprint or profiles.error
    previous = getattr(env, "apiprof_fingerprint", None)
    env.apiprof_fingerprint = fingerprint  # type: ignore[attr-defined]
    if previous == fingerprint:
        return []
    return sorted(
        docname
        for docname, uses in _uses(env).items()
        if docname in env.found_docs
        and any(profiles.digest(name) != digest for name, digest in uses["names"].items())
    )


def api_locations(env: BuildEnvironment) -> dict[str, tuple[str, str]]:
    """Canonical name → (docname, anchor) of the API's documentation, for links back."""
    found: dict[str, tuple[str, str]] = {}
    uses = _uses(env)
    for docname in sorted(uses):
        for qualname, anchor in uses[docname]["anchors"].items():
            found.setdefault(qualname, (docname, anchor))
    return found
