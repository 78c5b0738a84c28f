"""apiprof: what an API call typically costs — time, memory, growth — measured and shown where
programmers choose APIs (Sphinx docs, the editor).

The package is a pipeline: ``engine`` discovers entry points, plans and runs isolated profiling
passes and buckets the measurements; ``db`` stores additive log2 profiles in SQLite;
``sphinx_ext`` and ``lsp_server`` read them back for people.
"""

from apiprof.errors import ApiprofError

__version__ = "0.1.0"
__all__ = ["ApiprofError", "__version__"]
