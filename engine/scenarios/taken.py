"""A value taken from a working call of the package, as plain data (:mod:`.results`): which
callable made it, with which arguments (a synthesised variant, a docstring example, a text
of its grammar), where it sits (the result, the receiver, an argument or a name the example
bound) and the path to it. A scenario's setup carries it and rebuilds the value from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apiprof.engine.scenarios.reachable import Path, shown_path

RECEIVER = "self"
"""The slot name of the instance a method is called on (as pins name it)."""


@dataclass(frozen=True)
class Taken:
    """One slot's value, taken from a working call of the package: rebuilt from this alone."""

    slot: str  # the entry point's parameter, or "self" for its receiver
    producer: str  # the qualified name of the callable that made it
    variant: int  # the producer's synthesised argument variant
    root: str  # "result", "self" (its receiver afterwards) or "arg<K>" (its K-th argument)
    path: Path = ()
    kind: str = ""  # the class of the value, as shown
    text: str = ""  # a text of its grammar the producer (a parser) was given first, if any

    def literal(self) -> tuple[Any, ...]:
        return (self.slot, self.producer, self.variant, self.root, self.path, self.kind, self.text)

    @classmethod
    def from_literal(cls, data: tuple[Any, ...]) -> Taken:
        slot, producer, variant, root, path, kind, text = data
        steps = tuple((str(step), key) for step, key in path)
        return cls(str(slot), str(producer), int(variant), str(root), steps, str(kind), str(text))

    def describe(self) -> str:
        """``receiver: the TocTreeprocessor that TocExtension.extendMarkdown() leaves in its
        receiver, at self.md.treeprocessors[2]`` (what a scenario's description says)."""
        subject = "receiver" if self.slot == RECEIVER else self.slot
        made = _short(self.producer)
        call = f"docstring example {-self.variant} of {made}" if self.variant < 0 else f"{made}()"
        if self.text:
            call = f"{made}({self.text!r})"
        if self.root == "result":
            origin = f"{call} returns"
        elif self.root == "self":
            origin = f"{call} leaves in its receiver"
        elif self.root.startswith("name:"):
            origin = f"{call} binds to {self.root[5:]}"
        else:
            origin = f"{call} leaves in its argument {self.root[3:]}"
        where = f"{self.root.removeprefix('name:')}{shown_path(self.path)}"
        return f"{subject}: the {self.kind} that {origin}" + (f", at {where}" if self.path else "")


def _short(qualname: str) -> str:
    """``TocExtension.extendMarkdown`` for ``markdown.extensions.toc.TocExtension.extend...``."""
    parts = qualname.split(".")
    classes = [part for part in parts[:-1] if part[:1].isupper()]
    return ".".join([*classes[-1:], parts[-1]]) if classes else qualname
