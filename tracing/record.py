"""Record a trace: sample all threads of this process into a recording file.

:class:`Recorder` is the Python API (``with Recorder("out.trace"): work()``);
:func:`trace_command` runs ``python script.py args`` in a child interpreter that records
itself (:mod:`apiprof.tracing.launch`), which is what ``apiprof trace`` does.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apiprof
from apiprof.errors import TraceFileError, UsageError
from apiprof.tracing.recording import Recording, RecordingWriter, refuse_foreign_file
from apiprof.tracing.sampler import Sampler
from apiprof.tracing.stacks import StackTable
from apiprof.tracing.timetree import DEFAULT_SHAPE, TreeShape

DEFAULT_INTERVAL = 0.001
"""Seconds between samples: 1 ms resolves a 10 ms delay into ten samples."""


@dataclass(frozen=True)
class RecordingSummary:
    """What a finished recording holds, for the one line a person reads after tracing."""

    path: Path
    samples: int
    threads: int
    duration_ns: int
    interval_ns: int

    @classmethod
    def of(cls, path: str | Path) -> RecordingSummary:
        with Recording(path) as recording:
            return cls(
                Path(path),
                recording.sample_count,
                len(recording.threads),
                recording.duration_ns,
                recording.interval_ns,
            )

    def describe(self) -> str:
        seconds = self.duration_ns / 1e9
        return (
            f"{self.samples:,} samples of {self.threads} thread{'s' * (self.threads != 1)}"
            f" over {seconds:.3g} s → {self.path}\n"
            f"  report: apiprof window {self.path} --from 0 --to {seconds:.3g}"
        )


def process_facts() -> dict[str, Any]:
    """Facts stored with every recording: when, where, which Python and apiprof."""
    return {
        "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "pid": os.getpid(),
        "apiprof": apiprof.__version__,
    }


def validate_interval(interval: float) -> float:
    if not 0.0001 <= interval <= 10:
        raise UsageError(
            f"sampling interval must be between 0.1 ms and 10 s, got {interval * 1000:g} ms"
        )
    return interval


class Recorder:
    """Samples every thread of this process into ``path`` between start and stop.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. The time tree of
    ``tree`` (None: none) is built when the recording stops, so the first window report is
    instant.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        interval: float = DEFAULT_INTERVAL,
        tree: TreeShape | None = DEFAULT_SHAPE,
        meta: Mapping[str, Any] | None = None,
        stacks: StackTable | None = None,
    ) -> None:
        self.path = Path(path)
        self.stacks = stacks if stacks is not None else StackTable()
        self.interval = validate_interval(interval)
        self.tree = tree
        self.meta = dict(meta or {})
        self.sampler: Sampler | None = None
        self._writer: RecordingWriter | None = None
        self._origin = 0
        self._failure: Exception | None = None

    def start(self) -> Recorder:
        if self.sampler is not None:
            raise UsageError("this recorder is already recording")
        self._writer = RecordingWriter(
            self.path,
            {**process_facts(), "interval_ns": int(self.interval * 1e9), **self.meta},
        )
        self._origin = time.perf_counter_ns()
        self.sampler = Sampler(self._on_tick, interval=self.interval, stacks=self.stacks)
        self.sampler.start()
        return self

    def _on_tick(self, now: int, batch: list[tuple[int, int]]) -> None:
        writer, sampler = self._writer, self.sampler
        if writer is None or sampler is None or self._failure is not None:
            return
        writer.add_tick(now - self._origin, batch)
        if writer.due():
            try:
                writer.flush(sampler.stacks, sampler.threads.threads)
            except (OSError, sqlite3.Error) as exc:  # a full disk: stop sampling, keep the program
                self._failure = exc

    def stop(self) -> RecordingSummary:
        """Stop sampling, finish the file (and its tree); returns what it holds."""
        sampler, writer = self.sampler, self._writer
        if sampler is None or writer is None:
            raise UsageError("this recorder is not recording")
        sampler.stop()
        duration = time.perf_counter_ns() - self._origin
        self.sampler = self._writer = None
        try:
            if self._failure is not None:
                raise self._failure
            writer.finish(
                sampler.stacks, sampler.threads.threads, {"duration_ns": duration}, self.tree
            )
        except (OSError, sqlite3.Error) as exc:
            writer.close()
            raise TraceFileError(
                f"{self.path}: the trace could not be written ({exc}); the samples stored before"
                " are kept — free some space or record to another disk"
            ) from exc
        return RecordingSummary.of(self.path)

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- apiprof trace -o TRACE -- python script.py args ---------------------------------------

_PYTHON = re.compile(r"python(\d+(\.\d+)?t?)?(\.exe)?$")
_FLAGS_WITH_VALUE = {"-W", "-X", "-Q"}


def split_python_command(command: Sequence[str]) -> tuple[list[str], list[str]]:
    """``python -X dev script.py a`` → (``[python, -X, dev]``, ``[script.py, a]``).

    The target is ``script.py args``, ``-m module args`` or ``-c code args``. A bare
    ``script.py args`` runs with this interpreter.
    """
    if not command:
        raise UsageError("nothing to trace: give a command after --, e.g. -- python script.py")
    first = command[0]
    if first.endswith(".py"):
        return [sys.executable], list(command)
    if not (_PYTHON.search(Path(first).name) or Path(first) == Path(sys.executable)):
        raise UsageError(
            f"apiprof trace samples Python programs: start the command with a Python interpreter"
            f" (-- python script.py, -- python -m module), not {first!r}"
        )
    interpreter = [first]
    rest = list(command[1:])
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c", "-"):
        flag = rest.pop(0)
        interpreter.append(flag)
        if flag in _FLAGS_WITH_VALUE and rest:
            interpreter.append(rest.pop(0))
    if not rest or (rest[0] in ("-m", "-c") and len(rest) < 2):
        raise UsageError(
            "nothing to trace: give a script, -m module or -c code after the interpreter"
        )
    if rest[0] == "-":
        raise UsageError("apiprof trace cannot trace a program read from standard input")
    return interpreter, rest


def trace_command(
    command: Sequence[str],
    output: str | Path,
    *,
    interval: float = DEFAULT_INTERVAL,
    tree: TreeShape = DEFAULT_SHAPE,
) -> tuple[int, RecordingSummary | None]:
    """Run a Python command with the sampler inside it; returns its exit code and the summary.

    The summary is None when the program ended before anything could be recorded.
    """
    interpreter, target = split_python_command(command)
    validate_interval(interval)
    output = Path(output).resolve()
    _check_interpreter(interpreter[0])
    child = [
        *interpreter,
        "-m",
        "apiprof.tracing.launch",
        "--output",
        str(output),
        "--interval",
        repr(interval),
        "--leaf-size",
        str(tree.leaf_size),
        "--fanout",
        str(tree.fanout),
        "--keep-percent",
        repr(tree.keep_percent),
        "--",
        *target,
    ]
    refuse_foreign_file(output)
    output.unlink(missing_ok=True)  # a trace left by an earlier run must not pass for this one's
    process = subprocess.Popen(child)
    interrupted = False
    while True:
        try:
            code = process.wait()
            break
        except KeyboardInterrupt:
            # Ctrl-C reaches the child too; a SIGTERM only reached us: pass it on once, then
            # wait while the child saves its trace
            if not interrupted and process.poll() is None:
                process.send_signal(signal.SIGINT)
            interrupted = True
    summary = RecordingSummary.of(output) if output.is_file() else None
    return code, summary


def _check_interpreter(python: str) -> None:
    if Path(python) == Path(sys.executable):
        return
    try:
        probe = subprocess.run(
            [python, "-c", "import apiprof.tracing.launch"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except OSError as exc:
        raise UsageError(f"cannot run {python!r}: {exc.strerror}") from exc
    if probe.returncode != 0:
        raise UsageError(
            f"{python} cannot import apiprof (install apiprof into its environment, or trace"
            f" with this one: -- {sys.executable} ...)"
        )
