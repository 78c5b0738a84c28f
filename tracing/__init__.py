"""Sampled traces with fast time-window reports, and the immediate delay tracker.

The pipeline, one module per stage: :mod:`.sampler` samples all threads' stacks (interned by
:mod:`.stacks`), :mod:`.record` drives it into a :mod:`.recording` file, :mod:`.timetree`
indexes the samples by time, :mod:`.window` reports on any window and :mod:`.export` writes
speedscope and Chrome trace-event files. :mod:`.delays` watches marked events and records a
trace when one is slow; :mod:`.upload` sends the files to a collection service.
"""

from apiprof.tracing.delays import DelayTracker, TraceFiles
from apiprof.tracing.export import export
from apiprof.tracing.record import Recorder, RecordingSummary, trace_command
from apiprof.tracing.recording import Recording
from apiprof.tracing.settings import TrackerSettings, load_settings, read_settings
from apiprof.tracing.timetree import TreeShape
from apiprof.tracing.window import WindowReport, window_report

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
