"""Where the service keeps the aggregate: one interface, an embedded SQLite file or a shared
PostgreSQL server behind it (:func:`open_store` picks by the ``--db`` value).

Both give the same guarantees: a contribution is added in one transaction together with its
batch id, so it counts exactly once however often it is sent and whatever crashes when; reads
of the aggregate see one consistent snapshot; trace files are stored once per (trace, file).
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from apiprof.errors import ApiprofError, UsageError
from apiprof.service.contribution import Contribution

TRACE_FILES = ("trace.sqlite", "summary.json")
CHUNK_ROWS = 1000


class StorageUnavailable(ApiprofError):
    """The store cannot be reached right now (the client should retry later)."""


class TraceConflict(ApiprofError):
    """A trace file with this name was stored before with different content."""


@dataclass(frozen=True)
class TraceInfo:
    trace_id: str
    filename: str
    size: int
    sha256: str
    received_at: str


class Store(abc.ABC):
    backend = ""

    @abc.abstractmethod
    def add(self, contribution: Contribution) -> bool:
        """Add a contribution and its batch id in one transaction; False (and nothing added)
        when that batch id was added before."""

    @abc.abstractmethod
    def aggregate(self, part: int | None, slices: int) -> Iterator[tuple[str, list[tuple]]]:
        """``(table, rows)`` chunks of the aggregate in ``AGGREGATE_TABLES`` order — every row,
        or for ``part`` only the sliced tables' rows of that slice — from one snapshot."""

    @abc.abstractmethod
    def put_trace(self, trace_id: str, filename: str, data: bytes) -> bool:
        """Store a trace file; True if new, False if the same content was there already.
        Raises :class:`TraceConflict` if different content was."""

    @abc.abstractmethod
    def traces(self) -> list[TraceInfo]: ...

    @abc.abstractmethod
    def trace(self, trace_id: str, filename: str) -> bytes | None: ...

    @abc.abstractmethod
    def close(self) -> None: ...


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def open_store(target: str, data_dir: Path | None = None, *, pool_size: int = 10) -> Store:
    """``postgresql://…`` → :class:`PostgresStore`; anything else is a SQLite file path."""
    if target.startswith(("postgresql://", "postgres://")):
        from apiprof.service.postgres_store import PostgresStore

        return PostgresStore(target, pool_size=pool_size)
    from apiprof.service.sqlite_store import SqliteStore

    path = Path(target)
    if path.is_dir():
        raise UsageError(f"--db {target} is a directory; name a database file in it")
    return SqliteStore(path, data_dir or path.resolve().parent / f"{path.name}.traces")
