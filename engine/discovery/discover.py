"""Discovery: every public entry point of a package, each under one canonical qualified name.

Runs inside a sandboxed worker (importing a package runs its code) and returns plain data.
Public means: listed in a module's ``__all__`` or, without one (or with one that lists only
submodules), a non-underscore name defined in the package (or in its C accelerator, e.g.
``_json``). Modules named ``_x``, ``tests`` etc. are not walked. An object exported under several public paths gets the shortest as its canonical name
(``json.JSONEncoder``, not ``json.encoder.JSONEncoder``) and the others as aliases.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import pkgutil
import sys
import types
import typing
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

from apiprof.engine.discovery.dependencies import missing_dependency
from apiprof.engine.discovery.messages import exception_message
from apiprof.engine.discovery.ownership import (
    belongs_to,
    standard_library_class,
    standard_library_interface,
)
from apiprof.errors import PackageNotFound, UsageError
from apiprof.model.records import EntryKind, EntryPoint

SKIPPED_MODULES = frozenset({"tests", "test", "conftest", "setup", "__main__"})
"""Module names that are never public API, wherever they sit in the package."""


@dataclass(frozen=True)
class Discovery:
    """What a package offers: its entry points and the modules that would not import."""

    package: str
    version: str  # importlib.metadata version, else __version__, else ""
    entry_points: list[EntryPoint] = field(default_factory=list)
    import_failures: dict[str, str] = field(default_factory=dict)  # module -> "ExcType: message"
    # modules that need an optional dependency which is not installed: module -> its name
    missing_dependencies: dict[str, str] = field(default_factory=dict)

    def entry(self, qualname: str) -> EntryPoint | None:
        """The entry point with this canonical name or alias, if any."""
        for ep in self.entry_points:
            if ep.qualname == qualname or qualname in ep.aliases:
                return ep
        return None


def describe_exception(error: BaseException) -> str:
    """``"ExcType: message"``, the form failures are reported in."""
    return f"{type(error).__name__}: {exception_message(error)}".rstrip(": ")


def discover(package: str) -> Discovery:
    """Import ``package`` and every public submodule, and list its public entry points."""
    package = import_name_of(package)
    root = _import_root(package)
    modules, failures = import_public_modules(root, package)
    missing = {
        module: dependency
        for module, error in failures.items()
        if (dependency := missing_dependency(error, package))
    }
    candidates: dict[int, _Candidate] = {}
    for module_name, module in modules:
        for name, obj in _public_members(module, package):
            try:  # package objects may raise on any attribute access (a hostile ``__class__``)
                _add_candidate(candidates, f"{module_name}.{name}", obj, module_name, package)
            except Exception:
                continue
    entries = [_to_entry(candidate, package) for candidate in candidates.values()]
    entries.sort(key=lambda ep: ep.qualname)
    return Discovery(package, _version_of(package, root), entries, failures, missing)


def resolve_object(qualname: str) -> object:
    """The object a dotted name refers to, walked the way the package itself exports it.

    Each step prefers the attribute (``dateutil.parser.isoparser`` is the class the package
    exports, not the submodule of the same name) and falls back to importing a submodule;
    a step that leads nowhere is retried the other way, so ``pkg.mod.name`` still works when an
    attribute shadows the module ``pkg.mod``.
    """
    parts = qualname.split(".")
    try:
        root: object = importlib.import_module(parts[0])
    except ModuleNotFoundError as error:
        if error.name == parts[0]:
            raise UsageError(
                f"cannot resolve {qualname!r}: no importable module prefix; is the package installed?"
            ) from None
        raise
    found = _walk(root, parts, 1)
    if found is _MISSING:
        raise UsageError(
            f"cannot resolve {qualname!r}: no attribute path {'.'.join(parts[1:])!r} from "
            f"{parts[0]!r}; list the package's entry points with `apiprof-scan {parts[0]} --list`"
        )
    return found


_MISSING = object()


def _walk(obj: object, parts: list[str], index: int) -> object:
    """``parts[index:]`` resolved from ``obj`` (attribute first, then submodule); _MISSING if
    neither way reaches the end. An import error of a submodule that exists propagates."""
    if index == len(parts):
        return obj
    name = parts[index]
    candidates: list[object] = []
    try:
        candidates.append(getattr(obj, name))
    except AttributeError:
        pass
    except Exception:  # a property of a module that raises: not a path to walk
        pass
    if inspect.ismodule(obj):
        module_name = ".".join(parts[: index + 1])
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            submodule_missing = bool(error.name and module_name.startswith(error.name))
            if not submodule_missing and not candidates:
                raise
        else:
            if not candidates or module is not candidates[0]:
                candidates.append(module)
    for candidate in candidates:
        found = _walk(candidate, parts, index + 1)
        if found is not _MISSING:
            return found
    return _MISSING


def measurable(obj: object) -> object:
    """The object whose calls the profiler times for an entry point: the function behind a
    ``functools.cached_property`` (the descriptor itself runs no code of its own)."""
    if isinstance(obj, functools.cached_property):
        return obj.func
    return obj


# -- importing -------------------------------------------------------------------------------


def import_name_of(name: str) -> str:
    """The import name for ``name``: itself when it imports, else the top-level module of the
    installed distribution so named (``python-dateutil`` → ``dateutil``), else itself."""
    top = name.split(".")[0]
    if top.isidentifier():
        try:
            if importlib.util.find_spec(top) is not None:
                return name
        except (ImportError, ValueError):
            return name
    try:
        distribution = importlib.metadata.distribution(name)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return name
    tops = _top_level_modules(distribution)
    return tops[0] if len(tops) == 1 else name


def _top_level_modules(distribution: importlib.metadata.Distribution) -> list[str]:
    listed = (distribution.read_text("top_level.txt") or "").split()
    if listed:
        return sorted({name for name in listed if not name.startswith("_")})
    tops = set()
    for file in distribution.files or ():
        first = file.parts[0]
        if first.endswith((".dist-info", ".egg-info", ".data")) or first in ("..", "__pycache__"):
            continue
        name = first.removesuffix(".py") if len(file.parts) == 1 else first
        is_module = len(file.parts) > 1 or first.endswith(".py")
        if is_module and name.isidentifier() and not name.startswith("_"):
            tops.add(name)
    return sorted(tops)


def _searched_paths() -> str:
    shown = [path or "(current directory)" for path in sys.path[:8]]
    more = f" and {len(sys.path) - 8} more" if len(sys.path) > 8 else ""
    return ", ".join(shown) + more


def _import_root(package: str) -> types.ModuleType:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(package)
    except ModuleNotFoundError as error:
        if error.name and package.startswith(error.name):
            raise PackageNotFound(
                f"no package named {package!r} is importable here (searched {_searched_paths()}); "
                f"install it into the environment apiprof runs in (e.g. `pip install {package}`), "
                "run apiprof-scan from the directory that holds it, or check the spelling"
            ) from None
        raise PackageNotFound(
            f"importing {package!r} failed: {describe_exception(error)}; "
            "install its missing dependency and scan again"
        ) from None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit, or an error class derived from BaseException
        raise PackageNotFound(
            f"importing {package!r} failed: {describe_exception(error)}; "
            "fix the import error (run `python -c 'import "
            f"{package}'` to see it) and scan again"
        ) from None


def is_private_module(name: str, package: str) -> bool:
    """True for ``pkg._impl``, ``pkg.tests`` and anything below them, and for the test modules
    a package ships among its own (``pkg.test_keys``, ``pkg.keys_test``: the names pytest
    collects), which are its suite, not its API."""
    relative = name[len(package) :].lstrip(".").split(".") if name != package else []
    return any(
        part.startswith("_") or part in SKIPPED_MODULES or _is_test_module(part)
        for part in relative
    )


def _is_test_module(part: str) -> bool:
    return part.startswith("test_") or part.endswith(("_test", "_tests"))


def import_public_modules(
    root: types.ModuleType, root_name: str | None = None
) -> tuple[list[tuple[str, types.ModuleType]], dict[str, str]]:
    """The root and its public submodules (shallow first), each with the name it was imported
    under; failures recorded, never raised. The name is the import's, not ``__name__``: a
    package that copies a submodule's globals into its own (``globals().update(vars(
    __version__))``) carries that submodule's ``__name__``."""
    top = root_name or root.__name__
    modules, failures = [(top, root)], {}
    pending = [(top, root)]
    while pending:
        parent_name, parent = pending.pop(0)
        path = getattr(parent, "__path__", None)
        if path is None:
            continue
        for info in sorted(pkgutil.iter_modules(path, parent_name + "."), key=lambda i: i.name):
            if is_private_module(info.name, top):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    module = importlib.import_module(info.name)
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # a config error derived from BaseException, too
                failures[info.name] = describe_exception(error)
                continue
            modules.append((info.name, module))
            if info.ispkg:
                pending.append((info.name, module))
    return modules, failures


def _version_of(package: str, root: types.ModuleType) -> str:
    top = package.split(".")[0]
    names = [top, *importlib.metadata.packages_distributions().get(top, [])]
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    version = getattr(root, "__version__", "")
    return version if isinstance(version, str) else str(version)


# -- what is public --------------------------------------------------------------------------


def _public_members(module: types.ModuleType, package: str) -> list[tuple[str, object]]:
    exported = getattr(module, "__all__", None)
    if isinstance(exported, (list, tuple)):
        # only names Python code can write: an entry like "../x" is no API (and no file name)
        names = [n for n in exported if isinstance(n, str) and n.isidentifier()]
        pairs = [(n, getattr(module, n, None)) for n in names]
        if not _only_submodules(pairs):
            return [(n, obj) for n, obj in pairs if _safe_kind(obj)]
    return _defined_members(module, package)


def _only_submodules(pairs: list[tuple[str, object]]) -> bool:
    """An ``__all__`` that lists only submodules (``sqlparse``'s) says which modules make up the
    package, not which of the functions defined beside it are private: those stay public."""
    found = [obj for _, obj in pairs if obj is not None]
    return bool(found) and all(isinstance(obj, types.ModuleType) for obj in found)


def _defined_members(module: types.ModuleType, package: str) -> list[tuple[str, object]]:
    """Non-underscore entry points defined in the package (the rule without ``__all__``)."""
    members = []
    for name, obj in vars(module).items():
        try:
            if name.startswith("_") or not _entry_kind(obj) or not belongs_to(obj, package):
                continue
        except Exception:  # an object that raises when inspected is no entry point
            continue
        members.append((name, obj))
    return members


def _safe_kind(obj: object) -> EntryKind | None:
    """:func:`_entry_kind`, or None for objects that raise when inspected."""
    try:
        return _entry_kind(obj)
    except Exception:
        return None


def _entry_kind(obj: object) -> EntryKind | None:
    if inspect.isclass(obj):
        return EntryKind.CLASS
    if isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType)):
        return EntryKind.BUILTIN
    if inspect.isfunction(obj) or (callable(obj) and hasattr(obj, "__wrapped__")):
        return EntryKind.FUNCTION
    if is_compiled_function(obj):
        return EntryKind.BUILTIN
    return None


def is_compiled_function(obj: object) -> bool:
    """A function compiled to C by Cython (``msgpack.unpackb``) or a similar tool: a routine that
    is neither a Python function nor a CPython builtin, but keeps a function's introspection."""
    return (
        callable(obj)
        and not inspect.isclass(obj)
        and inspect.isroutine(obj)
        and not isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType))
        and type(obj).__name__.endswith(("function_or_method", "cython_function"))
    )


def _member_kind(raw: object) -> EntryKind | None:
    """Kind of a raw class ``__dict__`` value, or None if it is not a callable member."""
    if isinstance(raw, staticmethod):
        return EntryKind.STATICMETHOD
    if isinstance(raw, (classmethod, types.ClassMethodDescriptorType)):
        return EntryKind.CLASSMETHOD
    if isinstance(raw, property) or type(raw).__name__ == "cached_property":
        return EntryKind.PROPERTY
    if inspect.isfunction(raw) or isinstance(
        raw, (types.MethodDescriptorType, types.WrapperDescriptorType)
    ):
        return EntryKind.METHOD
    if callable(raw) and hasattr(raw, "__wrapped__") and not inspect.isclass(raw):
        return EntryKind.METHOD
    if is_compiled_function(raw):
        return EntryKind.METHOD
    return None


def _class_members(cls: type, package: str) -> list[tuple[str, object, EntryKind]]:
    """Public methods, class/static methods and properties, including ones inherited from
    classes of the same package (a private base's public method is public on the subclass)."""
    if standard_library_class(cls, package):
        return []
    seen: set[str] = set()  # a name defined lower in the MRO hides the same name above it
    members = []
    for klass in cls.__mro__:
        if klass is not cls and not belongs_to(klass, package):
            continue
        for name, raw in vars(klass).items():
            if name in seen:
                continue
            seen.add(name)
            kind = None if name.startswith("_") else _member_kind(raw)
            if kind:
                members.append((name, raw, kind))
    return members


# -- canonical names -------------------------------------------------------------------------


@dataclass
class _Candidate:
    obj: object  # the identity-bearing object (function, class, property...)
    kind: EntryKind
    paths: list[tuple[str, str]]  # (qualified name, module it was found in)
    owner: type | None = None  # for members: the class they were found on
    member: str = ""


def _identity(raw: object) -> object:
    return raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw


def _add_candidate(
    candidates: dict[int, _Candidate], qualname: str, obj: object, module: str, package: str
) -> None:
    kind = _entry_kind(obj)
    if kind is None or standard_library_interface(obj, package):
        return
    _remember(candidates, obj, kind, qualname, module)
    if kind is EntryKind.CLASS:
        cls = typing.cast(type, obj)
        for name, raw, member_kind in _class_members(cls, package):
            _remember(
                candidates, _identity(raw), member_kind, f"{qualname}.{name}", module, cls, name
            )


def _remember(
    candidates: dict[int, _Candidate],
    obj: object,
    kind: EntryKind,
    qualname: str,
    module: str,
    owner: type | None = None,
    member: str = "",
) -> None:
    candidate = candidates.setdefault(id(obj), _Candidate(obj, kind, [], owner, member))
    if qualname not in (path for path, _ in candidate.paths):
        candidate.paths.append((qualname, module))


def _path_rank(path: tuple[str, str]) -> tuple[int, int, str]:
    qualname, _ = path
    return (qualname.count("."), len(qualname), qualname)


def _to_entry(candidate: _Candidate, package: str) -> EntryPoint:
    paths = sorted(candidate.paths, key=_path_rank)
    qualname, module = paths[0]
    entry = EntryPoint(
        qualname=qualname,
        package=package,
        module=module,
        kind=candidate.kind,
        aliases=tuple(path for path, _ in paths[1:]),
    )
    return replace(entry, **_describe(candidate))


def _describe(candidate: _Candidate) -> dict[str, Any]:
    """Signature as a caller writes it (no ``self``), docstring summary, and source location."""
    obj: Any = candidate.obj
    kind = candidate.kind
    code_obj: Any = obj.fget if isinstance(obj, property) else getattr(obj, "func", obj)
    details: dict[str, Any] = {}
    if kind is not EntryKind.PROPERTY:
        details["signature"] = signature_text(
            obj, drop_first=kind in (EntryKind.METHOD, EntryKind.CLASSMETHOD)
        )
    doc = obj.__doc__ if kind is not EntryKind.CLASS else vars(obj).get("__doc__")
    if isinstance(doc, str) and doc.strip():
        details["summary"] = inspect.cleandoc(doc).splitlines()[0].strip()
    try:
        details["source_file"] = inspect.getsourcefile(inspect.unwrap(code_obj)) or ""
        code = getattr(inspect.unwrap(code_obj), "__code__", None)
        details["source_line"] = (
            code.co_firstlineno if code else inspect.getsourcelines(code_obj)[1]
        )
    except (TypeError, OSError):
        pass
    return details


def signature_text(obj: Any, *, drop_first: bool = False) -> str:
    """``str(inspect.signature(obj))``, or "" when the object has none (some C callables)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    if drop_first and signature.parameters:
        first = next(iter(signature.parameters.values()))
        if first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD):
            signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    return str(signature)
