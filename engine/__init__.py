"""The batch engine. ``scan`` is the spine of a scan: discover → plan → run → store.

Stages, one sub-package each, lowest first: ``discovery`` (entry points), ``scenarios`` (what
calls them), ``measure`` (the two-phase profiler that runs inside a worker), ``isolation``
(sandboxed worker processes). ``timeouts`` limits single calls; ``testsuite`` runs a package's
own tests as one more scenario. Records and histograms come from :mod:`apiprof.model`.
"""
