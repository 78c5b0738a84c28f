"""What a call's refusal of an input says about it, beyond its type.

A reader that refuses a made-up file or stream (``Invalid file, magic number is incorrect``,
``Syntax error in file /tmp/x.txt (line 1)``, ``unpack(b) received extra data``) wants the
package's own format, not another kind of argument. A call that refuses its optional
parameters left at None and names them (``start or end required``) wants one of them given.
Nothing here knows a package: only exception types, messages and the arguments given.
"""

from __future__ import annotations

import decimal
import fractions
import io
import os
import re
from collections.abc import Mapping

BINARY_STREAM = "binary stream"
TEXT_STREAM = "text stream"
"""What a lesson about an unread stream names: which kind of stream to build."""
_NOT_ABOUT_CONTENT = (FileNotFoundError, IsADirectoryError, PermissionError, TimeoutError)
"""Errors about the file system, not about what a file holds."""


def unread_input(
    error: BaseException, message: str, bound: Mapping[str, object]
) -> tuple[str, tuple[str, ...]] | None:
    """The parameter given the path of an existing file the call could not read: it raised
    an ``OSError`` (``Invalid file, magic number is incorrect``) or named the path in its
    message (``Syntax error in file /tmp/x.txt (line 1)``), so the file's content is wrong,
    not the kind of argument: a file in the package's own format may be read. Or given an
    in-memory stream it read and refused (``unpack(b) received extra data``): a stream of
    the package's own output. With the stream's kind: ``(parameter, (BINARY_STREAM,))``."""
    if isinstance(error, (*_NOT_ABOUT_CONTENT, UnicodeError)) or not isinstance(
        error, (OSError, ValueError, LookupError, EOFError)
    ):
        return None
    for name, value in bound.items():
        if isinstance(value, str) and value and os.path.isfile(value):
            if isinstance(error, OSError) or value in message:
                return name, ()
        elif isinstance(value, (io.BytesIO, io.StringIO)) and "closed file" not in message:
            return name, (BINARY_STREAM if isinstance(value, io.BytesIO) else TEXT_STREAM,)
    return None


OPERAND_TYPES = re.compile(r"unsupported operand type\(s\) for [^:]+: '([\w.]+)' and '([\w.]+)'")
_CONCATENATED = re.compile(r'can only concatenate (\w+) \(not "(\w+)"\) to \w+')
"""``"" + [...]`` in the body: the operand of the quoted type should have the first one's."""


def operand_type(message: str, bound: Mapping[str, object]) -> tuple[str, str] | None:
    """``unsupported operand type(s) for -: 'list' and 'int'`` (or ``can only concatenate str
    (not "list") to str``): ``(parameter, type name)``
    for the argument of one operand's type that should have the other's — of the two, the
    type fewer arguments have (``fquotmod(val, low, high)`` given a list ``val``: an int);
    the other operand may be the receiver's (``timedelta + start``: a timedelta)."""
    kinds = {name: type(value).__name__ for name, value in bound.items() if "." not in name}
    concatenated = _CONCATENATED.search(message)
    if concatenated is not None:  # the message says which operand is out of place
        wanted, wrong = concatenated.groups()
        return next(((name, wanted) for name, kind in kinds.items() if kind == wrong), None)
    operands = OPERAND_TYPES.search(message)
    if operands is None:
        return None
    first, second = (name.rsplit(".", 1)[-1] for name in operands.groups())
    if first == second:
        return None
    given = sorted(
        (name for name, kind in kinds.items() if kind in (first, second)),
        key=lambda name: list(kinds.values()).count(kinds[name]),
    )
    if not given:
        return None
    return given[0], second if kinds[given[0]] == first else first


_RICHER_NUMBERS = (decimal.Decimal, fractions.Fraction, complex)
"""Number types whose methods a plain number lacks (``to_integral``, ``limit_denominator``)."""


def richer_number(error: AttributeError, bound: Mapping[str, object]) -> tuple[str, str] | None:
    """``'float' object has no attribute 'to_integral'`` asked of a number the call computed
    from its numeric arguments: ``(parameter, type name)`` giving the first of them the
    standard number type that has it (a ``Decimal``: arithmetic keeps it)."""
    obj, attribute = getattr(error, "obj", None), getattr(error, "name", None)
    if type(obj) not in (int, float) or not attribute:
        return None
    richer = next((kind for kind in _RICHER_NUMBERS if hasattr(kind, attribute)), None)
    numbers = [name for name, value in bound.items() if type(value) in (int, float)]
    if richer is None or not numbers:
        return None
    return numbers[0], richer.__name__


def named_optional(error: BaseException, message: str, bound: Mapping[str, object]) -> str | None:
    """The first parameter left at its default of None that a ``ValueError`` or ``TypeError``
    names as a word (``start or end required``, ``either path or data must be given``), in
    the order of the message; None when the message names none."""
    if not isinstance(error, (ValueError, TypeError)) or isinstance(error, UnicodeError):
        return None
    left = {name for name, value in bound.items() if value is None and "." not in name}
    named = [word for word in re.findall(r"[A-Za-z_]\w*", message) if word in left]
    return named[0] if named else None
