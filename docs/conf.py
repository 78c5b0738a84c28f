"""Sphinx configuration of apiprof's own documentation, built with apiprof's own extension.

``make -C docs html`` scans ``json`` and ``textwrap`` into docs/apiprof.db first if it is missing,
so the "API costs" pages show real measurements taken on the building machine.
"""

import importlib.util
import os

project = "apiprof"
author = "the apiprof authors"
copyright = "2026, the apiprof authors"

# cli.md and scenario-format.md are Markdown so they also read well on a code host; myst-parser
# (the docs extra) turns them into pages.
extensions = ["sphinx.ext.autodoc", "myst_parser", "apiprof.sphinx_ext"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "README*"]
myst_heading_anchors = 3

# -- apiprof -----------------------------------------------------------------------------------
apiprof_db = os.environ.get("APIPROF_DB", "apiprof.db")
apiprof_auto = True
apiprof_metrics = ["time", "alloc_incl_bytes"]
# json/textwrap have a few APIs no scenario reaches: the page says so, the log notes it
apiprof_pages = "referenced"

# -- autodoc -----------------------------------------------------------------------------------
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_member_order = "bysource"

# -- HTML --------------------------------------------------------------------------------------
html_theme = "furo" if importlib.util.find_spec("furo") else "alabaster"
html_title = "apiprof"
