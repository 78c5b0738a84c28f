"""The summary file written beside each delay trace: what was slow, and on what machine.

A trace tells where the time went; the summary tells a person (or the collection service) what
triggered it and how to compare it with other users' traces: the delays of interest, the OS,
Python, the versions of the packages loaded in the process, and the session id.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import apiprof


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # not POSIX
        return None


def machine_facts() -> dict[str, Any]:
    """OS, hardware and Python facts that explain why the same code is slower elsewhere."""
    return {
        "os": platform.system(),
        "os_release": platform.release(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)(),
        "apiprof": apiprof.__version__,
    }


def loaded_packages() -> dict[str, str]:
    """``{distribution: version}`` for the installed distributions imported in this process."""
    loaded = {name.partition(".")[0] for name in list(sys.modules)}
    try:
        providers = importlib.metadata.packages_distributions()
    except Exception:  # a broken distribution must not cost the summary
        return {}
    versions: dict[str, str] = {}
    for module in loaded:
        for dist in providers.get(module, ()):
            if dist in versions:
                continue
            try:
                versions[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
    return dict(sorted(versions.items(), key=lambda item: item[0].lower()))


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def write_json(path: Path, data: Mapping[str, Any]) -> Path:
    """Write JSON atomically: readers (and uploaders) never see half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path
