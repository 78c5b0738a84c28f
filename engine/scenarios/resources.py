"""Arguments that are resources rather than values: a file or directory in the worker's sandbox,
a connected loopback socket, an in-memory text file that survives ``close()``, a traceback, a
module of the package."""

from __future__ import annotations

import importlib
import io
import logging
import pathlib
import random
import re
import socket
import sqlite3
import tempfile
import types
import zlib
from typing import Any

from apiprof.engine.scenarios.building import BuildContext
from apiprof.engine.scenarios.factories import import_package
from apiprof.engine.scenarios.texts import random_text


class ReusableText(io.StringIO):
    """An in-memory text file that leaving a ``with`` block (or ``close()``) only rewinds:
    each measured call gets it open again, as the first one did."""

    def close(self) -> None:
        self.seek(0)


def sandbox_file(context: BuildContext, name: str, rng: random.Random) -> str:
    """A file in the temporary directory (the worker's sandbox) holding text that grows with n;
    its path."""
    context.sized = True
    path = inputs_directory() / f"{safe_name(name)}-{context.n}.txt"
    path.write_text("\n".join(random_text(rng, 40) for _ in range(max(context.n // 10, 1))) + "\n")
    return str(path)


def sandbox_text_file(text: str, name: str) -> str:
    """A file in the sandbox holding exactly ``text``; its path."""
    path = inputs_directory() / f"{safe_name(name)}-{zlib.crc32(text.encode()):08x}.txt"
    path.write_text(text)
    return str(path)


def sandbox_directory(context: BuildContext, name: str, rng: random.Random) -> str:
    """A directory in the sandbox with a few small files; its path."""
    directory = inputs_directory() / f"{safe_name(name)}-dir"
    directory.mkdir(exist_ok=True)
    for index in range(3):
        (directory / f"file{index}.txt").write_text(random_text(rng, 80) + "\n")
    return str(directory)


def inputs_directory() -> pathlib.Path:
    directory = pathlib.Path(tempfile.gettempdir()) / "apiprof-inputs"
    directory.mkdir(exist_ok=True)
    return directory


def safe_name(name: str) -> str:
    return re.sub(r"\W", "_", name)


SOCKET_TIMEOUT = 0.5
"""Seconds a synthesised socket waits on a read or write nothing will ever satisfy."""
_SOCKETS: list[socket.socket] = []
"""Both ends of every socket pair handed out, so the peer stays open while the call runs."""


def loopback_socket(context: BuildContext, name: str, rng: random.Random) -> socket.socket:
    """One end of a connected socket pair, its peer holding n bytes ready to be read. A call
    that would wait for more (reading past them, writing to a full peer) fails after
    :data:`SOCKET_TIMEOUT` instead of holding the worker until the trial's time limit."""
    ours, theirs = _connected_pair()
    theirs.sendall(rng.randbytes(min(context.n, 4096)))
    ours.settimeout(SOCKET_TIMEOUT)
    _SOCKETS.extend((ours, theirs))
    return ours


def _connected_pair() -> tuple[socket.socket, socket.socket]:
    """A TCP connection over loopback (socket options, a peer address, as a network socket
    has); a Unix socket pair where loopback TCP is refused."""
    try:
        with socket.create_server(("127.0.0.1", 0)) as server:
            ours = socket.create_connection(server.getsockname(), timeout=SOCKET_TIMEOUT)
            theirs, _ = server.accept()
    except OSError:
        return socket.socketpair()
    return ours, theirs


class RewoundIterator:
    """An iterator over a list that starts again before each call (:func:`.consume.rewind`):
    a call that wants an iterator (``next(lines)``) uses it up."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.position = 0

    def __iter__(self) -> RewoundIterator:
        return self

    def __next__(self) -> Any:
        if self.position >= len(self.items):
            raise StopIteration
        self.position += 1
        return self.items[self.position - 1]

    def rewind(self) -> None:
        self.position = 0


def lines_iterator(context: BuildContext, name: str, rng: random.Random) -> RewoundIterator:
    """An iterator over lines of text (the size's worth), started again before each call."""
    context.files = True
    return RewoundIterator([f"{random_text(rng, 30)}\n" for _ in range(max(context.n, 1))])


class QueryCursor(sqlite3.Cursor):
    """A cursor that remembers the query it ran, so it can run it again before each call: a
    call that fetches its rows uses them up."""

    query = ""

    def rerun(self) -> None:
        self.execute(self.query)


CURSOR_COLUMNS = "name TEXT, amount INTEGER, price REAL"


def query_cursor(context: BuildContext, name: str, rng: random.Random) -> QueryCursor:
    """A DB-API cursor that has run a query: rows of an in-memory SQLite table, selected, so
    ``description`` names its columns and ``fetchall()`` returns the rows (as many as the
    size). It is run again before each call (:func:`.consume.rewind`)."""
    context.sized = True
    connection = sqlite3.connect(":memory:")
    connection.execute(f"CREATE TABLE items ({CURSOR_COLUMNS})")
    connection.executemany(
        "INSERT INTO items VALUES (?, ?, ?)",
        [(f"item{i}", rng.randrange(100), round(rng.random() * 100, 2)) for i in range(context.n)],
    )
    cursor = connection.cursor(QueryCursor)
    cursor.query = "SELECT name, amount, price FROM items"
    cursor.rerun()
    context.files = True  # rewound (the query run again) before each call
    return cursor


def traceback_value(
    context: BuildContext, name: str, rng: random.Random
) -> types.TracebackType | None:
    try:
        raise ValueError("synthesised")
    except ValueError as error:
        return error.__traceback__


def quiet_logger(context: BuildContext, name: str, rng: random.Random) -> logging.Logger:
    """A logger of its own (named after the parameter) that neither prints nor passes its
    records to the root logger: what a caller hands a library that logs."""
    logger = logging.getLogger(f"apiprof.synthesised.{name}")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


MAX_MODULES = 8
"""Modules of the package offered, in turn, to a parameter that takes a module."""


def package_module(context: BuildContext, name: str, rng: random.Random) -> types.ModuleType:
    """One of the package's own modules, submodules first (sorted, so every worker picks the
    same): what takes a module — a lexer or parser generator reading the rules a module
    defines, a plugin loader — is most often written for modules shaped like the package's."""
    top = context.qualname.split(".")[0]
    names = [*sorted(n for n in import_package(top) if n != top), top]
    return importlib.import_module(context.pick(names[:MAX_MODULES]))
