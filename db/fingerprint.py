"""Whether what readers show has changed: a hash of the rows behind it, not of the file."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from apiprof.db.schema import Readable


_CONTENT_TABLES = (
    "entry_points",
    "aliases",
    "coverage",
    "scenarios",
    "buckets",
    "growth",
    "call_edges",
    "environments",
    "scans",
    "failures",
    "api_figures",  # made from the buckets, but made again when their computation changes
    "slice_figures",
)


def content_fingerprint(db: Readable) -> str:
    """A hash of everything readers show (not of the file: a ``touch`` or a checkpoint of the
    write-ahead log leaves it alone, any changed row changes it)."""
    digest = hashlib.sha256()
    present = set(db.table_names())
    for table in _CONTENT_TABLES:
        if table not in present:
            continue
        columns = len(db.execute(f"SELECT * FROM [{table}] LIMIT 0").description)
        order = ", ".join(str(i) for i in range(1, columns + 1))
        rows = db.execute(f"SELECT * FROM [{table}] ORDER BY {order}").fetchall()
        digest.update(f"\x00{table}\x00{rows!r}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def file_fingerprint(path: Path) -> str:
    """A hash of the database's bytes on disk (the file and its write-ahead log), about a fifth
    of :func:`content_fingerprint`'s cost. A ``touch`` leaves it alone; a checkpoint changes it
    though the content stays, so a changed file fingerprint means "compare the contents", not
    "changed" (the two kinds never compare equal)."""
    digest = hashlib.sha1()
    for part in (path, path.with_name(path.name + "-wal")):
        try:
            with open(part, "rb") as data:
                digest.update(hashlib.file_digest(data, "sha1").digest())
        except FileNotFoundError:
            digest.update(b"absent")
    return "file:" + digest.hexdigest()
