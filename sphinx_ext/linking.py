"""The cost index as a link target: ``:doc:`/apiprof/index```, a toctree entry
``apiprof/index`` and ``:ref:`apiprof-index``` all reach it, in html and dirhtml alike.

The index is generated (``html-collect-pages``), not read from a source file, which is what
Sphinx's own generated pages are too: ``genindex``, ``modindex`` and ``search`` are accepted in
toctrees because the standard domain lists them as *virtual documents*. The index joins that list
for the length of a build (Sphinx has no public call for it; without the list a toctree entry
would be the one thing that does not work). ``:doc:`` and ``:ref:`` are answered from
``missing-reference``. Builders without pages (LaTeX, text, …) get the link text without a link
and the toctree entry drops out, as ``genindex`` does there.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.domains.std import StandardDomain
from sphinx.environment import BuildEnvironment
from sphinx.util import docname_join
from sphinx.util.nodes import make_refnode

from apiprof.sphinx_ext.i18n import _
from apiprof.sphinx_ext.pages_names import INDEX_PAGE, pages_enabled

INDEX_LABEL = "apiprof-index"


def _virtual_documents() -> dict[str, tuple[str, str]] | None:
    found = getattr(StandardDomain, "_virtual_doc_names", None)
    return found if isinstance(found, dict) else None


def register_index_document(_app: Sphinx) -> None:
    """``builder-inited``: let toctrees list the cost index like ``genindex``."""
    virtual = _virtual_documents()
    if virtual is not None:
        virtual[INDEX_PAGE] = (INDEX_PAGE, _("API costs"))


def unregister_index_document(_app: Sphinx, _exception: BaseException | None) -> None:
    """``build-finished``: leave the standard domain as it was (other builds in this process)."""
    virtual = _virtual_documents()
    if virtual is not None:
        virtual.pop(INDEX_PAGE, None)


def is_index_reference(node: addnodes.pending_xref) -> bool:
    if node.get("refdomain") != "std":
        return False
    target = node.get("reftarget", "")
    if node.get("reftype") == "ref":
        return target.lower() == INDEX_LABEL
    if node.get("reftype") == "doc":
        return docname_join(node.get("refdoc", ""), target) == INDEX_PAGE
    return False


def resolve_index_reference(
    app: Sphinx, _env: BuildEnvironment, node: addnodes.pending_xref, contnode: nodes.TextElement
) -> nodes.Element | None:
    """``missing-reference``: a link to the cost index (its text where there are no pages)."""
    if not is_index_reference(node):
        return None
    text: nodes.Element = (
        contnode
        if node.get("refexplicit")
        else nodes.inline("", _("API costs"), classes=contnode.get("classes", []))
    )
    if not pages_enabled(app.builder):
        return text
    return make_refnode(app.builder, node.get("refdoc", ""), INDEX_PAGE, "", text)
