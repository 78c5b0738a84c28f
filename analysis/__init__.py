"""Answers from whole databases: ``compare`` (did NEW get slower than BASE, API by API?) and
``report`` (where does a package's cost live, module by module?).

Readers like the Sphinx extension and the language server: they use the model, the store's
queries and the shared formatting, never the scan machinery. ``stats`` holds the statistics
(pure functions over histograms), ``speed`` the machine-speed normalisation, ``charts`` and
``html`` the pages.
"""
