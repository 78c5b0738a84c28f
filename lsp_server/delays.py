"""The immediate delay tracker inside apiprof-lsp: a trace of the first slow request.

Completion, completion resolve and hover are the events of interest, with default thresholds
in ``delays.toml`` beside this module; the ``delays`` initialization options override them
(see :class:`~apiprof.lsp_server.config.DelayOptions`). When a request passes its threshold
for the first time, the tracker records all threads for the trace length and writes a trace
and a summary; the log channel (``window/logMessage``, never a pop-up) says where they are and
which ``apiprof window`` command shows where the time went.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types

from apiprof.errors import ApiprofError
from apiprof.lsp_server.config import DelayOptions
from apiprof.tracing.delays import DelayTracker, TraceFiles
from apiprof.tracing.settings import merge_settings, read_settings, read_toml

DEFAULT_SETTINGS = Path(__file__).with_name("delays.toml")
EVENTS = ("completion", "hover", "resolve")
T = TypeVar("T")

Log = Callable[[types.MessageType, str], None]


def simulated_slow_request(seconds: float) -> None:
    """The ``delays.testDelayMs`` option's wait: a named place for traces to show."""
    time.sleep(seconds)


def tracker_settings(options: DelayOptions, root: str | None) -> dict[str, Any]:
    """The settings file's contents with the editor's overrides on top."""
    path = Path(options.settings_file).expanduser() if options.settings_file else DEFAULT_SETTINGS
    if not path.is_absolute() and root:
        path = Path(root) / path
    overrides: dict[str, Any] = {"events": {}}
    for event in EVENTS:
        threshold = getattr(options, f"{event}_ms")
        if threshold > 0:
            overrides["events"][event] = {"threshold_ms": threshold}
        if options.trace_seconds > 0:
            overrides["events"].setdefault(event, {})["trace_seconds"] = options.trace_seconds
    if options.output_dir:
        output = Path(options.output_dir).expanduser()
        overrides["output_dir"] = str(
            output if output.is_absolute() or not root else Path(root) / output
        )
    settings = merge_settings(read_toml(path), overrides)
    if not Path(str(settings.get("output_dir", "/"))).expanduser().is_absolute():
        settings["output_dir"] = str(path.parent / str(settings["output_dir"]))
    return settings


class RequestDelays:
    """Marks the server's requests as events and reports finished traces to the log channel."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.tracker: DelayTracker | None = None
        self.test_delay = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closes_at_exit = False

    def start(self, options: DelayOptions, root: str | None) -> None:
        """(Re)start the tracker with the given options; problems go to the log, not to a popup."""
        self.close()
        self.test_delay = options.test_delay_ms / 1000
        if not options.enabled:
            return
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (the session used on its own)
            self._loop = None
        try:
            settings = read_settings(tracker_settings(options, root))
            self.tracker = DelayTracker(settings, on_trace=self._report).start()
        except (ApiprofError, OSError) as exc:
            self.log(types.MessageType.Warning, f"apiprof delay tracker is off: {exc}")
            return
        if not self._closes_at_exit:
            atexit.register(self.close)
            self._closes_at_exit = True
        watched = ", ".join(f"{e.name} > {e.threshold_ms:g} ms" for e in settings.events.values())
        self.log(
            types.MessageType.Info,
            f"apiprof delay tracker: tracing the first {watched}; traces go to {settings.output_dir}",
        )

    def close(self) -> None:
        if self.tracker is not None:
            self.tracker.close()
            self.tracker = None

    def _report(self, files: TraceFiles) -> None:
        """Called on the watchdog thread: hand the message to the server's event loop."""
        message = (
            f"apiprof-lsp: a {files.event} request was slow; trace {files.trace} (summary"
            f" {files.summary}). Where the time went: {files.report_command()}"
        )
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.log, types.MessageType.Info, message)
        else:
            self.log(types.MessageType.Info, message)

    def marked(self, event: str) -> Callable[[Callable[[Any], T]], Callable[[Any], T]]:
        """A request handler as a marked event (with the test delay for completions)."""

        def wrap(handler: Callable[[Any], T]) -> Callable[[Any], T]:
            @functools.wraps(handler)
            def run(params: Any) -> T:
                tracker = self.tracker
                if tracker is None:
                    return handler(params)
                mark = tracker.begin(event)
                try:
                    if self.test_delay and event == "completion":
                        simulated_slow_request(self.test_delay)
                    return handler(params)
                finally:
                    tracker.end(mark)

            return run

        return wrap
