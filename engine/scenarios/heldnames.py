"""The names a receiver holds, when it has no method that lists them.

A method that looks a name up in what its receiver holds (``getPositionByName(name)`` on a
collection of named fields, ``getComponentByName(name)`` on a record whose schema lists its
fields) refuses a made-up name as "not found". What it may be given is read off the receiver:
the names of the elements it holds (their ``name`` attribute or ``getName()``), the text
elements themselves, the keys of a mapping — in the receiver itself, then in its attributes
(its own, then those its class and bases set)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable, Iterator, Mapping

from apiprof.engine import timeouts
from apiprof.engine.scenarios.trial import TRIAL_SECONDS, quiet_stdio

MAX_HELD = 8
"""Names kept (in the order held: a schema's first field first)."""
MAX_ELEMENTS = 64
"""Elements read of one container."""


def held_names(receiver: object) -> tuple[str, ...]:
    """The names the first container among ``receiver`` and its attributes holds, or ()."""
    try:
        with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
            for holder in _holders(receiver):
                names = _names_in(holder)
                if names:
                    return names
    except (Exception, timeouts.CallTimeout):  # an attribute that refuses to be read
        return ()
    return ()


def _holders(receiver: object) -> Iterator[object]:
    yield receiver
    own = getattr(receiver, "__dict__", None)
    if isinstance(own, dict):
        yield from (value for name, value in own.items() if not name.startswith("_"))
    for klass in type(receiver).__mro__[:-1]:
        for name, value in vars(klass).items():
            if not name.startswith("_") and not callable(value):
                with contextlib.suppress(Exception):
                    yield getattr(receiver, name)


def _names_in(holder: object) -> tuple[str, ...]:
    if isinstance(holder, (str, bytes, type)) or not isinstance(holder, Iterable):
        return ()
    if isinstance(holder, Mapping):
        elements: Iterable[object] = holder.keys()
    else:
        try:
            if iter(holder) is holder:  # an iterator: reading it would use it up
                return ()
        except Exception:  # refuses to be iterated (a schema without values)
            return ()
        elements = holder
    names: list[str] = []
    for element in itertools.islice(elements, MAX_ELEMENTS):
        name = _name_of(element)
        if name and name not in names:
            names.append(name)
    return tuple(names[:MAX_HELD])


def _name_of(element: object) -> str:
    if isinstance(element, str):
        return element
    name = getattr(element, "name", None)
    if callable(name) or name is None:
        getter = getattr(element, "getName", None) or name
        with contextlib.suppress(Exception):
            name = getter() if callable(getter) else None
    return name if isinstance(name, str) else ""
