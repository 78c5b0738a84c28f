"""What the delay tracker remembers across restarts: which events were traced, and when.

Only an event's *first* exceedance is traced (the next ones are likely the same story), and
traces are rate-limited overall; both facts live in ``state.json`` in the output directory, so
a restarted program (or a second instance sharing the directory) does not trace them again.
Updates take an exclusive lock on ``state.lock`` where the OS has ``fcntl``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from apiprof.tracing.summary import write_json

try:
    import fcntl
except ImportError:  # Windows: one process per output directory is the expectation there
    fcntl = None  # type: ignore[assignment]

STATE_FILE = "state.json"


class TraceState:
    def __init__(self, directory: Path) -> None:
        self.path = directory / STATE_FILE
        self._lock_path = directory / "state.lock"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock_path.open("a") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(lock, fcntl.LOCK_UN)

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):  # none yet, or damaged: start afresh
            return {"traced": {}, "last_trace": None}
        if not isinstance(data, dict) or not isinstance(data.get("traced"), dict):
            return {"traced": {}, "last_trace": None}
        return data

    def claim(
        self, event: str, now: float, *, min_seconds_between: float, retrace_after: float
    ) -> str | None:
        """Record a trace of ``event`` starting at ``now`` (epoch seconds) if it is allowed.

        Returns None when the trace may start, else why not.
        """
        with self._locked():
            state = self.read()
            traced_at = state["traced"].get(event)
            if isinstance(traced_at, int | float) and (
                retrace_after <= 0 or now - traced_at < retrace_after
            ):
                return f"{event} was traced before (delete {self.path} to trace it again)"
            last = state.get("last_trace")
            if isinstance(last, int | float) and now - last < min_seconds_between:
                return f"another trace started {now - last:.0f} s ago (rate limit)"
            state["traced"][event] = now
            state["last_trace"] = now
            write_json(self.path, state)
            return None
