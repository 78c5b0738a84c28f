"""apiprof's Sphinx extension: cost summaries on API docs, with drill-down pages.

Add ``"apiprof.sphinx_ext"`` to ``extensions`` and point ``apiprof_db`` at a database written
by ``apiprof-scan``. This module is the manifest: everything the extension registers is here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import ENUM

from apiprof import __version__
from apiprof.sphinx_ext import autodoc, envdata, i18n, latex, linking, nodes, pages, profiles
from apiprof.sphinx_ext.directive import ApiprofDirective
from apiprof.sphinx_ext.views import DEFAULT_METRICS

STATIC = Path(__file__).with_name("static")
CSS_FILE = "apiprof.css"
AUTO_KINDS = ["function", "method", "class", "classmethod", "staticmethod", "property"]


def add_static_path(app: Sphinx) -> None:
    """``builder-inited``: Sphinx copies the stylesheet with the project's static files (and
    only when it changed), the way sphinx-copybutton ships its assets."""
    if str(STATIC) not in app.config.html_static_path:
        app.config.html_static_path.append(str(STATIC))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value(
        "apiprof_db",
        "apiprof.db",
        "env",
        types=frozenset({str}),
        description="profile database, relative to conf.py",
    )
    app.add_config_value(
        "apiprof_auto",
        False,
        "env",
        types=frozenset({bool}),
        description="add the compact summary to every documented Python object",
    )
    app.add_config_value(
        "apiprof_auto_kinds",
        AUTO_KINDS,
        "env",
        types=frozenset({list, tuple}),
        description="object types auto mode annotates",
    )
    app.add_config_value(
        "apiprof_metrics",
        DEFAULT_METRICS,
        "env",
        types=frozenset({list, tuple}),
        description='metrics shown ("time" or apiprof Metric values)',
    )
    app.add_config_value(
        "apiprof_warn_unprofiled",
        False,
        "",
        types=frozenset({bool}),
        description="warn (not just note) when a documented API has no profile",
    )
    app.add_config_value(
        "apiprof_pages",
        "referenced",
        "html",
        types=ENUM("referenced", "all", "none"),
        description="which APIs get drill-down pages",
    )

    app.add_message_catalog(i18n.CATALOG, str(i18n.LOCALE_DIR))
    app.add_node(nodes.apiprof_summary, override=False, **nodes.VISITORS)
    app.add_directive("apiprof", ApiprofDirective)
    app.add_css_file(CSS_FILE)
    app.add_latex_package(latex.PACKAGE)

    app.connect("builder-inited", profiles.start_profiles)
    app.connect("builder-inited", add_static_path)
    app.connect("builder-inited", linking.register_index_document)
    app.connect("env-get-outdated", envdata.outdated_docs)
    app.connect("env-purge-doc", envdata.purge_doc)
    app.connect("env-merge-info", envdata.merge_info)
    app.connect("env-updated", pages.assign_pages)
    app.connect("object-description-transform", autodoc.annotate_description)
    app.connect("doctree-resolved", nodes.fill_summaries)
    app.connect("missing-reference", linking.resolve_index_reference)
    app.connect("html-collect-pages", pages.write_pages)
    app.connect("build-finished", latex.copy_style)
    app.connect("build-finished", linking.unregister_index_document)
    app.connect("build-finished", profiles.close_profiles)
    return {
        "version": __version__,
        "env_version": 2,
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
