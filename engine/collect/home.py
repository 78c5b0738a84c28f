"""The apiprof home: ``APIPROF_HOME``, else the platform's user data directory.

Kept to ``os`` and ``sys`` so the collector can find its state before importing anything
heavier. The ``apiprof-collect.pth`` start-up hook computes the same default itself (it runs
before any apiprof module may be imported); a test keeps the two in step.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

HOME_ENV = "APIPROF_HOME"


def default_home(environ: Mapping[str, str] = os.environ) -> str:
    """The platform's per-user data directory for apiprof (XDG on Linux and BSDs)."""
    user = environ.get("USERPROFILE" if os.name == "nt" else "HOME") or os.path.expanduser("~")
    if os.name == "nt":
        base = environ.get("LOCALAPPDATA") or os.path.join(user, "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(user, "Library", "Application Support")
    else:
        base = environ.get("XDG_DATA_HOME") or os.path.join(user, ".local", "share")
    return os.path.join(base, "apiprof")


def home_dir(environ: Mapping[str, str] = os.environ) -> str:
    return environ.get(HOME_ENV) or default_home(environ)
