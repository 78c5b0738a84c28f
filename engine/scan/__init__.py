"""The scan pipeline: discover → plan → run → bucket → store, one package into one database.

    summary = scan("textwrap", db_path="apiprof.db")

Every step that runs the package's code (importing it, collecting and running scenarios, even
calibrating the probes) happens in confined worker processes (:mod:`apiprof.engine.isolation.pool`),
a fresh one per entry point; this process only plans, checks, collates and writes. It trusts
nothing a worker sends (the pool checks every reply against its task), and reports honestly:
an entry point whose code, or a thread it started, tried something the sandbox forbids is
``blocked`` with the reason and keeps no measurements; what a module's top-level code tried is
blamed on that module's import. The isolation the workers got is stored with the scan.

Results are stored per entry point in their own transaction as they arrive, so an interrupted
scan keeps everything measured so far, and ``resume=True`` continues the package's last
unfinished scan (one resuming process at a time), skipping entry points that already have a
coverage row from it. A database that fails mid-scan ends it with a
:class:`~apiprof.errors.DatabaseError` (exit code 3), the scan marked interrupted where the file
still allows it.

With ``tests=PATH`` the package's own pytest suite is one more scenario (:mod:`~apiprof.engine.testsuite`).

With ``jobs > 1`` scenarios run in parallel workers: the sampled CPU time stays trustworthy, wall
time only while there are idle cores for every worker (workers compete for cores and caches).

The stages live in modules named after them: :mod:`.discover`, :mod:`.plan`, :mod:`.run`,
:mod:`.bucket`, :mod:`.store`, tied together by :mod:`.pipeline`; :mod:`.options` says what
shapes a scan, :mod:`.resume` continues an unfinished one, :mod:`.summary` reads back what a
scan did, :mod:`.progress` feeds the display and :mod:`.scaffold` writes scenario scaffolds.
"""

from apiprof.engine.scan.discover import list_package
from apiprof.engine.scan.options import ScanOptions
from apiprof.engine.scan.pipeline import ScanInterrupted, scan
from apiprof.engine.scan.progress import ScanProgress
from apiprof.engine.scan.resume import last_scan_status
from apiprof.engine.scan.scaffold import write_scenario_scaffold
from apiprof.engine.scan.summary import ScanSummary, busy_warnings

__all__ = [
    "ScanInterrupted",
    "ScanOptions",
    "ScanProgress",
    "ScanSummary",
    "busy_warnings",
    "last_scan_status",
    "list_package",
    "scan",
    "write_scenario_scaffold",
]
