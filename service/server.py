"""``apiprof serve``: open the store, import lab databases once, serve HTTP with uvicorn.

Starlette on uvicorn because the service is a handful of routes around a database: Starlette
gives routing, streamed request and response bodies (so size limits apply while reading and the
aggregate streams without being built in memory) and no validation layer to fight — batches are
checked by our own strict parser, which FastAPI's model layer would only duplicate.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from apiprof.errors import UsageError
from apiprof.service.contribution import from_database
from apiprof.service.store import Store, open_store


@dataclass(frozen=True)
class ServeOptions:
    db: str
    host: str = "127.0.0.1"
    port: int = 8750
    upload_tokens: tuple[str, ...] = ()
    reader_tokens: tuple[str, ...] = ()
    max_batch_bytes: int = 1 << 20
    max_trace_bytes: int = 64 << 20
    max_scan_bytes: int = 64 << 20
    data_dir: Path | None = None
    imports: tuple[Path, ...] = field(default_factory=tuple)
    pool_size: int = 10


def read_tokens(path: Path) -> tuple[str, ...]:
    """Tokens from a file, one per line (blank lines and ``#`` comments ignored)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read the token file {path}: {exc.strerror}") from None
    return tuple(t for line in lines if (t := line.strip()) and not t.startswith("#"))


def import_databases(store: Store, paths: Sequence[Path]) -> list[tuple[Path, bool]]:
    """Add lab databases to the store, each at most once (by content); (path, added) pairs."""
    return [(path, store.add(from_database(path))) for path in paths]


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port"
        ) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve(options: ServeOptions, announce: Callable[[str], None] = print) -> None:
    """Run the service until SIGINT/SIGTERM; ``announce`` gets one line once it listens."""
    import uvicorn

    from apiprof.service.app import Settings, create_app

    if not options.upload_tokens:
        raise UsageError("uploads need at least one token: pass --token TOKEN or --token-file FILE")
    store = open_store(options.db, options.data_dir, pool_size=options.pool_size)
    try:
        for path, added in import_databases(store, options.imports):
            announce(f"imported {path}" if added else f"{path} was imported before; skipped")
        app = create_app(
            store,
            Settings(
                options.upload_tokens,
                options.reader_tokens,
                options.max_batch_bytes,
                options.max_trace_bytes,
                options.max_scan_bytes,
            ),
        )
        sock = bind(options.host, options.port)
        host, port = sock.getsockname()[:2]
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        )
        shown = f"[{host}]" if ":" in host else host
        announce(f"apiprof serve: listening on http://{shown}:{port} ({store.backend})")
        sys.stdout.flush()
        server.run(sockets=[sock])
    finally:
        store.close()
