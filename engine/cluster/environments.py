"""A virtualenv per requirement on a Dask worker, built once and reused by later tasks.

``--requirements FILE`` scans each line's distribution at the version the line asks for. Each
requirement gets a fresh virtualenv under the worker's cache directory (``APIPROF_CLUSTER_CACHE``,
default ``~/.cache/apiprof/environments``), named by a hash of the line and the Python version,
built under a file lock so two tasks on one machine never build the same one twice. apiprof
itself is not installed into it: a ``.pth`` file adds the worker's own site-packages *after*
the virtualenv's, so the requirement's packages win and apiprof (with its dependencies) is still
importable by the scan.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

READY = "apiprof-ready"
"""File written last, when an environment is complete (a half-built one is rebuilt)."""
INSTALL_TIMEOUT = 1800.0


def cache_root() -> Path:
    configured = os.environ.get("APIPROF_CLUSTER_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "apiprof" / "environments"


def environment_for(requirement: str, cache: Path | None = None) -> str:
    """The interpreter of the (cached) virtualenv with ``requirement`` installed; builds it on
    first use. Raises ``RuntimeError`` with pip's last words when installing fails."""
    root = cache or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    key = _key(requirement)
    home = root / key
    python = home / "bin" / "python"
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (home / READY).exists():
            _build(home, requirement)
    return str(python)


def _key(requirement: str) -> str:
    return hashlib.sha256(f"{requirement}\n{platform.python_version()}".encode()).hexdigest()[:16]


def _build(home: Path, requirement: str) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(home)], check=True)
    purelib = subprocess.run(
        [
            str(home / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # after the environment's own packages, the worker's (apiprof and its dependencies)
    lines = [f"import site; site.addsitedir({d!r})" for d in host_site_dirs()]
    Path(purelib, "apiprof-host.pth").write_text("\n".join(lines) + "\n")
    report = home / "install-report.json"
    install = subprocess.run(
        [
            str(home / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--report",
            str(report),
            requirement,
        ],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    if install.returncode != 0:
        last = (install.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"installing {requirement!r} into a fresh virtualenv failed: {last}")
    requested = [
        item["metadata"]["name"]
        for item in json.loads(report.read_text()).get("install", [])
        if item.get("requested")
    ]
    # the distribution the line asked for (also when it is a path or URL); none when pip found
    # it already satisfied by the worker's own packages
    ready = {"requirement": requirement, "distribution": requested[0] if requested else ""}
    (home / READY).write_text(json.dumps(ready))


def requested_distribution(requirement: str, cache: Path | None = None) -> str:
    """The distribution name a requirement line installed (its environment must exist)."""
    root = cache or cache_root()
    ready = json.loads((root / _key(requirement) / READY).read_text())
    return str(ready["distribution"]) or _name_of(requirement)


def _name_of(requirement: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(requirement).name
    except InvalidRequirement:
        raise RuntimeError(f"cannot tell which distribution {requirement!r} names") from None


def host_site_dirs() -> list[str]:
    """This interpreter's site-packages directories (its virtualenv's, when it runs in one)."""
    found = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()]
    return list(dict.fromkeys(d for d in found if os.path.isdir(d)))
