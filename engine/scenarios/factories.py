"""Concrete subclasses and factories: other ways to get an instance of a class the package
defines, when calling the class itself does not work (it is abstract, or rejects made-up
arguments).

*Subclasses*: the package's concrete subclasses of the class — for a receiver, those that
inherit the method being profiled unchanged first, so the call still runs the base class's code.
*Factories*: the package's own callables whose return type fits — a classmethod returning
``cls(...)`` (``Version.parse``), a function annotated, stubbed or documented as returning the
class, or one whose body returns ``TheClass(...)``: a small type-directed search of the
package's own API.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import sys
import types
import typing
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from apiprof.engine.scenarios.classnames import snake_case
from apiprof.engine.scenarios.fields import fields_required
from apiprof.engine.scenarios.usage import function_tree

MAX_SUBCLASSES = 8
MAX_FACTORIES = 6


def concrete_subclasses(cls: type, member: str = "", overriding: str = "") -> list[type]:
    """The package's concrete subclasses of ``cls``, best first: those that inherit ``member``
    unchanged (when given), public ones, then fewer required constructor arguments. (One that
    overrides ``member`` still serves: the base class's function is then called on it.)

    ``overriding``: the method profiled on an object that holds this one (a tree whose node
    asks its children the same, as ``And.as_const`` asks its operands): subclasses with their
    own implementation of it come first, since the base's default often refuses."""
    return list(_concrete_subclasses(cls, member, overriding))


@functools.cache
def _concrete_subclasses(cls: type, member: str, overriding: str = "") -> tuple[type, ...]:
    """Cached: building one tree of objects asks again for every node of the same class."""
    top = (cls.__module__ or "").split(".")[0]
    import_package(top)
    found: list[type] = []
    seen: set[int] = set()
    pending: list[type] = list(type.__subclasses__(cls))
    while pending:
        sub = pending.pop(0)
        if id(sub) in seen:
            continue
        seen.add(id(sub))
        pending.extend(type.__subclasses__(sub))
        if (sub.__module__ or "").split(".")[0] != top or inspect.isabstract(sub):
            continue
        found.append(sub)
    inherits = {id(sub) for sub in found if member and _static(sub, member) is _static(cls, member)}
    base = _static(cls, overriding) if overriding else None
    own = {id(sub) for sub in found if base is not None and _static(sub, overriding) is not base}
    found.sort(
        key=lambda sub: (
            base is not None and id(sub) not in own,  # implements what its holder is asked
            id(sub) not in inherits,  # runs the base class's own code when called as usual
            sub.__name__.startswith("_"),
            _required(sub),
            sub.__name__,
        )
    )
    return tuple(found[:MAX_SUBCLASSES])


def _static(cls: type, member: str) -> object:
    try:
        return inspect.getattr_static(cls, member)
    except AttributeError:
        return None


def _required(cls: type) -> int:
    """Arguments a constructor needs: required parameters and the fields it lists (fewer
    first, so a leaf of a tree of node classes is tried before a node that nests others)."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return 99
    return fields_required(cls) + sum(
        1
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )


def factories_for(
    cls: type, return_types: Callable[[object], list[Any]]
) -> list[Callable[..., Any]]:
    """The package's callables that return an instance of ``cls`` (or a subclass), best first:
    the class's own alternative constructors (its bases' too), then functions of the package.
    ``return_types(callable)`` gives the declared return types (annotation, stub, docstring)."""
    return list(_factories_for(cls, return_types))


@functools.cache
def _factories_for(
    cls: type, return_types: Callable[[object], list[Any]]
) -> tuple[Callable[..., Any], ...]:
    """Cached: reading every function of the package is the costly part of building an object,
    and one tree of objects asks for the same classes many times."""
    found: list[Callable[..., Any]] = []
    inherited: dict[
        str, object
    ] = {}  # a base's alternative constructor makes the subclass (``cls(text)``)
    for klass in reversed(cls.__mro__):
        inherited.update(vars(klass))
    for name, raw in sorted(inherited.items()):
        if name.startswith("_") or not isinstance(raw, classmethod):
            continue
        method = getattr(cls, name)
        if _returns_instance(raw.__func__, cls, return_types(method), own_class=True):
            found.append(method)
    top = (cls.__module__ or "").split(".")[0]
    for function in package_functions(top):
        if function is cls or len(found) >= MAX_FACTORIES:
            continue
        if _returns_instance(function, cls, return_types(function), own_class=False):
            found.append(function)
    return tuple(found[:MAX_FACTORIES])


def _returns_instance(
    function: Callable[..., Any], cls: type, declared: list[Any], *, own_class: bool
) -> bool:
    for annotation in declared:
        if annotation == "Self" and own_class:
            return True
        if inspect.isclass(annotation) and issubclass(annotation, cls):
            return True
        origin = typing.get_origin(annotation)
        if inspect.isclass(origin) and issubclass(origin, cls):  # `Table[str, int]`
            return True
        if origin is typing.Union and any(
            inspect.isclass(arg) and issubclass(arg, cls) for arg in typing.get_args(annotation)
        ):
            return True
    tree = function_tree(inspect.unwrap(function))
    if tree is None:
        return False
    names = {"cls"} if own_class else set()
    names.update(
        name
        for name, value in getattr(function, "__globals__", {}).items()
        if inspect.isclass(value) and issubclass(value, cls)
    )
    returns_value = False
    calls_own_class = False  # `cls._instance = cls()` ... `return cls._instance`: a singleton
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            called = node.value.func
            if isinstance(called, ast.Name) and called.id in names:
                return True
        returns_value |= isinstance(node, ast.Return) and node.value is not None
        calls_own_class |= (
            own_class
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "cls"
        )
    return returns_value and calls_own_class


@functools.cache
def import_package(top: str) -> tuple[str, ...]:
    """Import the package's public modules (as discovery does) so subclasses and factories
    defined anywhere in it are visible; returns the module names."""
    try:
        root = importlib.import_module(top)
    except Exception:
        return ()
    names = [top]
    for info in pkgutil.walk_packages(
        getattr(root, "__path__", []), top + ".", onerror=lambda _: None
    ):
        if any(
            part.startswith("_") or part in ("tests", "test") for part in info.name.split(".")[1:]
        ):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(info.name)
        except KeyboardInterrupt:
            raise
        except BaseException:  # discovery recorded it (a config error derived from BaseException)
            continue
        names.append(info.name)
    return tuple(names)


def named_factories(cls: type) -> list[Callable[..., Any]]:
    """The package's functions named after ``cls`` in lower case (``pmap`` for ``PMap``,
    ``lookup_table`` for ``LookupTable``): the conventional way to make an instance whose
    constructor takes its inner representation (``PMap(size, buckets)``)."""
    names = {cls.__name__.lower(), snake_case(cls.__name__)}
    top = (cls.__module__ or "").split(".")[0]
    return [function for function in package_functions(top) if function.__name__ in names]


def public_values(top: str, *, own_module: bool = False) -> Iterator[tuple[str, str, object]]:
    """``(module name, name, value)`` for each public value the package's modules hold, in
    module and name order, each once: those the package defines (``own_module``: only in the
    module that defines them, where each is met once)."""
    seen: set[int] = set()
    for module_name in import_package(top):
        module = sys.modules.get(module_name)
        for name, value in sorted(vars(module).items()) if module is not None else ():
            if name.startswith("_") or id(value) in seen:
                continue
            home = getattr(value, "__module__", "") or ""
            if home != module_name if own_module else home.split(".")[0] != top:
                continue
            seen.add(id(value))
            yield module_name, name, value


def package_functions(top: str) -> Iterator[Callable[..., Any]]:
    for _, _, value in public_values(top):
        if inspect.isfunction(value):
            yield value


def package_callables(
    top: str, *, constructors: bool = False
) -> list[tuple[Callable[..., Any], type | None]]:
    """``(function, its class or None)``: the public functions of the package's modules and
    the public methods its concrete classes define (with ``constructors``, their
    ``__init__`` too), in module and name order, each once."""
    found: list[tuple[Callable[..., Any], type | None]] = []
    for _, _, value in public_values(top):
        if inspect.isfunction(value):
            found.append((value, None))
        elif inspect.isclass(value) and not inspect.isabstract(value):
            found += [
                (member, value)
                for attribute, member in sorted(vars(value).items())
                if (not attribute.startswith("_") or (constructors and attribute == "__init__"))
                and inspect.isfunction(member)
            ]
    return found


@dataclass(frozen=True)
class Produced:
    """Annotation marker: the value an inverse function of the package returns (``packb``'s
    output for ``unpackb``, ``dumps``' for ``loads``, ``Packer.pack``'s for a method of
    ``Unpacker``), built with synthesised arguments."""

    producer: Callable[..., Any]
    owner: type | None = None  # producer is a method of this class: called on an instance
    fits: type | tuple[type, ...] | None = None  # the parameter's annotated class(es): a value
    # of another is no input
    stream: bool = False  # the reader takes a stream: what the producer returns or writes, in one


INVERSE_WORDS = [
    ("unpack", "pack"),
    ("loads", "dumps"),
    ("load", "dump"),
    ("load", "save"),
    ("deserialize", "serialize"),
    ("decode", "encode"),
    ("decompress", "compress"),
    ("unescape", "escape"),
    ("unquote", "quote"),
    ("parse", "format"),
    ("from_", "to_"),
    ("decrypt", "encrypt"),
    ("inflate", "deflate"),
]
"""Name pairs where the second function makes what the first one reads."""


def inverse_names(name: str) -> list[str]:
    """The names of what makes ``name``'s input: each pair of :data:`INVERSE_WORDS`, and the
    name without an ``un`` that undoes it (``sign`` for ``unsign``, ``wrap`` for ``unwrap``)."""
    found = [name.replace(reader, maker, 1) for reader, maker in INVERSE_WORDS if reader in name]
    if name.startswith("un") and len(name) > 4 and name[2:] not in found:
        found.append(name[2:])
    return [wanted for wanted in dict.fromkeys(found) if wanted != name]


def inverse_producers(function: Callable[..., Any]) -> list[Callable[..., Any]]:
    """The package's functions whose name is the inverse of ``function``'s (``packb`` for
    ``unpackb``): their output is realistic input for it."""
    name = getattr(function, "__name__", "") or ""
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    top = sys.modules.get((getattr(function, "__module__", "") or "").split(".")[0])
    found: list[Callable[..., Any]] = []
    for wanted in inverse_names(name):
        for namespace in (module, top):
            candidate = getattr(namespace, wanted, None) if namespace is not None else None
            if callable(candidate) and candidate is not function and candidate not in found:
                found.append(candidate)
    return found


def inverse_class_producers(function: Callable[..., Any]) -> list[Produced]:
    """For a method, the inverse-named method of its own class first (``to_bytes`` for
    ``Timestamp.from_bytes``, ``to_dict`` for ``from_dict``, ``encode`` for ``Codec.decode``:
    the class's own round trip); then, for a method of a reading class (``Unpacker``,
    ``Decoder``), the making method of the package's inverse class (``Packer.pack``,
    ``Encoder.encode``): what it makes is realistic input for any method of the reader
    (``Unpacker.feed``)."""
    owner = owner_class(function)
    if owner is None:
        return []
    found = _own_inverse_methods(owner, getattr(function, "__name__", "") or "")
    lowered = owner.__name__.lower()
    for reader, maker in INVERSE_WORDS:
        if reader.endswith("_") or reader not in lowered:
            continue
        wanted = lowered.replace(reader, maker, 1)
        for cls in _package_classes_named(owner, wanted):
            method = getattr(cls, maker, None)
            if callable(method):
                found.append(Produced(method, cls))
    return found


def _own_inverse_methods(owner: type, name: str) -> list[Produced]:
    """The methods of ``owner`` named as the inverse of its method ``name``: a class or static
    one is called as it is, an instance method on an instance built for it."""
    found: list[Produced] = []
    for wanted in inverse_names(name):
        raw = inspect.getattr_static(owner, wanted, None)
        if raw is None or not callable(getattr(owner, wanted, None)):
            continue
        bound = isinstance(raw, (classmethod, staticmethod, types.ClassMethodDescriptorType))
        found.append(Produced(getattr(owner, wanted), None if bound else owner))
    return found


def owner_class(function: Callable[..., Any]) -> type | None:
    """The class a function found on a class belongs to (Python or compiled), else None: the
    class a class method is bound to (``PublicKey.load_pkcs1``, defined on its abstract base)."""
    owner = getattr(function, "__objclass__", None)
    if inspect.isclass(owner):
        return owner
    if inspect.ismethod(function) and inspect.isclass(function.__self__):
        return function.__self__
    qualname = getattr(function, "__qualname__", "") or ""
    if "." not in qualname or "<locals>" in qualname:
        return None
    value: Any = sys.modules.get(getattr(function, "__module__", "") or "")
    for part in qualname.split(".")[:-1]:
        value = getattr(value, part, None)
    return value if inspect.isclass(value) else None


def _package_classes_named(beside: type, lowered: str) -> list[type]:
    """Classes whose lowercased name is ``lowered``, in ``beside``'s module or its package."""
    module = sys.modules.get(beside.__module__ or "")
    top = sys.modules.get((beside.__module__ or "").split(".")[0])
    found: list[type] = []
    for namespace in (module, top):
        for name, value in vars(namespace).items() if namespace is not None else ():
            if name.lower() == lowered and inspect.isclass(value) and value not in found:
                found.append(value)
    return found
