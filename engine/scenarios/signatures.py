"""What a callable takes: its signature (also for C functions that ``inspect`` cannot read) and
its resolved annotations (also those naming classes imported only for type checking)."""

from __future__ import annotations

import collections.abc as abc
import enum
import inspect
import re
import sys
import typing
from collections.abc import Callable
from typing import Any

from apiprof.engine.scenarios.stubs import stub_signature
from apiprof.engine.scenarios.typechecking import type_checking_names
from apiprof.engine.scenarios.typetext import STDLIB_NAMES


def signature_of(
    target: Callable[..., object], sources: frozenset[str] | None = None, qualname: str = ""
) -> inspect.Signature | None:
    """inspect.signature (``__text_signature__`` included), else the ``name(a, b)`` first
    docstring line C functions carry, else the stub's parameter list (found also under the
    public ``qualname`` the target is scanned as: a compiled class ``_speedups.Scanner`` that
    the package exports, and its stub describes, as ``scanner.make_scanner``)."""
    own = _own_signature(target)
    if own is not None:
        return own
    if sources is None or "stubs" in sources:
        stub = stub_signature(target, qualname)
        if stub is not None and stub.signature is not None:
            return stub.signature
    if inspect.isclass(target):  # a C class that documents nothing: try it without arguments
        return inspect.Signature()
    return None


def signature_from_stubs(target: Callable[..., object], qualname: str = "") -> bool:
    """Whether only the stubs give ``target`` a signature (a C method of a standard-library
    class a package re-exports, ``OrderedDict.clear``)."""
    if _own_signature(target) is not None:
        return False
    stub = stub_signature(target, qualname)
    return stub is not None and stub.signature is not None


def _own_signature(target: Callable[..., object]) -> inspect.Signature | None:
    """What the callable itself says: inspect, its wrapper, exceptions, its docstring."""
    try:
        found = inspect.signature(target)
    except (TypeError, ValueError):
        found = None
    if found is not None:
        return _initializer_signature(target, found) if _passes_through(found) else found
    if hasattr(target, "__wrapped__"):  # wraps a C method with no signature: its own one
        try:
            return inspect.signature(target, follow_wrapped=False)
        except (TypeError, ValueError):
            pass
    if inspect.isclass(target) and issubclass(target, BaseExceptionGroup):
        return _EXCEPTION_GROUP  # a message and the exceptions it groups, both required
    if inspect.isclass(target) and issubclass(target, BaseException):
        return inspect.Signature()  # exceptions take any arguments; none is a valid call
    return docstring_signature(target)


def _passes_through(signature: inspect.Signature) -> bool:
    """``(*args, **kwargs)``: a signature that says nothing of what the call needs."""
    kinds = [parameter.kind for parameter in signature.parameters.values()]
    return sorted(kinds) == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]


def _initializer_signature(
    target: Callable[..., object], passing: inspect.Signature
) -> inspect.Signature:
    """For a class whose ``__new__`` takes anything and hands it on (a lazy set-up, a registry)
    while its Python ``__init__`` names what it needs: that ``__init__``'s parameters; else
    the pass-through signature itself (``passing``)."""
    initialize = _constructor(target) if inspect.isclass(target) else None
    if (
        initialize is None
        or not inspect.isfunction(initialize)
        or initialize.__name__ != "__init__"
    ):
        return passing
    named = inspect.signature(initialize)
    if _passes_through(named):
        return passing
    return named.replace(parameters=list(named.parameters.values())[1:])


_EXCEPTION_GROUP = inspect.Signature(
    [
        inspect.Parameter("message", inspect.Parameter.POSITIONAL_ONLY, annotation=str),
        inspect.Parameter(
            "exceptions", inspect.Parameter.POSITIONAL_ONLY, annotation=list[ValueError]
        ),
    ]
)
"""What ``ExceptionGroup`` takes (C code without a text signature; backports re-export it)."""


def docstring_signature(target: Callable[..., object]) -> inspect.Signature | None:
    first_line = (getattr(target, "__doc__", None) or "").strip().split("\n", 1)[0]
    match = re.match(r"^(\w+)\(([^()]*)\)", first_line)
    if not match or match.group(1) != getattr(target, "__name__", None):
        return None
    parameters = []
    for text in filter(None, (part.strip() for part in match.group(2).split(","))):
        name, has_default, _ = text.partition("=")
        name = name.strip().strip("[]").strip()
        if name in ("/", "*"):
            continue
        if not name.isidentifier():
            return None
        parameters.append(
            inspect.Parameter(
                name,
                inspect.Parameter.POSITIONAL_ONLY,
                default=None if has_default or "[" in text else inspect.Parameter.empty,
            )
        )
    try:
        return inspect.Signature(parameters)
    except ValueError:  # defaults before required parameters
        return None


def type_hints(target: Callable[..., object]) -> dict[str, Any]:
    """Resolved annotations; string ones that fail alone are evaluated one by one."""
    function = _constructor(target) if inspect.isclass(target) else target
    return {**_inherited(function), **_resolved(function), **_overloaded_literals(function)}


def borrowed_hints(target: Callable[..., object]) -> frozenset[str]:
    """The parameters whose only annotation is an overridden definition's: a strong hint, not
    a promise (``render_strong(self, token)`` overriding ``token: Strong`` is called with what
    the package makes, which a bare ``Strong(...)`` may not be)."""
    function = _constructor(target) if inspect.isclass(target) else target
    inherited = _inherited(function)
    if not inherited:
        return frozenset()
    return frozenset(inherited.keys() - _resolved(function).keys())


def _inherited(function: Callable[..., object]) -> dict[str, Any]:
    """What the definitions ``function`` overrides say of its parameters (the nearest base's
    first): an override often repeats ``(self, md, options)`` without the annotations of
    ``Extra.__init__(self, md: Markdown, options: dict)``, and means the same."""
    function = getattr(function, "__func__", function)
    qualname = getattr(function, "__qualname__", "") or ""
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    if "." not in qualname or "<locals>" in qualname or module is None:
        return {}
    owner: Any = module
    for part in qualname.split(".")[:-1]:
        owner = getattr(owner, part, None)
    name = getattr(function, "__name__", "")
    if not inspect.isclass(owner) or not name:
        return {}
    try:
        own = set(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return {}
    found: dict[str, Any] = {}
    for klass in reversed(owner.__mro__[1:-1]):  # the nearest base's annotations win
        base = vars(klass).get(name)
        if inspect.isfunction(base) and base is not function:
            found.update({k: v for k, v in _resolved(base).items() if k in own and k != "return"})
    return found


def _overloaded_literals(function: Callable[..., object]) -> dict[str, Any]:
    """The parameters the first ``@overload`` of ``function`` narrows to literals
    (``type_: Literal["IDENT", "HASH"]`` where the implementation says ``str``): the values
    the implementation expects, which any text is not."""
    try:
        overloads = typing.get_overloads(function)
    except Exception:  # not a function the registry knows
        return {}
    if not overloads:
        return {}
    return {
        name: hint
        for name, hint in _resolved(overloads[0]).items()
        if typing.get_origin(hint) is typing.Literal
    }


def _resolved(function: Callable[..., object]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function)
    except Exception:
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(inspect.unwrap(function), "__globals__", {})
    widened: dict[str, Any] | None = None
    for name, annotation in getattr(function, "__annotations__", {}).items():
        if not isinstance(annotation, str):
            hints[name] = annotation
            continue
        try:
            hints[name] = eval(annotation, namespace, vars(typing))
            continue
        except Exception:
            pass
        # names imported only under `if TYPE_CHECKING:`: the package's classes, common stdlib
        # ones, what the module's TYPE_CHECKING block imports
        if widened is None:
            module = getattr(function, "__module__", "") or ""
            widened = {
                **WELL_KNOWN_NAMES,
                **package_classes(module),
                **type_checking_names(module),
                **namespace,
            }
        try:
            hints[name] = eval(annotation, widened, vars(typing))
        except Exception:
            continue
    return hints


def _constructor(cls: type) -> Callable[..., object]:
    """The function a class's arguments go to, as ``inspect.signature`` reads them: the first
    Python ``__init__`` or ``__new__`` along its bases (a tuple subclass's ``__new__``)."""
    for klass in cls.__mro__:
        own = vars(klass)
        new = own.get("__new__")
        new = new.__func__ if isinstance(new, staticmethod) else new
        for function in (own.get("__init__"), new):
            if inspect.isfunction(function):
                return function
    return typing.cast(Callable[..., object], cls.__init__)  # type: ignore[misc]  # read only


WELL_KNOWN_NAMES: dict[str, Any] = {**STDLIB_NAMES, "Enum": enum.Enum, "abc": abc}
"""Standard-library names annotations often import only for type checking."""


def package_classes(module: str) -> dict[str, type]:
    """The classes defined in ``module``'s top-level package and imported so far, by their names
    (a name two classes share is left out, it would be a guess, unless only one of them is
    defined in a public module)."""
    package = module.split(".")[0]
    if not package:
        return {}
    found: dict[str, type | None] = {}
    for name, loaded in list(sys.modules.items()):
        if loaded is None or not (name == package or name.startswith(package + ".")):
            continue
        for value in list(vars(loaded).values()):
            if (
                isinstance(value, type)
                and (getattr(value, "__module__", "") or "").split(".")[0] == package
            ):
                seen = found.setdefault(value.__name__, value)
                if seen is not value:
                    found[value.__name__] = _public_one(seen, value)
    return {name: cls for name, cls in found.items() if cls is not None}


def _public_one(first: type | None, second: type) -> type | None:
    """Of two classes sharing a name, the one a public module defines when the other's module
    is private (``yaml.error.Mark`` over the C extension's ``yaml._yaml.Mark``); else None."""
    if first is None:
        return None
    private = [
        any(part.startswith("_") for part in cls.__module__.split(".")) for cls in (first, second)
    ]
    if private == [False, True]:
        return first
    return second if private == [True, False] else None


def defining_class(function: Callable[..., object]) -> type | None:
    """The class whose body defines ``function`` (from its qualified name), or None."""
    parts = (getattr(function, "__qualname__", "") or "").split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    value: object = sys.modules.get(getattr(function, "__module__", "") or "")
    for part in parts[:-1]:
        value = getattr(value, part, None)
    return value if inspect.isclass(value) else None
