"""Whose an object is: the package's own, or the standard library's under the package's name.

Discovery keeps what the package defines (and its private C accelerator's) as its API; a class
of the standard library it re-exports is its name for that class, but not its cost to
describe: the class's methods are the standard library's, and an abstract one cannot be
called at all.
"""

from __future__ import annotations

import inspect
import sys
import typing


def belongs_to(obj: object, package: str) -> bool:
    """Defined in the package or in its private C accelerator (``_json`` for ``json``)."""
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return False
    top = package.split(".")[0]
    return any(module == p or module.startswith(p + ".") for p in (package, top, "_" + top))


def standard_library_class(cls: type, package: str) -> bool:
    """A class of the standard library (or a builtin) the package re-exports (``unicode =
    str``, ``StringIO``, ``HTMLParser`` in a compatibility module, ``ExceptionGroup`` in a
    backport): the class is the package's name for it, but its methods are the standard
    library's API, not the package's (str's 47 methods under ``compat.unicode``)."""
    home = getattr(cls, "__module__", None)
    if not isinstance(home, str) or belongs_to(cls, package):
        return False
    top = home.split(".")[0].lstrip("_")
    return top in sys.stdlib_module_names and package.split(".")[0] not in sys.stdlib_module_names


def standard_library_interface(obj: object, package: str) -> bool:
    """An abstract class of the standard library the package re-exports (``Mapping``,
    ``Sized`` from ``collections.abc`` in a compatibility module, even listed in ``__all__``):
    nobody can call it, and what implements it is the standard library's or the package's own
    classes, which are entry points of their own."""
    return (
        inspect.isclass(obj)
        and inspect.isabstract(obj)
        and standard_library_class(typing.cast(type, obj), package)
    )
