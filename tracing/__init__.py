"""Sampled traces with fast time-window reports, and the immediate delay tracker.

The pipeline, one module per stage: :mod:`.sampler` samples all threads' stacks (interned by
:mod:`.stacks`), :mod:`.record` drives it into a :mod:`.recording` file, :mod:`.timetree`
indexes the samples by time, :mod:`.window` reports on any window and :mod:`.export` writes
speedscope and Chrome trace-event files. :mod:`.delays` watches marked events and records a
trace when one is slow; :mod:`.upload` sends the files to a collection service.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Imported on first use: the launcher imports this package inside every traced program, which
# should not pay for (or see) the delay tracker's and the uploader's imports.
_EXPORTS = {
    "DelayTracker": "delays",
    "TraceFiles": "delays",
    "export": "export",
    "Recorder": "record",
    "RecordingSummary": "record",
    "trace_command": "record",
    "Recording": "recording",
    "TrackerSettings": "settings",
    "load_settings": "settings",
    "read_settings": "settings",
    "TreeShape": "timetree",
    "WindowReport": "window",
    "window_report": "window",
}
__all__ = [
    "DelayTracker",
    "Recorder",
    "Recording",
    "RecordingSummary",
    "TraceFiles",
    "TrackerSettings",
    "TreeShape",
    "WindowReport",
    "export",
    "load_settings",
    "read_settings",
    "trace_command",
    "window_report",
]

if TYPE_CHECKING:
    from apiprof.tracing.delays import DelayTracker, TraceFiles
    from apiprof.tracing.export import export
    from apiprof.tracing.record import Recorder, RecordingSummary, trace_command
    from apiprof.tracing.recording import Recording
    from apiprof.tracing.settings import TrackerSettings, load_settings, read_settings
    from apiprof.tracing.timetree import TreeShape
    from apiprof.tracing.window import WindowReport, window_report


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"apiprof.tracing.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'apiprof.tracing' has no attribute {name!r}")
