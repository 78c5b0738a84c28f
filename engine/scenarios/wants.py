"""What a rejected call taught, as a record: which parameter wants what (:class:`Want`), in a
form a scenario's setup code carries so that the measuring worker rebuilds exactly the repaired
arguments. :mod:`.lessons` reads exceptions into these; :mod:`.repaired` builds their values."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any


class Want(enum.StrEnum):
    """What a parameter (or the call as a whole) turned out to need."""

    ATTRIBUTES = "attributes"  # an object with these attributes (``name()``: called)
    KEYS = "keys"  # a dict holding these keys
    MAPPING = "mapping"  # a mapping with string keys, not a list or a string
    FILE = "file"  # the path of a file that exists
    DIRECTORY = "directory"  # the path of a directory that exists (with a few files)
    NAMES = "names"  # the call's positional parameters are these (a C function's error named them)
    ARGV = "argv"  # ``sys.argv`` naming these command-line arguments (a ``main()``)
    TYPE = "type"  # a value of this builtin type (a C function said "argument 1 must be dict")
    MODULE = "module"  # the dotted name of one of the package's modules (with these attributes)
    CONTAINS = "contains"  # a text containing these literals (an error quoted what it missed)
    ONE_OF = "one of"  # the first of these values (an attribute name the object has)
    GIVEN = "given"  # an optional parameter left at None that the error names: a value of it
    FIELDS = "fields"  # a tuple of these fields (a loop or assignment unpacks it into them)
    WRITTEN = "written"  # a file (a stream) of the package's own writer's output
    ITEMS = "items"  # ``*args`` passes this many items (a function given them took fewer)
    DOCUMENT = "document"  # a document of a standard format (a parser's syntax error): its form
    RENEWED = "renewed"  # the receiver built again before each call: the first call changed it
    EQUALS = "equals"  # the one value (a literal: names[0]) the error says the parameter may have
    STEM = "stem"  # a path, less the suffix (names[0]) a loader adds: the file with it exists
    LENGTH = "length"  # the receiver built this long (a fixed-width view of it refused another)


@dataclass(frozen=True)
class Lesson:
    """One thing learned from a rejected call, in a form a scenario's setup code can carry
    (:meth:`literal`) so the measuring worker rebuilds exactly the repaired arguments."""

    parameter: str  # the entry point's parameter it is about ("" for NAMES and ARGV)
    want: Want
    names: tuple[str, ...] = ()  # attributes, keys, parameter names or argument names
    element: bool = False  # the parameter's elements want it (a list of tokens), not itself
    cause: str = ""  # what taught it: "KeyError 'data'"
    turn: int = 0  # which candidate object to try (for ATTRIBUTES: several classes may fit)

    def literal(self) -> tuple[Any, ...]:
        return (
            self.parameter,
            str(self.want),
            self.names,
            self.element,
            self.cause,
            self.turn,
        )

    @classmethod
    def from_literal(cls, data: tuple[Any, ...]) -> Lesson:
        parameter, want, names, element, cause, turn = data
        return cls(parameter, Want(want), tuple(names), bool(element), cause, int(turn))

    @property
    def key(self) -> tuple[str, bool]:
        return self.parameter, self.element

    def describe(self) -> str:
        """``"learned from KeyError 'data': token a dict with key 'data'"``."""
        return f"learned from {self.cause}: {self.what()}"

    def what(self) -> str:
        subject = f"elements of {self.parameter}" if self.element else self.parameter
        listed = ", ".join(repr(name) for name in self.names)
        plural = "s" if len(self.names) > 1 else ""
        return {
            Want.ATTRIBUTES: f"{subject} an object with attribute{plural} {listed}",
            Want.KEYS: f"{subject} a dict with key{plural} {listed}",
            Want.MAPPING: f"{subject} a mapping with string keys",
            Want.FILE: f"{subject} the path of a file that exists",
            Want.DIRECTORY: f"{subject} the path of a directory that exists",
            Want.NAMES: f"the call takes the parameter{plural} {listed}",
            Want.ARGV: f"sys.argv names {_argv_listed(self.names) or 'no argument'}",
            Want.TYPE: f"{subject} of type {' or '.join(self.names)}",
            Want.CONTAINS: f"{subject} a text containing {listed}",
            Want.ONE_OF: f"{subject} {listed}",
            Want.GIVEN: f"{subject} a value, not its default of None",
            Want.FIELDS: f"{subject} a tuple of "
            + ", ".join(repr(field.replace(":", ": ")) for field in self.names),
            Want.WRITTEN: f"{subject} "
            + (f"a {self.names[0]}" if self.names else "the path of a file")
            + " holding what the package's own writer writes",
            Want.ITEMS: f"*{subject} {self.names[0] if self.names else 0} item(s)",
            Want.DOCUMENT: f"{subject} a valid {' '.join(self.names[:1]).upper()} document"
            + (f" ({self.names[-1]})" if len(self.names) > 1 else ""),
            Want.RENEWED: "the receiver built again before each call (the first call "
            "changed what the next one needs)",
            Want.EQUALS: f"{subject} {self.names[0] if self.names else ''}",
            Want.STEM: f"{subject} the path of a file, less its suffix {listed}",
            Want.LENGTH: f"{subject} {self.names[0] if self.names else 0} long",
            Want.MODULE: f"{subject} the name of a module of the package"
            + (f" with {listed}" if self.names else ""),
        }[self.want]


def _argv_listed(tokens: tuple[str, ...]) -> str:
    """``'count', '--input', 'input'``: literals as they are passed, files by their name."""
    return ", ".join(repr(token.removeprefix("=")) for token in tokens)


def merged(lessons: tuple[Lesson, ...], new: Lesson) -> tuple[Lesson, ...]:
    """``lessons`` with ``new`` added: what one parameter wants accumulates (the keys and
    attributes asked so far), a different want replaces the older one (a mapping, then the
    key it lacked)."""
    kept: list[Lesson] = []
    for lesson in lessons:
        if lesson.key != new.key:
            kept.append(lesson)
        elif lesson.want is new.want and new.want in ADDING_UP:
            names = (*lesson.names, *(name for name in new.names if name not in lesson.names))
            causes = lesson.cause if new.cause in lesson.cause else f"{lesson.cause}, {new.cause}"
            new = replace(new, names=names, cause=causes, turn=lesson.turn)
    return (*kept, new)


ACCUMULATING = (Want.ATTRIBUTES, Want.KEYS, Want.MODULE)
"""Wants whose names add up over the rounds and that have further candidates to try."""
ADDING_UP = (*ACCUMULATING, Want.CONTAINS)
"""Wants whose names add up over the rounds (a text's literals have no other candidates)."""
