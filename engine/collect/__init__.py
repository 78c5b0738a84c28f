"""In-the-wild collection: measuring a random few APIs inside real programs, opt-in.

On a user's machine: ``bootstrap`` (started by the ``apiprof-collect.pth`` hook when collection
is on) → ``collector`` (choose APIs with ``choose``, probe them with the measurement core's live
probes within a cost budget, one program ``slots`` each) → ``spool`` (atomic batch files in the
``wire`` format) → ``upload`` to the aggregation service; ``sync`` pulls the service's aggregate
back as the local reference. ``control`` is what ``apiprof collect`` calls.
"""
