"""Names in a Python document → the canonical qualified names the scan stored, via jedi.

We do not write a resolver: jedi already follows ``import json as np``, ``from json import
dumps``, instance types (``w = textwrap.TextWrapper(); w.wrap``) and re-exports to full names.
This module only turns jedi's answers into plain records the rest of the server can use
(aliases stored by the scan are followed later, by the cost index).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jedi
from jedi.api.environment import InvalidPythonEnvironment

log = logging.getLogger(__name__)

COSTED_TYPES = frozenset({"function", "class", "property"})
"""Jedi name types that can be entry points; other candidates (modules, constants, keywords,
parameters) complete without a cost hint."""


@dataclass(frozen=True)
class Candidate:
    """One completion candidate, in jedi's order."""

    label: str
    type: str  # jedi's type: "function", "class", "module", "keyword", "statement", ...
    qualname: str  # jedi's full name, "" when it has none

    @property
    def costed(self) -> bool:
        return bool(self.qualname) and self.type in COSTED_TYPES


def clamp_position(source: str, line: int, column: int) -> tuple[int, int] | None:
    """Jedi position (1-based line, code-point column) for a 0-based one; None past the last line.

    Columns past the end of a line are moved to its end, so an editor that is one keystroke
    ahead of the server still gets an answer.
    """
    lines = source.splitlines() or [""]
    if source.endswith(("\n", "\r")):
        lines.append("")
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
    ) -> None:
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

        ``qualnames=False`` skips jedi's full names (about 2 µs per candidate) when no cost
        lookup will follow.
        """
        where = clamp_position(source, line, column)
        if where is None:
            return []
        return [
            Candidate(c.name, c.type, (c.full_name or "") if qualnames else "")
            for c in self._script(source, path).complete(*where)
        ]

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
        script = self._script(source, path)
        names = []
        if _identifier_at(source.splitlines()[where[0] - 1] if source else "", where[1]):
            names = [n for n in script.infer(*where) if n.type != "instance"]
            names += script.goto(*where, follow_imports=True)
        if not names:
            names = script.get_signatures(*where)
        return list(dict.fromkeys(n.full_name for n in names if n.full_name))


def _identifier_at(line: str, column: int) -> bool:
    """Whether a name (not a literal, operator or blank) touches ``column``."""
    start = end = column
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
        start -= 1
    while end < len(line) and (line[end].isalnum() or line[end] == "_"):
        end += 1
    return line[start:end].isidentifier()
