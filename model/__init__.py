"""The data model every part of apiprof shares: additive histograms, the records that flow
between pipeline stages, and growth classes.

This package imports nothing else from apiprof, so the engine, the store, the Sphinx extension
and the language server can all depend on it without depending on each other.
"""
