"""Documents in a standard format, for an argument a standard-library parser refused.

``XML(text)``, ``parseString(string)``, ``parse(source)`` of an XML library (defusedxml,
anything built on ``xml.etree``, ``xml.dom`` or ``xml.sax``) refuse made-up text with the
parser's own syntax error — ``ParseError``, ``ExpatError``, ``SAXParseException`` — and a
JSON reader with ``JSONDecodeError``. The exception's type says which format the text must
be, whatever the package: the argument that held the text (or named the file, or was the
stream) gets a small valid document of that format, in the same form.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping

from apiprof.engine.scenarios.resources import inputs_directory, safe_name
from apiprof.engine.scenarios.wants import Lesson, Want

XML = "xml"
JSON = "json"
DOCUMENTS = {
    XML: '<?xml version="1.0" encoding="utf-8"?>\n'
    '<items count="2"><item name="lorem">ipsum</item><item name="dolor">sit</item></items>\n',
    JSON: '{"items": [{"name": "lorem", "value": 1}, {"name": "dolor", "value": 2}]}\n',
}
"""A small, valid document of each format (elements with attributes and text, nesting)."""
_XML_ERRORS = {"ParseError", "ExpatError", "SAXParseException"}
TEXT, BYTES, FILE, TEXT_STREAM, BINARY_STREAM = "text", "bytes", "file", "text stream", "stream"
"""The form the refused argument had, which the document keeps."""


def refused_format(error: BaseException) -> str:
    """The format a standard-library parser's syntax error is about ("" for other errors)."""
    if isinstance(error, json.JSONDecodeError):
        return JSON
    kinds = {klass.__name__ for klass in type(error).__mro__}
    modules = {klass.__module__.split(".")[0] for klass in type(error).__mro__}
    if kinds & _XML_ERRORS and modules & {"xml", "pyexpat"}:
        return XML
    return ""


def document_lesson(error: BaseException, bound: Mapping[str, object]) -> Lesson | None:
    """The argument a parser's syntax error refused wants a document of its format: a file
    named by the path given first, else the stream, else the text given."""
    found = refused_format(error)
    if not found:
        return None
    cause = f"{type(error).__name__} {error}"
    forms = [(name, _form(value)) for name, value in bound.items() if "." not in name]
    for wanted in (FILE, BINARY_STREAM, TEXT_STREAM, BYTES, TEXT):
        for name, form in forms:
            if form == wanted:
                return Lesson(name, Want.DOCUMENT, (found, form), cause=cause)
    return None


def _form(value: object) -> str:
    if isinstance(value, str):
        return FILE if value and os.path.isfile(value) else TEXT
    if isinstance(value, (bytes, bytearray)):
        return BYTES
    if isinstance(value, io.BytesIO):
        return BINARY_STREAM
    if isinstance(value, io.StringIO):
        return TEXT_STREAM
    return ""


def document(names: tuple[str, ...], parameter: str) -> object:
    """The document a :data:`Want.DOCUMENT` lesson asks for, in the form it names."""
    found, form = names
    text = DOCUMENTS[found]
    if form == FILE:
        path = inputs_directory() / f"{safe_name(parameter)}.{found}"
        path.write_text(text, encoding="utf-8")
        return str(path)
    if form == BYTES:
        return text.encode()
    if form == BINARY_STREAM or (form == TEXT_STREAM and found == XML):  # expat reads bytes
        return io.BytesIO(text.encode())
    if form == TEXT_STREAM:
        return io.StringIO(text)
    return text
