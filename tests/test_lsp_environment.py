"""The language server resolves imports in the project's environment, not its own.

A workspace with its own ``.venv`` holding a package the server's interpreter cannot import:
completion and hover must still find it (jedi runs in that environment), and a bad
``environmentPath`` is logged once while the server falls back to its own environment.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsp_support import SERVER, complete, hint_of, hover, open_doc, wait_for_log
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms
from apiprof.lsp_server.resolve import find_environment
from apiprof.model.histogram import Histogram
from apiprof.model.records import Metric

on_server_loop = pytest.mark.asyncio(loop_scope="module")

CRUNCH_NS = [4200, 4300, 4100] * 10
PACKAGE = '''\
"""Only installed in the project's virtualenv."""


def crunch(n: int) -> int:
    """Adds up to n."""
    return sum(range(n))
'''


def make_project(root: Path) -> None:
    """``root/.venv`` (no pip: quick) with ``vendored_costs`` installed, and costs for it."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")],
        check=True,
        timeout=120,
    )
    [site] = (root / ".venv").glob("lib/python*/site-packages")
    (site / "vendored_costs").mkdir()
    (site / "vendored_costs" / "__init__.py").write_text(PACKAGE)
    db = open_db(root / "apiprof.db")
    add_histograms(db, "vendored_costs.crunch", {Metric.WALL: Histogram.of(CRUNCH_NS)})
    db.conn.close()


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[SERVER]))
async def project(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    make_project(root)
    lsp_client.root = root
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            initialization_options={"mode": "standalone"},  # jedi's own answers show too
        )
    )
    yield
    await lsp_client.shutdown_session()


SOURCE = "import vendored_costs\nvendored_costs.crunch(10)\nvendored_costs.\n"


def test_the_servers_own_interpreter_cannot_import_the_package():
    assert (
        subprocess.run(
            [sys.executable, "-c", "import vendored_costs"], check=False, capture_output=True
        ).returncode
        != 0
    )


@on_server_loop
async def test_workspace_virtualenv_is_found_and_logged(project: LanguageClient):
    assert await wait_for_log(project, f"apiprof: resolving imports in {project.root / '.venv'}")


@on_server_loop
async def test_completion_and_hover_see_the_projects_packages(project: LanguageClient):
    uri = open_doc(project, "uses_venv.py", SOURCE)
    items = {i.label: i for i in await complete(project, uri, 2, 15)}
    assert items["crunch"].detail == hint_of(CRUNCH_NS)
    text = await hover(project, uri, 1, 17)
    assert text is not None and text.startswith("vendored_costs.crunch\n\n")
    assert "vendored_costs.crunch costs ≈4.2 µs typical" in text


@on_server_loop
async def test_a_bad_environment_path_is_logged_and_the_servers_own_is_used(
    project: LanguageClient,
):
    project.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"apiprof": {"environmentPath": "no/such/env"}})
    )
    found = await wait_for_log(project, "is not a usable Python environment")
    assert (
        len(found) == 1
        and str(project.root / "no/such/env") in found[0]
        and "set environmentPath" in found[0]
    )
    uri = open_doc(project, "fallback.py", "import json\njson.\n")
    assert "dumps" in {i.label for i in await complete(project, uri, 1, 5)}
    venv_uri = open_doc(project, "no_venv.py", SOURCE)
    assert "crunch" not in {
        i.label for i in await complete(project, venv_uri, 2, 15)
    }  # the venv is no longer used
    project.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"apiprof": {"environmentPath": ".venv"}})
    )
    assert await wait_for_log(project, f"apiprof: resolving imports in {project.root / '.venv'}")
    assert "crunch" in {i.label for i in await complete(project, venv_uri, 2, 15)}
    assert project.messages == []  # no popups


def test_find_environment_prefers_the_setting_then_a_workspace_virtualenv(tmp_path: Path):
    assert find_environment(tmp_path) is None
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert find_environment(tmp_path) == tmp_path / "venv"
    assert find_environment(tmp_path, "/opt/py/bin/python3") == Path("/opt/py/bin/python3")
    assert find_environment(tmp_path, "envs/dev") == tmp_path / "envs/dev"
