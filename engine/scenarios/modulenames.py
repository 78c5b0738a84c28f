"""Parameters that name a module: what a rejected call's import error asks, and the package's
own modules that answer it.

``import_string(name)``, ``build_extension(ext_name)``, ``find_python_module(name)`` import
their argument: a made-up word fails with ``No module named 'lorem'`` (also inside another
exception's message). The parameter then wants the dotted name of an importable module — the
package's own, the entry point's module first — and when the call next asks that module for
an attribute (``module 'pkg.core' has no attribute 'makeExtension'``), one of the package's
modules that has every attribute asked for so far. Only modules of the package are offered,
imported inside the worker that makes the call.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import sys
import types
from collections.abc import Mapping

from apiprof.engine.scenarios.failing import holders

MAX_MODULES = 200
"""Modules of a package looked at for the attributes a call asks for."""
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def missing_module(message: str, bound: Mapping[str, object]) -> tuple[str, bool] | None:
    """The parameter (and whether through an element) whose string the call tried to import,
    when ``message`` says ``No module named 'x'`` of one of the arguments."""
    found = _NO_MODULE.search(message)
    if found is None:
        return None
    name = found.group(1)
    return next(holders(bound, lambda value: _imports(value, name)), None)


def asked_of_module(obj: object, bound: Mapping[str, object]) -> tuple[str, bool] | None:
    """The parameter whose string named the module ``obj`` (an attribute was asked of it)."""
    if not isinstance(obj, types.ModuleType):
        return None
    return next(holders(bound, lambda value: _imports(value, obj.__name__)), None)


def _imports(value: object, name: str) -> bool:
    return isinstance(value, str) and (value == name or value.startswith((f"{name}.", f"{name}:")))


def package_module_name(qualname: str, attributes: tuple[str, ...], turn: int) -> str:
    """A dotted name of one of the package's modules that has ``attributes`` (the ``turn``-th
    that fits: the entry point's own module, its package, then the others by name)."""
    fitting = [
        name
        for name in _candidates(qualname)
        if all(hasattr(_imported(name), attribute) for attribute in attributes)
    ]
    if not fitting:
        listed = ", ".join(repr(attribute) for attribute in attributes)
        raise LookupError(f"no module of the package has {listed}")
    return fitting[turn % len(fitting)]


def _candidates(qualname: str) -> list[str]:
    own = _own_module(qualname)
    top = own.split(".")[0]
    parent = own.rsplit(".", 1)[0] if "." in own else top
    return list(dict.fromkeys([own, parent, top, *_submodules(top)]))


def _own_module(qualname: str) -> str:
    """The longest importable prefix of the entry point's qualified name."""
    parts = qualname.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in sys.modules:
            return ".".join(parts[:end])
    return parts[0]


@functools.cache
def _submodules(top: str) -> tuple[str, ...]:
    package = sys.modules.get(top)
    path = getattr(package, "__path__", None)
    if path is None:
        return ()
    found = []
    for count, info in enumerate(pkgutil.walk_packages(path, f"{top}.", onerror=lambda _: None)):
        if count >= MAX_MODULES:
            break
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return tuple(sorted(found))


def _imported(name: str) -> object:
    try:
        return importlib.import_module(name)
    except Exception:  # a module needing an absent extra: it has nothing
        return None
