"""Names in a Python document → the canonical qualified names the scan stored, via jedi.

We do not write a resolver: jedi already follows ``import json as np``, ``from json import
dumps``, instance types (``w = textwrap.TextWrapper(); w.wrap``) and re-exports to full names.
This module only turns jedi's answers into plain records the rest of the server can use
(aliases stored by the scan are followed later, by the cost index).

jedi is not thread-safe, and the server uses it from two threads: requests on the event loop and
slow work (warming up, inlay hints of a whole file) on a background thread. :class:`JediGate`
lets one at a time in, and a waiting request always goes before the next background step.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import jedi
import parso
from jedi.api.environment import InvalidPythonEnvironment
from parso.python import tree

from apiprof.lsp_server.calls import CallSite
from apiprof.lsp_server.text import split_lines

log = logging.getLogger(__name__)

COSTED_TYPES = frozenset({"function", "class", "property"})
"""Jedi name types that can be entry points; other candidates (modules, constants, keywords,
parameters) complete without a cost hint."""

GRAMMAR = parso.load_grammar()

WARM_UP_SOURCE = "import os, json, re\nos.path.join('a', 'b')\njson.dumps(1)\nre.\n"


@dataclass(frozen=True)
class Candidate:
    """One completion candidate, in jedi's order."""

    label: str
    type: str  # jedi's type: "function", "class", "module", "keyword", "statement", ...
    qualname: str  # jedi's full name, "" when it has none
    index: int = 0  # position in jedi's list
    total: int = 1  # length of jedi's list

    @property
    def costed(self) -> bool:
        return bool(self.qualname) and self.type in COSTED_TYPES


class JediGate:
    """One jedi user at a time; background work steps aside whenever a request is waiting."""

    def __init__(self) -> None:
        self._lock = (
            threading.RLock()
        )  # a request holds it throughout, and again for each jedi call
        self._state = threading.Condition()
        self._waiting = 0
        self._background = threading.local()

    @contextmanager
    def background(self) -> Iterator[None]:
        """Mark the calling thread as background work for the duration."""
        self._background.active = True
        try:
            yield
        finally:
            self._background.active = False

    @contextmanager
    def held(self) -> Iterator[None]:
        if getattr(self._background, "active", False):
            with self._state:
                self._state.wait_for(lambda: self._waiting == 0)
            with self._lock:
                yield
            return
        with self._state:
            self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            with self._state:
                self._waiting -= 1
                self._state.notify_all()
        try:
            yield
        finally:
            self._lock.release()


def clamp_position(source: str, line: int, column: int) -> tuple[int, int] | None:
    """Jedi position (1-based line, code-point column) for a 0-based one; None past the last line.

    Lines break where LSP and parso break them (``\\n``, ``\\r\\n``, ``\\r``); columns past the
    end of a line are moved to its end, so an editor that is one keystroke ahead of the server
    still gets an answer.
    """
    lines = split_lines(source)
    if line < 0 or line >= len(lines):
        return None
    return line + 1, max(0, min(column, len(lines[line])))


WORKSPACE_ENVIRONMENTS = (".venv", "venv", ".env", "env")
"""Virtual environments looked for in the workspace root when no ``environmentPath`` is set."""


def find_environment(root: str | Path | None, configured: str = "") -> Path | None:
    """The Python environment whose packages the document imports: ``configured`` (an
    interpreter or a virtualenv; relative to the workspace root), else a virtualenv in the root,
    else None (the environment the server runs in)."""
    base = Path(root) if root else Path.cwd()
    if configured:
        return base / Path(configured).expanduser()
    for name in WORKSPACE_ENVIRONMENTS:
        if (base / name / "pyvenv.cfg").is_file():
            return base / name
    return None


class Resolver:
    """Jedi scripts for one workspace: the project decides sys.path, the environment which
    installed packages imports find (a project's own virtualenv, not the server's)."""

    def __init__(
        self,
        root: str | Path | None = None,
        environment_path: str = "",
        *,
        report: Callable[[str], None] | None = None,
        gate: JediGate | None = None,
    ) -> None:
        self.gate = gate or JediGate()
        self.environment_path = environment_path
        self.environment = (
            find_environment(root, environment_path) if root or environment_path else None
        )
        self.project = jedi.Project(Path(root)) if root else None
        if self.environment is not None:
            project = jedi.Project(
                Path(root) if root else Path.cwd(), environment_path=str(self.environment)
            )
            try:
                project.get_environment()  # runs the interpreter once: it must exist and start
            except InvalidPythonEnvironment as exc:
                if report:
                    report(
                        f"apiprof: {self.environment} is not a usable Python environment ({exc}); imports resolve "
                        "in the server's own environment — set environmentPath to an interpreter or virtualenv"
                    )
                self.environment = None
            else:
                self.project = project

    def _script(self, source: str, path: str | None) -> jedi.Script:
        return jedi.Script(source, path=Path(path) if path else None, project=self.project)

    def complete(
        self, source: str, path: str | None, line: int, column: int, *, qualnames: bool = True
    ) -> list[Candidate]:
        """Jedi's completions at a 0-based position (empty past the end of the document).

        ``qualnames=False`` skips jedi's full names (a few µs per candidate) when no cost lookup
        will follow; modules, constants and keywords never get one.
        """
        where = clamp_position(source, line, column)
        if where is None:
            return []
        with self.gate.held():
            found = self._script(source, path).complete(*where)
            out = []
            for i, c in enumerate(found):
                kind = c.type
                # full names cost jedi a few µs each: only for names that can carry a cost
                qualname = (c.full_name or "") if qualnames and kind in COSTED_TYPES else ""
                out.append(Candidate(c.name, kind, qualname, i, len(found)))
            return out

    def names_at(self, source: str, path: str | None, line: int, column: int) -> list[str]:
        """Qualified names the code at a position may refer to, best guess first.

        Inference comes first (it sees through assignments and ``import … as``), then
        ``goto`` (definitions jedi cannot infer), then the call whose arguments surround the
        position, so hovering inside ``dumps(obj)`` still finds ``json.dumps``. Instances are
        skipped: hovering a variable ``w`` is not a call of ``TextWrapper``.
        """
        where = clamp_position(source, line, column)
        if where is None:
            return []
        with self.gate.held():
            script = self._script(source, path)
            names = []
            if _identifier_at(split_lines(source)[where[0] - 1], where[1]):
                names = [n for n in script.infer(*where) if n.type != "instance"]
                names += script.goto(*where, follow_imports=True)
            if not names:
                names = script.get_signatures(*where)
            return list(dict.fromkeys(n.full_name for n in names if n.full_name))

    def parse(self, source: str, path: str | None) -> tree.Module:
        """parso's tree of the document — the parser jedi uses, with its cache: after an edit a
        2,000-line file is re-parsed in about a millisecond (only the changed part)."""
        with self.gate.held():
            # diff_cache keeps the tree in memory by path, as jedi's own parse of the buffer does;
            # cache=True would also pickle it to disk on every edit
            return GRAMMAR.parse(source, path=path, cache=False, diff_cache=True)

    def infer_calls(
        self, source: str, path: str | None, sites: list[CallSite]
    ) -> Iterator[tuple[CallSite, tuple[str, ...]]]:
        """What each call calls, by jedi's inference; one site per turn at the gate, so a request
        arriving meanwhile waits for one inference at most."""
        script = None
        for site in sites:
            with self.gate.held():
                script = script or self._script(source, path)
                try:
                    names = [n for n in script.infer(*site.callee) if n.type != "instance"]
                    if not names:
                        names = script.goto(*site.callee, follow_imports=True)
                except Exception as exc:  # jedi raises on code it cannot analyse
                    log.debug("jedi could not infer the call at %s: %s", site.callee, exc)
                    names = []
            yield site, tuple(dict.fromkeys(n.full_name for n in names if n.full_name))

    def warm_up(self) -> None:
        """Load what every first request needs (the environment, builtins, typeshed stubs of
        common modules), so the first hover does not take a second and a half. Step by step:
        a request arriving meanwhile waits for one step at most."""
        with self.gate.held():
            script = self._script(WARM_UP_SOURCE, None)
            script.complete(4, 3)  # builtins, the environment, `re`
        for line, column in ((2, 9), (3, 7)):  # os.path.join, json.dumps
            with self.gate.held():
                script.infer(line, column)


def _identifier_at(line: str, column: int) -> bool:
    """Whether a name (not a literal, operator or blank) touches ``column``."""
    start = end = column
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
        start -= 1
    while end < len(line) and (line[end].isalnum() or line[end] == "_"):
        end += 1
    return line[start:end].isidentifier()
