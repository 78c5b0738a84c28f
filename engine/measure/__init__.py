"""The measurement core, run inside a worker on one scenario: ``profiler`` is its spine —
allocation pass (``alloc``, ``iocount``) → co-stack colouring (``plan``) → timing passes
(``timing``, ``probes``, ``activetime``) with probe costs from ``calibrate``."""
