"""Server settings: nested dataclasses with defaults, read from camelCase client options.

Options arrive as ``initializationOptions`` and again through ``workspace/didChangeConfiguration``.
Editors send whatever their users typed, so reading is forgiving: every value that is missing,
of the wrong type, outside its range or not one of its choices keeps its default and yields one
problem message; the server logs the problems and keeps running with the rest.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from apiprof.db.schema import DEFAULT_DB

SECTION = "apiprof"
"""Configuration section name (``{"apiprof": {...}}`` in editor settings)."""

COMPANION = "companion"
STANDALONE = "standalone"


def _choices(*values: str) -> dict[str, Any]:
    return {"choices": values}


def _range(low: float, high: float) -> dict[str, Any]:
    return {"range": (low, high)}


def _check(check: Callable[[Any], str]) -> dict[str, Any]:
    """A custom check: returns the problem with a value, or ""."""
    return {"check": check}


def _check_docs_url(url: str) -> str:
    if url and (
        urlparse(url).scheme not in ("http", "https", "file") or any(c in url for c in ' <>"')
    ):
        return "expected an http(s) or file URL without spaces"
    return ""


def _check_docs_page(page: str) -> str:
    try:
        page.format(qualname="x")
    except (KeyError, IndexError, ValueError):
        return "expected a path whose only placeholder is {qualname}"
    return "" if "{qualname}" in page else "expected a path containing {qualname}"


@dataclass(frozen=True)
class CompletionOptions:
    cost_hints: bool = True  # "≈3.2 µs · 1.1 KiB" in labelDetails.description (or detail)
    # whose sortText the items copy, so a merged list keeps each twin beside the other
    sort_like: str = field(
        default="jedi-language-server",
        metadata=_choices("jedi-language-server", "pyright", "basedpyright", "pylance"),
    )


@dataclass(frozen=True)
class HoverOptions:
    enabled: bool = True
    # the histogram in full profiles (completion documentation, standalone hovers)
    histogram: str = field(default="bars", metadata=_choices("bars", "sparkline"))
    histogram_width: int = field(default=24, metadata=_range(4, 80))


@dataclass(frozen=True)
class InlayHintOptions:
    enabled: bool = True
    minimum_microseconds: float = field(default=0.0, metadata=_range(0, 3.6e9))


@dataclass(frozen=True)
class CodeLensOptions:
    enabled: bool = False


@dataclass(frozen=True)
class LatencyOptions:
    # requests slower than this are logged (at most once per method per minute)
    slow_request_ms: float = field(default=100.0, metadata=_range(1, 600_000))


@dataclass(frozen=True)
class DelayOptions:
    # the delay tracker (lsp_server/delays.py): a trace of the first slow completion/hover/resolve
    enabled: bool = True
    settings_file: str = ""  # a TOML file replacing the built-in lsp_server/delays.toml
    output_dir: str = ""  # where traces go; "" → the settings file's (~/.cache/apiprof/delays)
    # thresholds; 0 → the settings file's
    completion_ms: float = field(default=0.0, metadata=_range(0, 600_000))
    hover_ms: float = field(default=0.0, metadata=_range(0, 600_000))
    resolve_ms: float = field(default=0.0, metadata=_range(0, 600_000))
    # trace length for all three; 0 → the settings file's
    trace_seconds: float = field(default=0.0, metadata=_range(0, 600))
    # for trying the tracker out: every completion waits this long
    test_delay_ms: float = field(default=0.0, metadata=_range(0, 60_000))


@dataclass(frozen=True)
class ServerConfig:
    mode: str = field(default=COMPANION, metadata=_choices(COMPANION, STANDALONE))
    databases: tuple[str, ...] = ()  # empty → <workspace root>/apiprof.db
    docs_url: str = field(default="", metadata=_check(_check_docs_url))
    docs_page: str = field(default="apiprof/{qualname}.html", metadata=_check(_check_docs_page))
    environment_path: str = ""  # interpreter or virtualenv that resolves imports; "" → the workspace's .venv/venv, else ours
    completion: CompletionOptions = field(default_factory=CompletionOptions)
    hover: HoverOptions = field(default_factory=HoverOptions)
    inlay_hints: InlayHintOptions = field(default_factory=InlayHintOptions)
    code_lens: CodeLensOptions = field(default_factory=CodeLensOptions)
    latency: LatencyOptions = field(default_factory=LatencyOptions)
    delays: DelayOptions = field(default_factory=DelayOptions)

    @property
    def companion(self) -> bool:
        return self.mode == COMPANION

    def database_paths(self, root: str | Path | None) -> list[Path]:
        """Absolute database paths: relative entries and the default live in the workspace root."""
        base = Path(root) if root else Path.cwd()
        names = self.databases or (DEFAULT_DB,)
        return [(base / Path(name).expanduser()).resolve() for name in names]

    def docs_link(self, qualname: str) -> str | None:
        """The drill-down page for ``qualname``, or None when no docs URL is configured."""
        if not self.docs_url:
            return None
        page = self.docs_page.lstrip("/").format(qualname=quote(qualname, safe=""))
        return self.docs_url.rstrip("/") + "/" + page


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
                problem = _out_of_bounds(f, converted)
                if problem:
                    problems.append(f"{where}{camel}: {problem}, got {value!r}; using the default")
                else:
                    values[f.name] = converted
    return cls(**values)


_INVALID = object()


def _out_of_bounds(f: dataclasses.Field, value: Any) -> str:
    if "choices" in f.metadata and value not in f.metadata["choices"]:
        return "expected one of " + ", ".join(repr(c) for c in f.metadata["choices"])
    if "range" in f.metadata:
        low, high = f.metadata["range"]
        if not low <= value <= high:
            return f"expected a number from {low:g} to {high:g}"
    if "check" in f.metadata:
        return f.metadata["check"](value)
    return ""


def _read_value(hint: Any, value: Any, where: str, problems: list[str]) -> Any:
    if dataclasses.is_dataclass(hint):
        return _read_dataclass(hint, value, where + ".", problems)  # type: ignore[arg-type]
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
        if hint is float and value != value:  # NaN fits no range
            problems.append(f"{where}: expected a number, got NaN; using the default")
            return _INVALID
        return value
    problems.append(f"{where}: expected {hint.__name__}, got {value!r}; using the default")
    return _INVALID
