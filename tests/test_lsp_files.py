"""Database files under an open editor: odd paths, scans that finish while it reads, files
replaced by ``mv``. A real server over a real client, and real SQLite files beside it."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
import pytest_lsp
from lsp_support import ENV, SERVER, build_db, hover, open_doc, typical
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from apiprof.db.schema import open_db, readonly_uri
from apiprof.db.store import begin_scan, finish_scan, store_batch
from apiprof.model.histogram import Histogram
from apiprof.model.records import Calibration, Measurement, Metric, ScanBatch

on_server_loop = pytest.mark.asyncio(loop_scope="module")

ODD = "C#proj?x=1 %41"  # '#' starts a fragment and '?' a query in a URI; %41 is not 'A'


def test_readonly_opens_use_a_proper_file_uri(tmp_path: Path):
    folder = tmp_path / ODD
    folder.mkdir()
    build_db(folder / "apiprof.db")
    before = sorted(p.name for p in tmp_path.iterdir())
    db = open_db(folder / "apiprof.db", readonly=True)
    assert db.execute("SELECT COUNT(*) FROM entry_points").fetchone()[0] == 6
    db.conn.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no stray file "C"
    assert readonly_uri(folder / "apiprof.db").endswith(
        "/C%23proj%3Fx%3D1%20%2541/apiprof.db?mode=ro"
    )


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("files") / ODD
    root.mkdir()
    build_db(root / "apiprof.db")
    build_db(root / "wal.db")
    lsp_client.root = root
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            initialization_options={"databases": ["apiprof.db", "wal.db"]},
        )
    )
    yield
    await lsp_client.shutdown_session()


SOURCE = "import textwrap\ntextwrap.indent('x', ' ')\nimport json\njson.dumps(1)\n"


def add_indent(path: Path, times: list[float]) -> None:
    """What a scan does to the file: begin, store, finish."""
    db = open_db(path)
    scan = begin_scan(db, "textwrap", "1", ENV, Calibration(), {})
    store_batch(
        db,
        ScanBatch(
            measurements=[Measurement("textwrap.indent", "m", Metric.CPU, Histogram.of(times))]
        ),
        environment_id=ENV.id,
        package="textwrap",
        scan_id=scan,
    )
    finish_scan(db, scan)
    db.conn.close()


@on_server_loop
async def test_a_workspace_whose_path_has_uri_characters(client: LanguageClient):
    uri = open_doc(client, "odd.py", SOURCE)
    assert (await hover(client, uri, 3, 6) or "").startswith("json.dumps costs ")
    assert not [m for m in client.log_messages if "no such database" in m.message]


@on_server_loop
async def test_a_finished_scan_leaves_no_wal_for_a_replaced_file_to_inherit(client: LanguageClient):
    wal = client.root / "wal.db"
    uri = open_doc(client, "wal.py", SOURCE)
    assert await hover(client, uri, 1, 11) is None  # the server has both databases open
    add_indent(wal, [520.0] * 520)
    # the server holds no read transaction while idle: the scan's checkpoint emptied the WAL
    assert not Path(f"{wal}-wal").exists() or os.path.getsize(f"{wal}-wal") == 0
    assert "520 samples" in (await hover(client, uri, 1, 11) or "")
    # `cp other.db wal.db.new && mv wal.db.new wal.db` while the editor keeps its connection
    other = client.root.parent / "other.db"
    build_db(other)
    add_indent(other, [4000.0] * 7)
    shutil.copy(other, client.root / "wal.db.new")
    os.replace(client.root / "wal.db.new", wal)
    text = await hover(client, uri, 1, 11) or ""
    assert f"{typical([4000.0] * 7)} typical" in text and "7 samples" in text
    # and a later read-write open finds the new file as it was copied
    db = open_db(wal)
    assert (
        db.execute("SELECT SUM(count) FROM buckets WHERE qualname = 'textwrap.indent'").fetchone()[
            0
        ]
        == 7
    )
    db.conn.close()


@on_server_loop
async def test_an_idle_server_never_blocks_a_checkpoint(client: LanguageClient):
    uri = open_doc(client, "idle.py", SOURCE)
    assert await hover(client, uri, 3, 6)
    writer = sqlite3.connect(client.root / "apiprof.db")
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("CREATE TABLE IF NOT EXISTS scratch (x)")
    writer.commit()
    busy, _, _ = writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    writer.close()
    assert busy == 0
