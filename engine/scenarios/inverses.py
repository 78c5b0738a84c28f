"""Input an inverse of the entry point makes (``packb``'s output for ``unpackb``, ``sign``'s for
``unsign``, what ``dump`` writes for ``load``): realistic encoded input for a reader, where a
made-up text or stream is refused (a signature that does not check, a magic number missing).

Offered for the reader's first required parameter when it is untyped, or typed as a text
(``str``, ``bytes`` or a union of them, ``None`` allowed) or as a stream (``IO[Any]``,
``TextIO``, ``BinaryIO``); a stream gets what the producer returns, or what it writes into the
stream it is given, in an in-memory stream of its own.
"""

from __future__ import annotations

import io
import types
import typing
from dataclasses import replace
from typing import Any

from apiprof.engine.scenarios.factories import (
    Produced,
    inverse_class_producers,
    inverse_producers,
)
from apiprof.engine.scenarios.typetext import BinaryFileMarker, TextFileMarker

_STREAM_TYPES = (
    typing.IO,
    typing.TextIO,
    typing.BinaryIO,
    io.IOBase,
    io.TextIOBase,
    io.BufferedIOBase,
    io.StringIO,
    io.BytesIO,
    TextFileMarker,
    BinaryFileMarker,
)


def inverse_inputs(target: typing.Callable[..., Any], annotation: Any) -> list[Produced]:
    """What the package's inverses of ``target`` make, as candidates for its first required
    parameter (annotated ``annotation``, None when untyped): its own class's inverse method
    after the package's inverse functions; [] for a parameter of another type."""
    if annotation is None or annotation in (str, bytes):
        fits: type | tuple[type, ...] | None = annotation
        stream = False
    elif members := text_members(annotation):
        fits, stream = members, False
    elif is_stream(annotation):
        fits, stream = None, True
    else:
        return []
    found = [Produced(producer, fits=fits, stream=stream) for producer in inverse_producers(target)]
    found += [replace(made, fits=fits, stream=stream) for made in inverse_class_producers(target)]
    return found


def text_members(annotation: Any) -> tuple[type, ...]:
    """The text types of a union of ``str`` and ``bytes`` (``None`` beside them allowed),
    else ()."""
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return ()
    members = tuple(m for m in typing.get_args(annotation) if m is not type(None))
    return members if members and all(m in (str, bytes) for m in members) else ()


def is_stream(annotation: Any) -> bool:
    """Whether ``annotation`` asks for an open stream (``IO[str]``, ``TextIO``, ``BytesIO``)."""
    return annotation in _STREAM_TYPES or typing.get_origin(annotation) is typing.IO


def as_stream(made: object, given: list[object]) -> io.IOBase | None:
    """A new in-memory stream of what a producer made: the text or bytes it returned, else
    what it wrote into the stream among its arguments ``given``; None when it made neither."""
    if isinstance(made, str):
        return io.StringIO(made)
    if isinstance(made, (bytes, bytearray)):
        return io.BytesIO(bytes(made))
    for value in given:  # what it wrote: up to where it stopped (a stream made for it may
        if isinstance(value, (io.StringIO, io.BytesIO)) and value.tell():  # hold text beyond)
            written = value.getvalue()[: value.tell()]
            return io.StringIO(written) if isinstance(written, str) else io.BytesIO(written)
    return None
