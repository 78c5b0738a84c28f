"""The objects reachable from a value, each with the path that reaches it again.

A configured object holds the other objects a package builds for it: a document converter's
registries hold its processors, a parse result holds its syntax tree, whose children are
nodes. :func:`reachable` walks a value breadth first — attributes of the package's own
objects, mapping values, sequence items, the items of the package's own containers — bounded
in depth and count, and gives each object with its :data:`Path`; :func:`follow` takes the same
path on a value rebuilt the same way, so a scenario's setup (in another worker) reaches the same
object. Nothing here calls the package's code but attribute reads, ``len`` and iteration of its
containers.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

Step = tuple[str, Any]
"""``("attr", name)``, ``("key", key)`` (a mapping's), ``("item", index)`` (a sequence's) or
``("iter", index)`` (the index-th item a container of the package yields)."""
Path = tuple[Step, ...]

MAX_DEPTH = 4
"""Steps from the root at most: a converter, its parser, the parser's registry, the registry's
table, a processor in it."""
MAX_OBJECTS = 400
"""Objects visited per root at most."""
MAX_ITEMS = 40
"""Items read per mapping, sequence or container."""

_SCALARS = (str, bytes, int, float, complex, bool, type(None))


def reachable(
    root: object, package: str, *, depth: int = MAX_DEPTH, limit: int = MAX_OBJECTS
) -> Iterator[tuple[Path, object]]:
    """``root`` and what it holds, nearest first, each once (by identity), with its path;
    attributes are read from the package's own objects only (``package``: its top-level name),
    public ones before private ones."""
    seen: set[int] = set()
    level: list[tuple[Path, object]] = [((), root)]
    count = 0
    for _ in range(depth + 1):
        following: list[tuple[Path, object]] = []
        for path, value in level:
            if id(value) in seen or count >= limit:
                continue
            seen.add(id(value))
            count += 1
            yield path, value
            if len(path) < depth:
                following += [((*path, step), held) for step, held in _held(value, package)]
        level = following
        if not level:
            return


def follow(root: object, path: Path) -> object:
    """The object ``path`` reaches from ``root``; raises LookupError (or AttributeError) when
    the rebuilt value no longer holds it."""
    value = root
    for kind, key in path:
        if kind == "attr":
            value = getattr(value, key)
        elif kind in ("key", "item"):
            value = value[key]  # type: ignore[index]
        else:
            items = list(itertools.islice(iter(value), key + 1))  # type: ignore[call-overload]
            if len(items) <= key:
                raise LookupError(f"the container holds {len(items)} items, not {key + 1}")
            value = items[key]
    return value


def shown_path(path: Path) -> str:
    """``.parser.blockprocessors[2]``: the path as Python would read it."""
    parts = []
    for kind, key in path:
        parts.append(f".{key}" if kind == "attr" else f"[{key!r}]")
    return "".join(parts)


def of_package(value: object, package: str) -> bool:
    module = getattr(type(value), "__module__", "") or ""
    return module.split(".")[0] == package


def _held(value: object, package: str) -> list[tuple[Step, object]]:
    if isinstance(value, (*_SCALARS, type)):
        return []
    if isinstance(value, Mapping):
        return [
            (("key", key), held)
            for key, held in itertools.islice(value.items(), MAX_ITEMS)
            if isinstance(key, (str, int))
        ]
    if isinstance(value, (list, tuple)):
        return [(("item", index), held) for index, held in enumerate(value[:MAX_ITEMS])]
    if not of_package(value, package):
        return []
    found: list[tuple[Step, object]] = []
    attributes = _attributes(value)
    names = sorted(attributes, key=lambda name: (name.startswith("_"), name))
    found += [
        (("attr", name), attributes[name])
        for name in names
        if not callable(attributes[name]) or of_package(attributes[name], package)
    ]
    if hasattr(type(value), "__iter__") and hasattr(type(value), "__len__"):
        try:
            items = list(itertools.islice(iter(value), MAX_ITEMS))  # type: ignore[call-overload]
        except Exception:  # a container that refuses to be iterated as it is
            items = []
        found += [(("iter", index), held) for index, held in enumerate(items)]
    return found


def _attributes(value: object) -> dict[str, object]:
    """The instance's own attributes: its ``__dict__`` and the ``__slots__`` it has set."""
    own = getattr(value, "__dict__", None)
    found = dict(own) if isinstance(own, dict) else {}
    for klass in type(value).__mro__:
        slots = vars(klass).get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if isinstance(name, str) and name not in ("__dict__", "__weakref__"):
                try:
                    found[name] = getattr(value, name)
                except AttributeError:  # a slot never set
                    continue
    return found
