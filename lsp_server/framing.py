"""The base protocol's framing (``Content-Length`` headers, then a JSON body), read defensively.

pygls' reader trusts the header: ``Content-Length: 100000000000`` makes it ask for the whole body
in one read (a MemoryError that ends the server), and a header it cannot parse (``abc``, ``-5``, a
lower-case name) or a length that does not match the body leaves it waiting for a frame that
never comes — the process lives but answers nothing again. Its read loop has no hook to change
that, so this module replaces it: a parser that is fed bytes as they arrive (it never
allocates more than what was received), and that gets back in step on its own:

* header names are matched case-insensitively (HTTP semantics), lines may end in ``\\n``;
* a length that is missing, not a number, negative or above :data:`MAX_CONTENT_LENGTH` makes the
  frame *bad*: its body is taken to be the one JSON value that follows (or everything up to the
  next ``Content-Length`` header), and the frame is answered with an error carrying the request's
  id when that can be read;
* a body whose length was declared too long is cut where the next frame's header begins, one
  declared too short fails to parse and is answered with an error; bytes between frames that are
  no header are skipped up to the next ``Content-Length`` header.

The parser only produces events; :mod:`.rpc` answers them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MAX_CONTENT_LENGTH = 64 * 2**20
"""Largest body accepted (64 MiB: a didOpen of a very large file fits many times over)."""

MAX_HEADER_BYTES = 8 * 2**10
"""A header block longer than this is not a header block."""

MAX_UNFRAMED_BYTES = 2**20
"""How far past a bad header the parser looks for the end of the body before giving up on it."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_HEADER_START = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_LINE = re.compile(rb"([A-Za-z0-9!#$%&'*+.^_`|~-]+)[ \t]*:[ \t]*(.*?)[ \t]*\r?\n", re.DOTALL)
_REQUEST_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15}(?![\d.eE])|"(?:[^"\\\r\n]|\\.){0,256}")')
_WHITESPACE = b" \t\r\n"
_KEEP_FOR_HEADER = len(b"content-length:") - 1


@dataclass(frozen=True)
class Message:
    """One well-framed, well-formed JSON body."""

    value: Any


@dataclass(frozen=True)
class BadFrame:
    """A frame that cannot be handled; answered with an error (``request_id`` when readable)."""

    problem: str
    request_id: int | str | None = None
    code: int = PARSE_ERROR


@dataclass(frozen=True)
class Skipped:
    """Bytes between frames that were not a header (logged, not answered)."""

    size: int


Event = Message | BadFrame | Skipped

_AGAIN = object()  # a step consumed bytes without completing an event: step again


def request_id(value: Any) -> int | str | None:
    """The id of a decoded message, if it has a usable one."""
    if isinstance(value, dict):
        found = value.get("id")
        if isinstance(found, int | str) and not isinstance(found, bool):
            return found
    return None


def guess_request_id(raw: bytes) -> int | str | None:
    """The id of a body that does not parse, read from its text (best effort)."""
    match = _REQUEST_ID.search(raw)
    if not match:
        return None
    try:
        return request_id({"id": json.loads(match.group(1))})
    except ValueError:
        return None


def _header_starts(data: bytearray, start: int = 0) -> list[int]:
    """Offsets of ``Content-Length:`` in ``data[start:]`` (searched in a copy: a match holding
    the bytearray would keep it from being resized)."""
    return [start + m.start() for m in _HEADER_START.finditer(bytes(data[start:]))]


def _decode(body: bytes | bytearray) -> tuple[Any, str]:
    """(value, "") or (None, problem)."""
    try:
        return json.loads(body.decode("utf-8")), ""
    except UnicodeDecodeError:
        return None, "the body is not UTF-8"
    except RecursionError:
        return None, "the body nests too deeply"
    except ValueError as exc:  # JSONDecodeError, and integers too long to convert
        return None, f"the body is not valid JSON ({exc})"


def _leading_value(data: bytes | bytearray) -> tuple[Any, int] | None:
    """A complete JSON value at the start of ``data`` (after whitespace): (value, bytes used)."""
    text = bytes(data).decode("utf-8", "surrogateescape")
    start = len(text) - len(text.lstrip())
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return value, len(text[:end].encode("utf-8", "surrogateescape"))


class FrameParser:
    """Feed it bytes; it returns the events those bytes complete."""

    def __init__(self, max_length: int = MAX_CONTENT_LENGTH) -> None:
        self.max_length = max_length
        self._buffer = bytearray()
        self._headers: list[tuple[bytes, bytes]] = []
        self._length: int | None = None  # body length of a good header block
        self._bad_header = ""  # problem with the header block whose body comes next
        self._header_bytes = 0
        self._searched = 0  # bytes of an incomplete body already searched for a header

    def feed(self, data: bytes) -> list[Event]:
        self._buffer += data
        events: list[Event] = []
        while (event := self._step()) is not None:
            if event is not _AGAIN:
                events.append(event)
        return events

    def close(self) -> list[Event]:
        """The stream ended: whatever is left is a frame that was cut short."""
        events: list[Event] = []
        rest = bytes(self._buffer).strip(_WHITESPACE)
        if self._bad_header:
            events.append(BadFrame(self._bad_header, guess_request_id(rest)))
        elif self._length is not None or self._headers:
            events.append(BadFrame("the stream ended inside a frame", guess_request_id(rest)))
        elif rest:
            events.append(Skipped(len(rest)))
        self._buffer.clear()
        self._reset()
        return events

    def _reset(self) -> None:
        self._headers, self._length, self._bad_header = [], None, ""
        self._header_bytes = self._searched = 0

    def _consume(self, size: int) -> bytes:
        taken = bytes(self._buffer[:size])
        del self._buffer[:size]
        return taken

    def _step(self) -> Any:
        if self._bad_header:
            return self._unframed_body()
        if self._length is not None:
            return self._body(self._length)
        return self._header_line()

    # -- headers ----------------------------------------------------------------------------------
    def _header_line(self) -> Any:
        if not self._headers:
            stripped = len(self._buffer) - len(self._buffer.lstrip(_WHITESPACE))
            del self._buffer[:stripped]
        end = self._buffer.find(b"\n")
        if end < 0:
            return self._resync() if len(self._buffer) > MAX_HEADER_BYTES else None
        line = bytes(self._buffer[: end + 1])
        if not line.strip(_WHITESPACE):
            self._consume(end + 1)
            self._end_of_headers()
            return _AGAIN
        match = _HEADER_LINE.fullmatch(line)
        self._header_bytes += len(line)
        if match is None or self._header_bytes > MAX_HEADER_BYTES:
            return self._resync(end + 1)
        self._consume(end + 1)
        self._headers.append((match.group(1).lower(), match.group(2)))
        return _AGAIN

    def _resync(self, line_end: int | None = None) -> Any:
        """Drop bytes up to the next ``Content-Length`` header: at least the bad line (when it is
        complete), else all but a tail that may be the start of a header."""
        found = _header_starts(self._buffer, 1)
        if found:
            size = found[0]
        elif line_end is not None:
            size = line_end
        else:
            size = max(0, len(self._buffer) - _KEEP_FOR_HEADER)
        skipped = self._consume(size)
        self._headers, self._header_bytes = [], 0
        leading = _leading_value(skipped) if skipped.startswith(b"{") else None
        if leading is not None and isinstance(leading[0], dict) and "method" in leading[0]:
            return BadFrame(
                "a message arrived without a Content-Length header", request_id(leading[0])
            )
        return Skipped(size) if size else _AGAIN

    def _end_of_headers(self) -> None:
        lengths = {value for name, value in self._headers if name == b"content-length"}
        self._headers = []
        if not lengths:
            self._bad_header = "the frame has no Content-Length header"
        elif len(lengths) > 1:
            self._bad_header = "the frame has conflicting Content-Length headers"
        else:
            [text] = lengths
            shown = text[:40].decode("ascii", "replace")
            if not text.isdigit() or len(text) > 20:
                self._bad_header = f"Content-Length {shown!r} is not a byte count"
            elif int(text) > self.max_length:
                self._bad_header = (
                    f"Content-Length {int(text):,} exceeds the limit of {self.max_length:,} bytes"
                )
            else:
                self._length = int(text)

    # -- bodies -----------------------------------------------------------------------------------
    def _body(self, length: int) -> Event | None:
        if len(self._buffer) < length:
            return self._cut_at_next_header()
        body = self._consume(length)
        self._reset()
        value, problem = _decode(body)
        if not problem:
            return Message(value)
        leading = _leading_value(body)
        if leading is None:
            return BadFrame(f"{problem}; is Content-Length {length} right?", guess_request_id(body))
        value, used = leading
        rest = body[used:].lstrip(_WHITESPACE)
        if _HEADER_START.match(rest):
            self._buffer[:0] = rest  # the next frame began inside this one
            return BadFrame(
                f"Content-Length {length} is longer than the message ({used} bytes)",
                request_id(value),
            )
        return BadFrame(f"{problem}; is Content-Length {length} right?", request_id(value))

    def _cut_at_next_header(self) -> Event | None:
        """A body still short of its declared length that already holds a whole message and the
        start of the next frame was declared too long: cut it there instead of waiting."""
        start = max(0, self._searched - _KEEP_FOR_HEADER)
        self._searched = len(self._buffer)
        for found in _header_starts(self._buffer, start):
            leading = _leading_value(self._buffer[:found])
            if leading is None:
                continue
            value, used = leading
            if self._buffer[used:found].strip(_WHITESPACE):
                continue
            declared = self._length
            self._consume(found)
            self._reset()
            return BadFrame(
                f"Content-Length {declared} is longer than the message ({used} bytes)",
                request_id(value),
            )
        return None

    def _unframed_body(self) -> Event | None:
        """The body after a bad header: one JSON value, or what comes before the next header."""
        problem = self._bad_header
        leading = _leading_value(self._buffer)
        if leading is not None:
            value, used = leading
            self._consume(used)
            self._reset()
            return BadFrame(problem, request_id(value))
        found = _header_starts(self._buffer)
        if not found and len(self._buffer) <= MAX_UNFRAMED_BYTES:
            return None
        body = self._consume(found[0] if found else len(self._buffer))
        self._reset()
        return BadFrame(problem, guess_request_id(body))


def encode(payload: dict[str, Any]) -> bytes:
    """One frame: the header pygls writes too, then the UTF-8 body."""
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
