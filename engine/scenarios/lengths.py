"""Lessons about length: a call refused because its receiver has the wrong length.

A fixed-width view of a value (a 16-bit float read from a bit string, a key that must be 32
bytes) says so and how long the value was: ``'bfloat' dtypes must have a length of 16, but
received a length of 0``, ``must have a length in (16, 32, 64)``. When that received length
is the receiver's own, the receiver is to be built again with the length asked for (the
first of a listed choice; :mod:`.sizedreceivers` builds it).
"""

from __future__ import annotations

import inspect
import re

from apiprof.engine.scenarios.wants import Lesson, Want

_WANTED = re.compile(
    r"(?:must|should|needs? to) (?:have|be of|be) (?:a |an |the )?length "
    r"(?:of |in [(\[{]|= ?|== ?)?(\d+)|"
    r"(?:expected|requires?) (?:a )?length (?:of )?(\d+)|"
    r"(?:must|should) be (\d+) (?:bytes|bits|characters|chars|items|elements) long"
)
"""A message naming the length a value must have (the first of a list of allowed ones)."""
_RECEIVED = re.compile(r"(?:received|got|given|but (?:is|was|has))\D{0,24}?(\d+)")
"""The length the value had, said after the wanted one."""
TEACHES = r"must have a length|(?:expected|requires?) (?:a )?length \d|be \d+ (?:bytes|bits) long"
"""What :data:`.lessons.TEACHING` adds for these lessons."""
MAX_LENGTH = 1 << 16
"""Longer wanted lengths are not built (a message's number may be a limit, not a width)."""


def wanted_length(message: str) -> tuple[int, int | None] | None:
    """``(wanted, received)`` lengths a message names, ``received`` None when it says none."""
    wanted = _WANTED.search(message)
    if wanted is None:
        return None
    number = int(next(group for group in wanted.groups() if group is not None))
    received = _RECEIVED.search(message, wanted.end())
    return number, int(received.group(1)) if received else None


def receiver_length(message: str, receiver: object, cause: str) -> Lesson | None:
    """The receiver is wanted ``N`` long: the message names a length it lacks and the length
    it had is the receiver's own (or unsaid)."""
    found = wanted_length(message)
    if found is None or receiver is None or inspect.isclass(receiver):
        return None
    wanted, received = found
    had = length_of(receiver)
    if had is None or had == wanted or not 0 < wanted <= MAX_LENGTH:
        return None
    if received is not None and received != had:
        return None
    return Lesson("self", Want.LENGTH, (str(wanted),), cause=cause)


def length_of(value: object) -> int | None:
    try:
        return len(value)  # type: ignore[arg-type]
    except Exception:  # no len(), or one that raises
        return None
