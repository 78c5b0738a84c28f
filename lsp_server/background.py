"""One background thread for jedi work that must not hold up requests.

Warming jedi up at start-up and inferring the targets of every call in a large file take seconds;
a request must never wait for them as a whole. Jobs run one at a time on a daemon thread, each
jedi step through the :class:`~.resolve.JediGate` (so a request waits for one step at most), and
hand their result back to the event loop as a callback. A job submitted under a key replaces a
queued job with the same key (a newer version of the same document).

A job submitted while a request is being answered joins the queue only when the event loop is
done with that request — its answer written — so the thread does not compete for the GIL with
writing a large answer (the inlay hints of a whole file right after an edit).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from apiprof.lsp_server.resolve import JediGate

log = logging.getLogger(__name__)

Job = Callable[[], Callable[[], None] | None]
"""Runs on the background thread; returns a callback for the event loop (or None)."""


class Background:
    def __init__(
        self,
        gate: JediGate,
        deliver: Callable[[Callable[[], None]], Any],
        soon: Callable[[Callable[[], None]], Any] | None = None,
    ) -> None:
        """``deliver`` runs a callback on the event loop from any thread; ``soon`` runs one on
        the event loop once it is done with the current message (by default: right away)."""
        self._gate = gate
        self._deliver = deliver
        self._soon = soon or (lambda callback: callback())
        self._submitted = 0  # submitted, not yet queued
        self._jobs: dict[Any, Job] = {}
        self._wake = threading.Condition()
        self._running: Any = None
        self._stopped = False
        self._thread: threading.Thread | None = None

    def submit(self, key: Any, job: Job) -> None:
        with self._wake:
            if self._stopped:
                return
            self._submitted += 1
        self._soon(lambda: self._enqueue(key, job))

    def _enqueue(self, key: Any, job: Job) -> None:
        with self._wake:
            self._submitted -= 1
            if self._stopped:
                return
            self._jobs.pop(key, None)
            self._jobs[key] = job
            self._wake.notify()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="apiprof-lsp-background", daemon=True
                )
                self._thread.start()

    def busy(self) -> bool:
        with self._wake:
            return bool(self._jobs) or self._running is not None or self._submitted > 0

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._jobs.clear()
            self._wake.notify()

    def _run(self) -> None:
        with self._gate.background():
            while True:
                with self._wake:
                    self._running = None
                    self._wake.wait_for(lambda: self._jobs or self._stopped)
                    if self._stopped:
                        return
                    key = next(iter(self._jobs))
                    job = self._jobs.pop(key)
                    self._running = key
                try:
                    done = job()
                except Exception:
                    if self._stopped:  # the server is exiting; jedi's helper process is gone
                        return
                    log.exception("background job %r failed", key)
                    continue
                if done is not None:
                    try:
                        self._deliver(done)
                    except RuntimeError:  # the event loop is closed: the server is exiting
                        return
