"""Automatic mode (``apiprof_auto = True``): every documented Python function, method and class
gets the compact cost summary, with no change to the .rst files.

It hooks ``object-description-transform``, which both Sphinx 9's new autodoc and the legacy
class-based one reach (autodoc emits ``py:function`` and friends), so it also covers objects
described by hand with ``.. py:function::``.
"""

from __future__ import annotations

from sphinx import addnodes
from sphinx.application import Sphinx

from apiprof.sphinx_ext.directive import parse_metrics
from apiprof.sphinx_ext.envdata import looked_up, note_lookup
from apiprof.sphinx_ext.nodes import apiprof_summary, make_summary
from apiprof.sphinx_ext.profiles import profiles_for


def documented_name(contentnode: addnodes.desc_content) -> tuple[str, str] | None:
    """``(qualified name, anchor id)`` of the object a description's content belongs to."""
    desc = contentnode.parent
    for sig in desc.findall(addnodes.desc_signature) if desc is not None else ():
        fullname = sig.get("fullname")
        if not fullname:
            continue
        module = sig.get("module") or ""
        qualname = f"{module}.{fullname}" if module else fullname
        return qualname, (sig["ids"][0] if sig["ids"] else "")
    return None


def annotate_description(
    app: Sphinx, domain: str, objtype: str, contentnode: addnodes.desc_content
) -> None:
    """Insert the compact summary at the top of a Python object's description."""
    config = app.config
    if not config.apiprof_auto or domain != "py" or objtype not in config.apiprof_auto_kinds:
        return
    env = app.env
    found = documented_name(contentnode)
    if found is None:
        return
    qualname, anchor = found
    if not profiles_for(env).usable:
        note_lookup(env, env.docname, qualname)  # re-read once the database can be read
        return
    if looked_up(env, env.docname, qualname) and any(
        n["qualname"] == qualname for n in contentnode.findall(apiprof_summary)
    ):
        return  # the docstring already shows it with the directive (which looked it up:
        # walking every description's content only for names looked up already)
    location = contentnode.parent if contentnode.parent is not None else None
    node = make_summary(
        env,
        qualname,
        metrics=parse_metrics(config.apiprof_metrics, location),
        compact=True,
        target=anchor,
        location=location,
        typed=False,
    )
    contentnode.insert(0, node)
