"""Collection settings: ``collect.json`` in the apiprof home (written by ``apiprof collect
enable``), each value overridable per process by an environment variable.

A collected program must never fail because of a bad setting, so :func:`load_config` skips
values it cannot read (and :func:`config_problems` names them for ``apiprof collect status``);
the CLI refuses bad values up front.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from apiprof.engine.collect.paths import Layout
from apiprof.errors import UsageError

COLLECT_ENV = "APIPROF_COLLECT"
"""``1`` collects this process (and its children) even if collection is not enabled; ``0`` never."""


@dataclass(frozen=True)
class CollectConfig:
    rate: float = 0.05  # fraction of candidate APIs drawn per process
    max_apis: int | None = None  # instrumented at once; None: 4, or no limit when rate is 1
    max_programs: int = 6  # programs collecting at once on this machine
    max_load: float = 0.75  # 1-minute load average per CPU above which nothing is collected
    budget: float = 0.01  # probe and collector cost allowed, as a fraction of program time
    interval: float = 60.0  # seconds between summaries of a long-running program
    samples: int = 2000  # calls measured per API before it makes room for the next drawn one
    reference: str = ""  # reference database; "" → the synced one in the apiprof home
    apis: tuple[str, ...] = ()  # explicit candidates, replacing the reference's entry points
    upload_threshold: int = 128 * 1024  # spool bytes that start an automatic upload
    server: str = ""  # service URL for automatic uploads ("" → none)
    token: str = ""  # upload token for that service

    @property
    def apis_at_once(self) -> int | None:
        """How many APIs may be instrumented at the same time (None: no limit)."""
        if self.max_apis is not None:
            return self.max_apis or None
        return None if self.rate >= 1 else 4

    def reference_path(self, layout: Layout) -> Path:
        return Path(self.reference) if self.reference else layout.reference

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["apis"] = list(self.apis)
        return data


def _fraction(text: Any) -> float:
    value = float(text)
    if not 0 <= value <= 1 or math.isnan(value):
        raise ValueError(f"expected a fraction between 0 and 1, got {text!r}")
    return value


def _count(text: Any) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"expected a whole number ≥ 0, got {text!r}")
    return value


def _positive(text: Any) -> float:
    value = float(text)
    if not value > 0 or math.isinf(value):
        raise ValueError(f"expected a positive number, got {text!r}")
    return value


def _names(text: Any) -> tuple[str, ...]:
    items = text.split(",") if isinstance(text, str) else list(text)
    names = tuple(str(item).strip() for item in items if str(item).strip())
    bad = [n for n in names if not all(part.isidentifier() for part in n.split("."))]
    if bad:
        raise ValueError(f"not dotted Python names: {', '.join(bad)}")
    return names


def _optional_count(text: Any) -> int | None:
    return None if text is None or text == "" else _count(text)


def _text(text: Any) -> str:
    return str(text)


PARSERS: dict[str, Callable[[Any], Any]] = {
    "rate": _fraction,
    "max_apis": _optional_count,
    "max_programs": _count,
    "max_load": _positive,
    "budget": _fraction,
    "interval": _positive,
    "samples": _count,
    "reference": _text,
    "apis": _names,
    "upload_threshold": _count,
    "server": _text,
    "token": _text,
}

ENVIRONMENT: dict[str, str] = {
    "rate": "APIPROF_COLLECT_RATE",
    "max_apis": "APIPROF_COLLECT_MAX_APIS",
    "max_programs": "APIPROF_COLLECT_MAX_PROGRAMS",
    "max_load": "APIPROF_COLLECT_MAX_LOAD",
    "budget": "APIPROF_COLLECT_BUDGET",
    "interval": "APIPROF_COLLECT_INTERVAL",
    "samples": "APIPROF_COLLECT_SAMPLES",
    "reference": "APIPROF_REFERENCE",
    "apis": "APIPROF_COLLECT_APIS",
    "upload_threshold": "APIPROF_UPLOAD_THRESHOLD",
    "server": "APIPROF_SERVER",
    "token": "APIPROF_TOKEN",
}
"""The environment variable that overrides each setting for one process."""


def parse_value(key: str, value: Any) -> Any:
    """One setting from text or JSON; raises :class:`UsageError` naming the setting."""
    try:
        return PARSERS[key](value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"collection setting {key}: {exc}") from None


def _read_file(layout: Layout) -> dict[str, Any]:
    try:
        data = json.loads(layout.config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _gather(layout: Layout, environ: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    values: dict[str, Any] = {}
    problems: list[str] = []
    sources = [(key, value, f"{layout.config}") for key, value in _read_file(layout).items()]
    sources += [(key, environ[name], name) for key, name in ENVIRONMENT.items() if name in environ]
    for key, value, where in sources:
        if key not in PARSERS:
            problems.append(f"{where}: unknown setting {key!r}")
            continue
        try:
            values[key] = parse_value(key, value)
        except UsageError as exc:
            problems.append(f"{where}: {exc}")
    return values, problems


def load_config(layout: Layout, environ: Mapping[str, str] = os.environ) -> CollectConfig:
    """The settings in force for a process: file, then environment; unreadable values skipped."""
    values, _ = _gather(layout, environ)
    return replace(CollectConfig(), **values)


def config_problems(layout: Layout, environ: Mapping[str, str] = os.environ) -> list[str]:
    """Settings :func:`load_config` had to skip, each with where it came from."""
    return _gather(layout, environ)[1]


def save_config(layout: Layout, changes: Mapping[str, Any]) -> CollectConfig:
    """Merge ``changes`` (already parsed) into ``collect.json``; the file is private to the user
    because it may hold an upload token."""
    current = {k: v for k, v in _read_file(layout).items() if k in PARSERS}
    current.update({k: (list(v) if isinstance(v, tuple) else v) for k, v in changes.items()})
    layout.root.mkdir(parents=True, exist_ok=True)
    tmp = layout.config.with_name(f".{layout.config.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(current, out, indent=2, sort_keys=True)
    os.replace(tmp, layout.config)
    return replace(CollectConfig(), **{k: parse_value(k, v) for k, v in current.items()})


SETTINGS = tuple(f.name for f in fields(CollectConfig))
