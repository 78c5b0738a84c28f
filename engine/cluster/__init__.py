"""Scanning beyond one machine: many packages on a Dask cluster, added into one store.

The unit of work is a :class:`~apiprof.engine.cluster.tasks.ScanTask` — a package, or a batch of
a large package's entry points, optionally in a virtualenv of its own built from a requirement.
``coordinator`` plans the tasks, submits them to a Dask scheduler (or a local cluster) and adds
each result to the local database exactly once, keyed by the task's id; ``tasks`` is what runs on
a Dask worker: it starts an ordinary scan in a child process (``runner``), so package code still
runs only in apiprof's sandboxed scan workers and no crash or hang reaches the Dask worker;
``environments`` builds and caches the per-requirement virtualenvs.

Dask is an optional dependency (``pip install 'apiprof[cluster]'``); only ``coordinator``
imports it, and says what to install when it is missing.
"""
