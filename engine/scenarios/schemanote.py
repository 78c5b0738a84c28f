"""What a method of a schema its users fill in needs, said in the reason it stays unprofiled.

A class that leaves a class attribute empty for its users' subclasses to set (see
:mod:`.docsubclasses`) cannot run the methods that read it; when no documented subclass did
either, the reason says which attribute and that a scenario may need a subclass setting it —
only of attributes the package's documentation shows its users setting."""

from __future__ import annotations

import inspect

from apiprof.engine.discovery.discover import resolve_object
from apiprof.engine.scenarios.docsubclasses import (
    MISSING,
    documented_attributes,
    documented_for,
    read_names,
    unset,
)
from apiprof.engine.scenarios.warmup import feeder_of


def schema_note(qualname: str) -> str:
    """For the reason a method stays unprofiled: the class attributes its class leaves empty
    for subclasses to set that the method reads (``"; Set.componentType is left empty ..."``),
    or ""."""
    owner_name, _, member = qualname.rpartition(".")
    try:
        owner = resolve_object(owner_name) if "." in owner_name else None
    except Exception:  # not a method of a class that resolves: nothing to say
        return ""
    if not inspect.isclass(owner):
        return ""
    own = read_names(owner, member)
    feeder = feeder_of(owner, member)
    fed = read_names(owner, feeder) - own if feeder else set()
    documented = documented_attributes((owner.__module__ or "").split(".")[0])
    empty = [
        name
        for name in sorted(own | fed)
        if name in documented  # the package shows its users setting it
        and any(name in vars(klass) for klass in owner.__mro__[:-1])
        and not callable(getattr(owner, name, None))
        and unset(getattr(owner, name, MISSING))
    ]
    if not empty:
        return ""
    tried = documented_for(owner, member) or documented_for(owner, feeder)
    reads = f"{member} reads it" if empty[0] in own else f"{feeder}, which feeds it, reads it"
    said = f" (its documented subclasses {', '.join(c.__name__ for c in tried)} did not do)"
    return (
        f"; {owner.__name__}.{empty[0]} is left empty ({getattr(owner, empty[0])!r}) for "
        f"subclasses to set and {reads}: a scenario may need to call it on a subclass that "
        f"sets it{said if tried else ''}"
    )
