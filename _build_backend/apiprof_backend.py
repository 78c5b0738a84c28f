"""Build backend: setuptools, plus the collection start-up hook in every wheel.

``apiprof-collect.pth`` must land at the top of ``site-packages`` for regular *and* editable
installs. setuptools has no option that does both (``data-files`` are skipped by editable
wheels), so this thin PEP 517 backend lets setuptools build the wheel and then adds the hook
file to it, with its line in the wheel's ``RECORD``. Installers then treat it like any other
file of the package (``pip uninstall`` removes it).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (every hook we do not override)

HOOK = Path(__file__).resolve().parent.parent / "engine" / "collect" / "apiprof-collect.pth"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def add_hook(wheel_path: str | os.PathLike[str]) -> None:
    """Rewrite the wheel with ``apiprof-collect.pth`` at its root and in its RECORD."""
    hook = HOOK.read_bytes()
    wheel_path = Path(wheel_path)
    fd, tmp_name = tempfile.mkstemp(suffix=".whl", dir=wheel_path.parent)
    os.close(fd)
    with (
        zipfile.ZipFile(wheel_path) as src,
        zipfile.ZipFile(tmp_name, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for item in src.infolist():
            data = src.read(item)
            if item.filename == HOOK.name:
                continue
            if item.filename.endswith(".dist-info/RECORD"):
                lines = [
                    line + "\n"
                    for line in data.decode().splitlines()
                    if line and not line.startswith(HOOK.name + ",")
                ]
                lines.append(_record_line(HOOK.name, hook))
                data = "".join(lines).encode()
            out.writestr(item, data)
        out.writestr(HOOK.name, hook)
    shutil.move(tmp_name, wheel_path)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    add_hook(Path(wheel_directory) / name)
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    add_hook(Path(wheel_directory) / name)
    return name
