"""Standard-library classes a module imports, as the objects its functions expect.

``ArrayHandler.flatten(obj, data)`` reads ``obj.typecode``: the handlers' module imports
``array``, and ``array.array`` is the class that has it. When a call asked an argument for
attributes, the classes of the standard-library modules the entry point's module imports (and
the standard-library classes it imports by name) that have all of them are built before a bare
namespace with those attributes is made up.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types

MAX_CLASSES = 3
"""Imported classes offered for one set of attributes at most."""
_PLAIN = frozenset([object, type, dict, list, tuple, set, frozenset, str, bytes, int, float])


def imported_classes_with(qualname: str, wanted: list[str]) -> list[type]:
    """Standard-library classes the module of ``qualname`` imports whose instances have every
    attribute in ``wanted`` (as class attributes: methods, descriptors), by name."""
    module = _module_of(qualname)
    if module is None or not wanted:
        return []
    found = [cls for cls in _imported_classes(module) if all(hasattr(cls, a) for a in wanted)]
    return found[:MAX_CLASSES]


def _module_of(qualname: str) -> types.ModuleType | None:
    parts = qualname.split(".")
    for end in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:end]))
        if module is not None:
            return module
    return None


@functools.cache
def _imported_classes(module: types.ModuleType) -> tuple[type, ...]:
    found: dict[str, type] = {}
    for value in vars(module).values():
        if isinstance(value, types.ModuleType) and _standard(value.__name__):
            for name, member in vars(value).items():
                if not name.startswith("_") and _offered(member):
                    found.setdefault(f"{value.__name__}.{name}", member)
        elif _offered(value) and _standard(value.__module__):
            found.setdefault(f"{value.__module__}.{value.__qualname__}", value)
    return tuple({id(found[key]): found[key] for key in sorted(found)}.values())  # aliases once


def _standard(module: str) -> bool:
    return (module or "").split(".")[0] in sys.stdlib_module_names


def _offered(value: object) -> bool:
    """A concrete class (not an exception, not a builtin every value is)."""
    return (
        inspect.isclass(value)
        and value not in _PLAIN
        and not issubclass(value, BaseException)
        and not inspect.isabstract(value)
    )
