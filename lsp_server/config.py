"""Server settings: nested dataclasses with defaults, read from camelCase client options.

Options arrive as ``initializationOptions`` and again through ``workspace/didChangeConfiguration``.
Editors send whatever their users typed, so reading is forgiving: every field that is missing or
has the wrong type keeps its default and yields one problem message; the server logs the
problems and keeps running with the rest.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiprof.db.schema import DEFAULT_DB

SECTION = "apiprof"
"""Configuration section name (``{"apiprof": {...}}`` in editor settings)."""


@dataclass(frozen=True)
class CompletionOptions:
    cost_hints: bool = True  # put "≈3.2 µs · 1.1 KiB" into labelDetails.description and detail


@dataclass(frozen=True)
class HoverOptions:
    enabled: bool = True
    histogram: str = "bars"  # "bars" (multi-line text histogram) or "sparkline" (one line)
    histogram_width: int = 24


@dataclass(frozen=True)
class LatencyOptions:
    # requests slower than this are logged (at most once per method per minute)
    slow_request_ms: float = 100.0


@dataclass(frozen=True)
class DelayOptions:
    # the delay tracker (lsp_server/delays.py): a trace of the first slow completion/hover/resolve
    enabled: bool = True
    settings_file: str = ""  # a TOML file replacing the built-in lsp_server/delays.toml
    output_dir: str = ""  # where traces go; "" → the settings file's (~/.cache/apiprof/delays)
    completion_ms: float = 0.0  # thresholds; 0 → the settings file's
    hover_ms: float = 0.0
    resolve_ms: float = 0.0
    trace_seconds: float = 0.0  # trace length for all three; 0 → the settings file's
    test_delay_ms: float = 0.0  # for trying the tracker out: every completion waits this long


@dataclass(frozen=True)
class ServerConfig:
    databases: tuple[str, ...] = ()  # empty → <workspace root>/apiprof.db
    docs_url: str = ""  # base URL of the Sphinx docs; empty → no drill-down links
    docs_page: str = "apiprof/{qualname}.html"  # drill-down page below docs_url
    environment_path: str = ""  # interpreter or virtualenv that resolves imports; "" → the workspace's .venv/venv, else ours
    completion: CompletionOptions = field(default_factory=CompletionOptions)
    hover: HoverOptions = field(default_factory=HoverOptions)
    latency: LatencyOptions = field(default_factory=LatencyOptions)
    delays: DelayOptions = field(default_factory=DelayOptions)

    def database_paths(self, root: str | Path | None) -> list[Path]:
        """Absolute database paths: relative entries and the default live in the workspace root."""
        base = Path(root) if root else Path.cwd()
        names = self.databases or (DEFAULT_DB,)
        return [(base / Path(name).expanduser()).resolve() for name in names]

    def docs_link(self, qualname: str) -> str | None:
        """The drill-down page for ``qualname``, or None when no docs URL is configured."""
        if not self.docs_url:
            return None
        return (
            self.docs_url.rstrip("/") + "/" + self.docs_page.lstrip("/").format(qualname=qualname)
        )


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def unwrap_section(settings: Any) -> Any:
    """Accept both ``{"apiprof": {...}}`` (workspace settings) and the bare options object."""
    if isinstance(settings, dict) and isinstance(settings.get(SECTION), dict):
        return settings[SECTION]
    return settings


def read_config(options: Any) -> tuple[ServerConfig, list[str]]:
    """Build a :class:`ServerConfig` from client options; returns it with the problems found."""
    problems: list[str] = []
    if options is None:
        return ServerConfig(), problems
    return _read_dataclass(ServerConfig, unwrap_section(options), "", problems), problems


def _read_dataclass(cls: type, raw: Any, where: str, problems: list[str]) -> Any:
    if not isinstance(raw, dict):
        problems.append(
            f"{where.rstrip('.') or 'options'}: expected an object, got {type(raw).__name__}; using defaults"
        )
        return cls()
    hints = typing.get_type_hints(cls)
    known = {camel_case(f.name): f for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in known and key not in {f.name for f in known.values()}:
            problems.append(
                f"{where}{key}: unknown option, ignored (known: {', '.join(sorted(known))})"
            )
    values = {}
    for camel, f in known.items():
        if camel in raw or f.name in raw:
            value = raw[camel] if camel in raw else raw[f.name]
            converted = _read_value(hints[f.name], value, f"{where}{camel}", problems)
            if converted is not _INVALID:
                values[f.name] = converted
    return cls(**values)


_INVALID = object()


def _read_value(hint: Any, value: Any, where: str, problems: list[str]) -> Any:
    if dataclasses.is_dataclass(hint):
        return _read_dataclass(hint, value, where + ".", problems)
    origin = typing.get_origin(hint)
    if origin is tuple:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        problems.append(f"{where}: expected a list of strings, got {value!r}; using the default")
        return _INVALID
    if origin in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, hint) and not (hint is int and isinstance(value, bool)):
        return value
    problems.append(f"{where}: expected {hint.__name__}, got {value!r}; using the default")
    return _INVALID
