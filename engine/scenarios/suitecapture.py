"""Argument capture during a ``--tests`` warm-up, started once the suite has imported the package.

Finding the entry points' code means importing the package. Done before the suite runs, the
suite would either reuse that copy (not the source tree it means to test) or, with the copy
forgotten, import the package a second time — and what the first import registered outside
its modules stays behind: a codec registered with :mod:`codecs` then raises the first copy's
exception classes, which the suite's ``except pkg.Error`` no longer catches (idna's property
tests failed so). So the recorder is made when collection is over, from the copy the suite
imported (or, if it imported none, from the one its ``sys.path`` finds), and watches the
tests from then on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from apiprof.engine.scenarios.capture import Recorder, capturing, recorder_for

ORIGIN = "tests:"
"""How a captured call names the test it came from: ``tests:`` and the test's node id."""


class LateRecorder:
    """A pytest plugin: records the calls of the entry points ``qualnames`` (their arguments
    too with ``arguments``) from the end of collection until :meth:`stop`, each call marked
    with the test that made it."""

    __test__ = False

    def __init__(self, qualnames: Sequence[str], arguments: bool) -> None:
        self.qualnames = list(qualnames)
        self.arguments = arguments
        self.recorder: Recorder | None = None
        self._active = contextlib.ExitStack()

    def start(self) -> Recorder:
        """The recorder, made and recording from now on (once: a retried session keeps it)."""
        if self.recorder is None:
            self.recorder = recorder_for(self.qualnames, arguments=self.arguments)
            self._active.enter_context(capturing(self.recorder))
        return self.recorder

    def stop(self) -> None:
        self._active.close()

    def pytest_collection_finish(self, session: Any) -> None:
        self.start()

    def pytest_runtest_setup(self, item: Any) -> None:
        if self.recorder is not None:
            self.recorder.origin = f"{ORIGIN}{item.nodeid}"
