"""A frame's code object without the audit event reading ``frame.f_code`` raises.

``frame.f_code`` raises the ``object.__getattr__`` audit event (3.11–3.13). A scan worker runs
the sandbox's audit hook (:mod:`~apiprof.engine.isolation.sandbox`, a Python callable) on every
audit event, so a ``sys.setprofile`` hook that reads ``f_code`` on every call and return — the
3.11 allocation pass, the 3.11 timing probe of generators and C-level targets, the 3.11 capture
of docstring examples — paid a Python call per event: 2177 ns per event instead of 315 ns in
the workers' calibration on 3.11. :func:`code_of` reads the same object with
``PyFrame_GetCode`` (``_timing.c``); without the extension it falls back to ``f_code``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType, FrameType


def _f_code(frame: FrameType) -> CodeType:
    return frame.f_code


code_of: Callable[[FrameType], CodeType]
try:
    from apiprof.engine.measure._timing import code_of
except ImportError:  # built without a C compiler: the audited attribute
    code_of = _f_code
