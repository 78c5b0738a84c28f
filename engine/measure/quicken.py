"""Timed code runs the bytecode a plain process runs (CPython 3.12's superinstructions).

CPython 3.12 pairs some instructions into superinstructions when it creates a code object
(``LOAD_FAST`` + ``LOAD_CONST`` → ``LOAD_FAST__LOAD_CONST``, five pairs in all). When
``sys.monitoring`` first instruments a code object, for any event and any tool, it splits them
again, and nothing pairs them afterwards: the allocation pass, which listens to every call,
leaves every function the scenario ran split for the rest of the worker. The split bytecode
does not cost what the paired one does — the ground-truth parent (1000 calls of a ~100 ns
leaf) ran about 10 % faster once its leaf had been split, so the scan reported less than a
user's plain process pays. 3.11 has no ``sys.monitoring`` and 3.13 pairs no instructions at run time;
both are left alone.

:func:`restore_quickened` puts the pairs back, with the interpreter's own rule
(``_quicken.c``), right before a timing pass measures: after every event of the pass is set,
so nothing instruments (and splits) the code again while it is timed. A code object is first
brought up to date with the current monitoring state — one local event of a scratch tool set
and cleared makes the interpreter apply every pending change now instead of on the code's next
start (which would split it again) — and then paired. Instructions that carry events are never
paired, so every probe still fires (docs/mechanisms.rst, "Measured code runs as in a plain
process").
"""

from __future__ import annotations

import dis
import opcode
import sys
import types
from collections.abc import Iterable

from apiprof.engine.measure.probes import acquire_tool_id, release_tool_id
from apiprof.errors import MeasurementError

try:
    from apiprof.engine.measure import _quicken
except ImportError:  # built without a C compiler: 3.12 figures of split code read low
    _quicken = None  # type: ignore[assignment]

TABLE_SIZE = 256
RESTORE_LIMIT = 512
"""Code objects restored per timing pass, the most called first: 2–13 µs each, so a scenario
that runs thousands of functions adds at most a few ms to a pass (whose budget is 10 ms)."""


def opcode_tables() -> bytes:
    """The ``tables`` argument of ``_quicken.restore``: each opcode's base opcode (0 where
    the opcode alone does not say, e.g. ``INSTRUMENTED_LINE``), then each base opcode's
    inline cache entries — from this interpreter's :mod:`opcode` module (3.12's layout)."""
    deopt, caches = bytearray(TABLE_SIZE), bytearray(TABLE_SIZE)
    all_ops: dict[str, int] = getattr(dis, "_all_opmap", opcode.opmap)
    for name, op in opcode.opmap.items():
        if op < TABLE_SIZE and not name.startswith("INSTRUMENTED_") and name != "CACHE":
            deopt[op] = op
            caches[op] = opcode._inline_cache_entries[op]  # type: ignore[attr-defined]
    for base, specialized in getattr(opcode, "_specializations", {}).items():
        for name in specialized:
            deopt[all_ops[name]] = opcode.opmap[base]
    for name, op in opcode.opmap.items():
        plain = opcode.opmap.get(name.removeprefix("INSTRUMENTED_"))
        if name.startswith("INSTRUMENTED_") and plain is not None:
            deopt[op] = plain
    return bytes(deopt + caches)


def _pairs_at_creation() -> bool:
    """Whether this interpreter makes superinstructions itself: a fresh code object with a
    pair (``LOAD_FAST x; LOAD_CONST 1``) has nothing left to pair. A build that never pairs
    (specialisation compiled out) must not be given pairs it would not have."""

    def fresh(x: int) -> int:
        return x + 1

    code = fresh.__code__.replace()
    return _quicken is not None and _quicken.restore(code, TABLES) == 0


PAIRS_AT_RUN_TIME = sys.version_info[:2] == (3, 12)  # 3.13 emits its pairs at compile time
TABLES = opcode_tables() if PAIRS_AT_RUN_TIME else b""
ACTIVE = bool(
    PAIRS_AT_RUN_TIME and _quicken is not None and _quicken.ACTIVE and _pairs_at_creation()
)
"""Whether timed code needs (and gets) its superinstructions back."""


def restore_quickened(codes: Iterable[types.CodeType]) -> int:
    """Pair the instructions of ``codes`` again as at their creation; returns the
    superinstructions made. Each code object is first brought up to date with the monitoring
    state: a scratch tool's local event set and cleared again makes the interpreter apply
    every pending change now. Code whose instructions cannot all be read is left as it is,
    and so is everything when no tool id is free."""
    if not ACTIVE:
        return 0
    try:
        scratch = acquire_tool_id()
    except MeasurementError:
        return 0
    monitoring = sys.monitoring
    start = monitoring.events.PY_START
    made = 0
    try:
        for code in dict.fromkeys(codes):  # each once, in order
            try:
                monitoring.set_local_events(scratch, code, start)
                monitoring.set_local_events(scratch, code, 0)
            except ValueError:  # code the interpreter will not instrument: timed as it is
                continue
            made += max(0, _quicken.restore(code, TABLES))
    finally:
        release_tool_id(scratch)
    return made
