"""Types of the superinstruction-restoring C extension (``_quicken.c``)."""

from types import CodeType

ACTIVE: int

def restore(code: CodeType, tables: bytes, /) -> int: ...
