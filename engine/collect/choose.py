"""Which APIs a collected program measures: candidates, the random draw, stack conflicts.

Candidates are the public entry points of the reference database (or a configured list) whose
module the program has imported. Each is drawn with probability ``rate`` the first time its
module is seen, so every program measures a different few. Two drawn APIs that can share a call
stack (known from the reference's call edges) are not instrumented at the same time: the outer
one's time would carry the inner one's probe cost.
"""

from __future__ import annotations

import random
import sqlite3
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from apiprof.model.records import EntryKind

LIVE_KINDS = (
    EntryKind.FUNCTION,
    EntryKind.METHOD,
    EntryKind.STATICMETHOD,
    EntryKind.CLASSMETHOD,
    EntryKind.PROPERTY,
)
"""Entry points a running program can time: Python callables (classes are timed at their call
sites by scans, which a live program cannot know)."""

MAX_PARTNERS = 2000  # bound on the call-graph walk for one API


@dataclass(frozen=True)
class Candidate:
    qualname: str
    module: str
    kind: str


class ReferenceCandidates:
    """Candidates and call edges from an apiprof database, read-only, queried per new module."""

    def __init__(self, path: Path) -> None:
        # read in the collector's turns, on whichever thread collected garbage, closed at exit
        self.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._partners: dict[str, set[str]] = {}

    def for_modules(self, modules: Iterable[str]) -> list[Candidate]:
        names = sorted(set(modules))
        kinds = [str(k) for k in LIVE_KINDS]
        found = []
        for start in range(0, len(names), 500):
            chunk = names[start : start + 500]
            found += [
                Candidate(*row)
                for row in self.conn.execute(
                    f"SELECT qualname, module, kind FROM entry_points WHERE module IN ({','.join('?' * len(chunk))}) "
                    f"AND kind IN ({','.join('?' * len(kinds))}) ORDER BY qualname",
                    [*chunk, *kinds],
                )
            ]
        return found

    def shares_stack(self, a: str, b: str) -> bool:
        return b in self.partners(a) or a in self.partners(b)

    def partners(self, qualname: str) -> set[str]:
        """APIs that can be on a call stack with ``qualname``: its callers and callees, direct
        or through other entry points."""
        cached = self._partners.get(qualname)
        if cached is not None:
            return cached
        found: set[str] = set()
        for column, other in (("caller", "callee"), ("callee", "caller")):
            frontier = {qualname}
            while frontier and len(found) < MAX_PARTNERS:
                marks = ",".join("?" * len(frontier))
                step = {
                    row[0]
                    for row in self.conn.execute(
                        f"SELECT {other} FROM call_edges WHERE {column} IN ({marks})",
                        list(frontier),
                    )
                }
                frontier = step - found - {qualname}
                found |= frontier
        self._partners[qualname] = found
        return found

    def close(self) -> None:
        self.conn.close()


class ListedCandidates:
    """A configured list of APIs; its module is the longest imported prefix of each name."""

    def __init__(self, qualnames: Iterable[str]) -> None:
        self.qualnames = tuple(dict.fromkeys(qualnames))

    def for_modules(self, modules: Iterable[str]) -> list[Candidate]:
        modules = set(modules)
        found = []
        for qualname in self.qualnames:
            parts = qualname.split(".")
            for cut in range(len(parts) - 1, 0, -1):
                module = ".".join(parts[:cut])
                if module in modules:
                    found.append(Candidate(qualname, module, ""))
                    break
        return found

    def shares_stack(self, a: str, b: str) -> bool:
        return False  # no call graph for a hand-made list

    def close(self) -> None:
        pass


def draw(candidates: Iterable[Candidate], rate: float, rng: random.Random) -> list[Candidate]:
    """Each candidate independently with probability ``rate`` (all of them at rate 1)."""
    if rate >= 1:
        return list(candidates)
    return [c for c in candidates if rng.random() < rate]


def resolve(candidate: Candidate) -> tuple[object, str] | None:
    """The object behind a candidate's name in the running program (a function, or a class's
    raw attribute such as a property or staticmethod) and its entry-point kind; None if the
    program has no such object."""
    module = sys.modules.get(candidate.module)
    if module is None:
        return None
    obj: object = module
    in_class = False
    for part in candidate.qualname[len(candidate.module) + 1 :].split("."):
        if isinstance(obj, type):
            raw = next((k.__dict__[part] for k in obj.__mro__ if part in k.__dict__), None)
            obj, in_class = (raw if raw is not None else getattr(obj, part, None)), True
        elif isinstance(obj, types.ModuleType):
            obj, in_class = obj.__dict__.get(part), False
        else:
            return None
        if obj is None:
            return None
    return obj, candidate.kind or _kind_of(obj, in_class)


def _kind_of(obj: object, in_class: bool) -> str:
    if isinstance(obj, property):
        return str(EntryKind.PROPERTY)
    if isinstance(obj, staticmethod):
        return str(EntryKind.STATICMETHOD)
    if isinstance(obj, classmethod):
        return str(EntryKind.CLASSMETHOD)
    return str(EntryKind.METHOD if in_class else EntryKind.FUNCTION)
