"""Text given where bytes were wanted, or bytes where text was: what a call's ``TypeError``
says (``can't concat str to bytes``, ``a bytes-like object is required, not 'str'``, ``must be
str, not bytes``), and which argument was of the wrong kind — a string or a text stream when
the call wanted bytes (a codec's stream reader reading a text file), and the other way round.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence

_WANTS_BYTES = re.compile(
    r"can't concat str to (bytes|bytearray)|a bytes-like object is required, not 'str'|"
    r"cannot use a bytes pattern on a string-like object|decoding str is not supported|"
    r"should be a bytes-like object or ASCII string, not 'str'"
)
_WANTS_TEXT = re.compile(
    r"can only concatenate str \(not \"bytes\"\)|must be str, not bytes|"
    r"can't concat bytes to str|cannot use a string pattern on a bytes-like object|"
    r"expected str instance, bytes found"
)
BINARY_FILE = "binary file"
TEXT_FILE = "text file"


def wrong_kind(
    message: str, bound: Mapping[str, object], named: Sequence[str]
) -> tuple[str, str] | None:
    """``(parameter, what it should be: "bytes", "str", a binary or a text file)`` for the
    argument of the wrong kind the message complains about (one the failing expression names
    first), or None."""
    plain: tuple[type, ...]
    other: tuple[type, ...]
    stream: tuple[type, ...]
    if _WANTS_BYTES.search(message):
        plain, stream, wanted = (str,), (io.TextIOBase,), ("bytes", BINARY_FILE)
        other, flipped = (bytes, bytearray), "str"
    elif _WANTS_TEXT.search(message):
        plain, stream = (bytes, bytearray), (io.BufferedIOBase, io.RawIOBase)
        wanted, other, flipped = ("str", TEXT_FILE), (str,), "bytes"
    else:
        return None
    found = [(name, wanted[1]) for name, value in bound.items() if isinstance(value, stream)]
    found += [(name, wanted[0]) for name, value in bound.items() if isinstance(value, plain)]
    if not found:  # none of ours is of the kind refused: it met ours of the other kind
        # (a bytes pattern of ours on text the call made of its other arguments)
        found = [(name, flipped) for name, value in bound.items() if isinstance(value, other)]
    found.sort(key=lambda pair: pair[0] not in named)
    return found[0] if found else None


def mixes_kinds(reason: str) -> bool:
    """Whether a rejected call's reason complains of text and bytes mixed up."""
    return _WANTS_BYTES.search(reason) is not None or _WANTS_TEXT.search(reason) is not None
