"""Delay-tracker settings: which events matter, how slow is too slow, what to record.

Read from a TOML file (or a mapping with the same keys, e.g. from an editor's JSON options;
camelCase keys are accepted too)::

    output_dir = "~/.cache/apiprof/delays"   # relative paths: beside the settings file
    interval_ms = 5.0                        # sampling interval (ring and trace alike)
    ring_seconds = 2.0                       # pre-trigger ring of stack samples
    ring_while_idle = false                  # sample into the ring only while an event runs
    min_minutes_between_traces = 10.0        # rate limit, across restarts
    retrace_after_days = 0.0                 # 0: only an event's first exceedance, ever
    hang_seconds = 10.0                      # faulthandler fallback for GIL-holding hangs; 0 off

    [events.completion]
    threshold_ms = 100
    trace_seconds = 3

    [upload]                                 # optional; off while url is empty
    url = "https://collector.example/api"
    token_env = "APIPROF_UPLOAD_TOKEN"       # or token = "..."
    retries = 5
    backoff_seconds = 1.0
    timeout_seconds = 30.0

A mistake names its key and what is expected (:class:`~apiprof.errors.SettingsError`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiprof.errors import SettingsError


def default_output_dir() -> Path:
    """``$APIPROF_DELAYS_DIR``, else ``$XDG_CACHE_HOME/apiprof/delays`` (``~/.cache/...``)."""
    if os.environ.get("APIPROF_DELAYS_DIR"):
        return Path(os.environ["APIPROF_DELAYS_DIR"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "apiprof" / "delays"


@dataclass(frozen=True)
class EventSettings:
    """One event of interest: slower than ``threshold_ms`` triggers a ``trace_seconds`` trace."""

    name: str
    threshold_ms: float
    trace_seconds: float = 3.0

    @property
    def threshold_ns(self) -> int:
        return round(self.threshold_ms * 1e6)


@dataclass(frozen=True)
class UploadSettings:
    """Where finished traces are sent (nowhere while ``url`` is empty)."""

    url: str = ""
    token: str = ""
    token_env: str = ""
    retries: int = 5
    backoff_seconds: float = 1.0
    timeout_seconds: float = 30.0

    @property
    def enabled(self) -> bool:
        return bool(self.url)

    def bearer_token(self) -> str | None:
        """The token from ``token_env`` (preferred, keeps secrets out of files) or ``token``."""
        if self.token_env and os.environ.get(self.token_env):
            return os.environ[self.token_env]
        return self.token or None


@dataclass(frozen=True)
class TrackerSettings:
    events: Mapping[str, EventSettings] = field(default_factory=dict)
    output_dir: Path = field(default_factory=default_output_dir)
    # one interval for the ring and the trace, so that a sample stands for the same time
    # everywhere in a trace and window reports spanning the trigger stay proportional
    interval_ms: float = 5.0
    ring_seconds: float = 2.0
    ring_while_idle: bool = False
    min_minutes_between_traces: float = 10.0
    retrace_after_days: float = 0.0
    hang_seconds: float = 10.0
    upload: UploadSettings = field(default_factory=UploadSettings)


_TOP_LEVEL = {f.name for f in dataclasses.fields(TrackerSettings)}
_UPLOAD = {f.name for f in dataclasses.fields(UploadSettings)}
_EVENT = {"threshold_ms", "trace_seconds"}
_POSITIVE = {
    "interval_ms",
    "threshold_ms",
    "trace_seconds",
    "timeout_seconds",
}


def snake_case(key: str) -> str:
    """``traceSeconds`` → ``trace_seconds`` (editor options arrive in camelCase)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _normalize(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where}: expected a table of settings, got {type(raw).__name__}")
    return {snake_case(str(key)): value for key, value in raw.items()}


def merge_settings(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``, table by table (keys normalized to snake_case)."""
    merged = _normalize(base, "settings")
    for key, value in _normalize(override, "settings").items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_settings(merged[key], value)
        else:
            merged[key] = value
    return merged


def _check_keys(table: dict[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise SettingsError(
            f"{where}: unknown setting{'s' * (len(unknown) > 1)} {', '.join(unknown)}"
            f" (known: {', '.join(sorted(known))})"
        )


def _number(table: dict[str, Any], key: str, default: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(f"{where}{key}: expected a number, got {value!r}")
    if value < 0 or (key in _POSITIVE and value == 0):
        wanted = "a positive number" if key in _POSITIVE else "zero or more"
        raise SettingsError(f"{where}{key}: expected {wanted}, got {value!r}")
    return float(value)


def _string(table: dict[str, Any], key: str, default: str, where: str) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise SettingsError(f"{where}{key}: expected a string, got {value!r}")
    return value


def read_settings(data: Mapping[str, Any], *, base_dir: Path | None = None) -> TrackerSettings:
    """Validate a settings mapping; relative ``output_dir`` resolves against ``base_dir``."""
    table = _normalize(data, "settings")
    _check_keys(table, _TOP_LEVEL, "settings")
    defaults = TrackerSettings()
    events = {}
    for name, raw in _normalize(table.get("events", {}), "events").items():
        where = f"events.{name}."
        event = _normalize(raw, where.rstrip("."))
        _check_keys(event, _EVENT, where.rstrip("."))
        if "threshold_ms" not in event:
            raise SettingsError(f"{where}threshold_ms: missing (how slow is too slow, in ms)")
        events[name] = EventSettings(
            name,
            _number(event, "threshold_ms", 0, where),
            _number(event, "trace_seconds", EventSettings.trace_seconds, where),
        )
    upload_table = _normalize(table.get("upload", {}), "upload")
    _check_keys(upload_table, _UPLOAD, "upload")
    retries = upload_table.get("retries", UploadSettings.retries)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise SettingsError(f"upload.retries: expected a whole number ≥ 0, got {retries!r}")
    upload = UploadSettings(
        url=_string(upload_table, "url", "", "upload."),
        token=_string(upload_table, "token", "", "upload."),
        token_env=_string(upload_table, "token_env", "", "upload."),
        retries=retries,
        backoff_seconds=_number(
            upload_table, "backoff_seconds", UploadSettings.backoff_seconds, "upload."
        ),
        timeout_seconds=_number(
            upload_table, "timeout_seconds", UploadSettings.timeout_seconds, "upload."
        ),
    )
    if upload.url and not re.match(r"^https?://", upload.url):
        raise SettingsError(f"upload.url: expected an http:// or https:// URL, got {upload.url!r}")
    output = table.get("output_dir", "")
    if not isinstance(output, str | Path):
        raise SettingsError(f"output_dir: expected a path, got {output!r}")
    output_dir = Path(output).expanduser() if output else defaults.output_dir
    if base_dir is not None and not output_dir.is_absolute():
        output_dir = base_dir / output_dir
    ring_while_idle = table.get("ring_while_idle", defaults.ring_while_idle)
    if not isinstance(ring_while_idle, bool):
        raise SettingsError(f"ring_while_idle: expected true or false, got {ring_while_idle!r}")
    return TrackerSettings(
        events=events,
        output_dir=output_dir,
        interval_ms=_number(table, "interval_ms", defaults.interval_ms, ""),
        ring_seconds=_number(table, "ring_seconds", defaults.ring_seconds, ""),
        ring_while_idle=ring_while_idle,
        min_minutes_between_traces=_number(
            table, "min_minutes_between_traces", defaults.min_minutes_between_traces, ""
        ),
        retrace_after_days=_number(table, "retrace_after_days", defaults.retrace_after_days, ""),
        hang_seconds=_number(table, "hang_seconds", defaults.hang_seconds, ""),
        upload=upload,
    )


def read_toml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except FileNotFoundError:
        raise SettingsError(f"{path}: no such settings file") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc})") from None


def load_settings(path: str | Path) -> TrackerSettings:
    """Settings from a TOML file; a relative ``output_dir`` lives beside the file."""
    path = Path(path)
    try:
        return read_settings(read_toml(path), base_dir=path.parent.resolve())
    except SettingsError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise SettingsError(f"{path}: {exc}") from None
