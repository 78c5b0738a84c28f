"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` in a temporary directory,
``postgres`` on a free loopback port, trust authentication, stopped and deleted afterwards.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` system user
(Debian's package creates it) and the directory is handed to that user.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

POSTGRES_BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)


def find_binaries() -> Path | None:
    for directory in [*POSTGRES_BINARIES, *(os.environ.get("PATH", "").split(os.pathsep))]:
        if (
            directory
            and (Path(directory) / "initdb").is_file()
            and (Path(directory) / "postgres").is_file()
        ):
            return Path(directory)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def postgres_cluster(database: str = "apiprof") -> Iterator[str]:
    """Yields ``postgresql://…`` for a fresh database on a server started for the caller."""
    binaries = find_binaries()
    if binaries is None:
        raise RuntimeError("PostgreSQL server binaries (initdb, postgres) are not installed")
    as_root = os.geteuid() == 0
    user = "postgres" if as_root else None
    root = Path(tempfile.mkdtemp(prefix="apiprof-pg-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    if as_root:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    log = root / "server.log"
    subprocess.run(
        [
            binaries / "initdb",
            "-D",
            data,
            "-A",
            "trust",
            "-U",
            "apiprof",
            "--no-sync",
            "-E",
            "UTF8",
        ],
        check=True,
        capture_output=True,
        user=user,
        cwd=root,
    )
    port = _free_port()
    with open(log, "wb") as log_file:
        server = subprocess.Popen(
            [
                binaries / "postgres",
                "-D",
                data,
                "-p",
                str(port),
                "-k",
                sockets,
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=on",
                "-c",
                "max_connections=200",
                "-c",
                "shared_buffers=32MB",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            user=user,
            cwd=root,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"postgres exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                with psycopg.connect(
                    f"postgresql://apiprof@127.0.0.1:{port}/postgres",
                    autocommit=True,
                    connect_timeout=5,
                ) as conn:
                    conn.execute(f"CREATE DATABASE {database}")
                break
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not accept connections: {exc}") from exc
                time.sleep(0.2)
        yield f"postgresql://apiprof@127.0.0.1:{port}/{database}"
    finally:
        server.send_signal(signal.SIGINT)  # "fast" shutdown: ends open sessions too
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(root, ignore_errors=True)


def create_database(url: str, name: str) -> str:
    """A new, empty database on the server of ``url``; returns its URL."""
    server, _, _ = url.rpartition("/")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server for the whole test session (skipped only without the binaries)."""
    if find_binaries() is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, postgres) are not installed; "
            "`.ci/run` installs Debian's postgresql package"
        )
    with postgres_cluster() as url:
        yield url
