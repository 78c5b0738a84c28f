"""Open documents as the client sees them: LSP lines, positions and incremental edits.

LSP lines end only at ``\\n``, ``\\r\\n`` or ``\\r`` — not at the form feeds, U+2028 or U+0085 that
``str.splitlines()`` also breaks at — and columns count code units of the negotiated encoding
(UTF-16 unless the client chose otherwise). parso and jedi split lines the LSP way and count
code points, so one conversion at the edge keeps every position right.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import urlparse

from lsprotocol import types
from pygls.uris import to_fs_path

LINE_BREAK = re.compile(r"\r\n|\r|\n")

PYTHON_SUFFIXES = (".py", ".pyi", "")


def split_lines(source: str) -> list[str]:
    """Lines without their terminators; a trailing break yields a last, empty line."""
    return LINE_BREAK.split(source)


def _units(char: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf8:
        return len(char.encode("utf-8", "surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return 1
    return 2 if ord(char) > 0xFFFF else 1


def to_code_points(line: str, column: int, encoding: str) -> int:
    """A client column (code units) as a code-point index into ``line``, clamped to its end."""
    if encoding == types.PositionEncodingKind.Utf32 or line.isascii():
        return max(0, min(column, len(line)))
    units = 0
    for index, char in enumerate(line):
        if units >= column:
            return index
        units += _units(char, encoding)
    return len(line)


def to_code_units(line: str, column: int, encoding: str) -> int:
    """A code-point column as client code units."""
    if encoding == types.PositionEncodingKind.Utf32 or line.isascii():
        return column
    return sum(_units(char, encoding) for char in line[:column])


def document_path(uri: str) -> str | None:
    """The file behind a ``file:`` URI; None for ``untitled:`` and other schemes (jedi then
    works without a path, as for an unsaved buffer)."""
    if urlparse(uri).scheme != "file":
        return None
    path = to_fs_path(uri)
    return path if path and Path(path).suffix in PYTHON_SUFFIXES else None


@dataclass
class Document:
    uri: str
    source: str
    version: int | None = None
    encoding: str = types.PositionEncodingKind.Utf16

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(self.source)

    @cached_property
    def _line_starts(self) -> list[int]:
        return [0, *(m.end() for m in LINE_BREAK.finditer(self.source))]

    @property
    def path(self) -> str | None:
        return document_path(self.uri)

    def position(self, position: types.Position) -> tuple[int, int] | None:
        """0-based line and code-point column; None past the last line. Columns past the end of
        a line move to its end, so an editor one keystroke ahead still gets an answer."""
        if position.line >= len(self.lines):
            return None
        line = self.lines[position.line]
        return position.line, to_code_points(line, position.character, self.encoding)

    def units(self, line: int, column: int) -> int:
        """A code-point column of ``line`` in the client's code units."""
        text = self.lines[line] if line < len(self.lines) else ""
        return to_code_units(text, column, self.encoding)

    def client_position(self, line: int, column: int) -> types.Position:
        return types.Position(line, self.units(line, column))

    def _offset(self, position: types.Position) -> int:
        if position.line >= len(self.lines):
            return len(self.source)
        line = self.lines[position.line]
        return self._line_starts[position.line] + to_code_points(
            line, position.character, self.encoding
        )

    def apply(self, change: types.TextDocumentContentChangeEvent) -> None:
        if isinstance(change, types.TextDocumentContentChangePartial):
            start, end = self._offset(change.range.start), self._offset(change.range.end)
            if end < start:
                start, end = end, start
            self.source = self.source[:start] + change.text + self.source[end:]
        else:
            self.source = change.text
        self.__dict__.pop("lines", None)
        self.__dict__.pop("_line_starts", None)


class UnknownDocument(LookupError):
    """A request named a document the client never opened."""


class Documents:
    """The open documents, by URI (the server's copy of each editor buffer)."""

    def __init__(self) -> None:
        self._open: dict[str, Document] = {}
        self.encoding: str = types.PositionEncodingKind.Utf16

    def __contains__(self, uri: str) -> bool:
        return uri in self._open

    def __len__(self) -> int:
        return len(self._open)

    def open(self, item: types.TextDocumentItem) -> Document:
        doc = Document(item.uri, item.text, item.version, self.encoding)
        self._open[item.uri] = doc
        return doc

    def change(self, params: types.DidChangeTextDocumentParams) -> Document:
        doc = self.get(params.text_document.uri)
        for change in params.content_changes:
            doc.apply(change)
        doc.version = params.text_document.version
        return doc

    def close(self, uri: str) -> None:
        self._open.pop(uri, None)

    def get(self, uri: str) -> Document:
        try:
            return self._open[uri]
        except KeyError:
            raise UnknownDocument(uri) from None
