"""A buffer of the length ``struct`` asked for: ``unpack requires a buffer of 8 bytes``,
``unpack_from requires a buffer of at least 4 bytes``.

A reader of a binary format unpacks fixed-size fields from the bytes it is given, so made-up
bytes of the size axis's length are refused. The argument holding the bytes the failing frame
unpacked (or else the one bytes argument) becomes random bytes of exactly that length: a
fixed size, not sized by the axis.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

from apiprof.engine.scenarios.failing import culprit, holders

_BUFFER = re.compile(r"requires a buffer of (?:at least )?(\d+) bytes")
_LENGTH = re.compile(r"bytes of length (\d+)$")
MAX_LENGTH = 1 << 16
"""Longest buffer a lesson asks for (a larger one is no field of a format)."""


def buffer_wanted(error: BaseException, bound: Mapping[str, object]) -> tuple[str, str] | None:
    """``(parameter, "bytes of length N")``: the bytes argument ``struct`` found too short or
    too long, and the length it asked for; None when the error is no such refusal."""
    asked = _BUFFER.search(str(error))
    if asked is None or int(asked.group(1)) > MAX_LENGTH:
        return None
    found = culprit(error, bound, _is_buffer) or next(holders(bound, _is_buffer), None)
    if found is None or found[1]:  # an element of a list: not this lesson's
        return None
    return found[0], f"bytes of length {asked.group(1)}"


def fixed_buffer(kind: str, rng: random.Random) -> bytes | None:
    """Random bytes of the length ``kind`` names (``bytes of length 8``), else None."""
    length = _LENGTH.match(kind)
    return rng.randbytes(int(length.group(1))) if length is not None else None


def _is_buffer(value: object) -> bool:
    return isinstance(value, (bytes, bytearray, memoryview))
