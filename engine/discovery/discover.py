"""Discovery: every public entry point of a package, each under one canonical qualified name.

Runs inside a sandboxed worker (importing a package runs its code) and returns plain data.
Public means: listed in a module's ``__all__`` or, without one, a non-underscore name defined in
the package (or in its C accelerator, e.g. ``_json``). Modules named ``_x``, ``tests`` etc. are not
walked. An object exported under several public paths gets the shortest as its canonical name
(``json.JSONEncoder``, not ``json.encoder.JSONEncoder``) and the others as aliases.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import pkgutil
import types
import typing
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

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

    def entry(self, qualname: str) -> EntryPoint | None:
        """The entry point with this canonical name or alias, if any."""
        for ep in self.entry_points:
            if ep.qualname == qualname or qualname in ep.aliases:
                return ep
        return None


def describe_exception(error: BaseException) -> str:
    """``"ExcType: message"``, the form failures are reported in."""
    return f"{type(error).__name__}: {error}".rstrip(": ")


def discover(package: str) -> Discovery:
    """Import ``package`` and every public submodule, and list its public entry points."""
    root = _import_root(package)
    modules, failures = _import_public_modules(root)
    candidates: dict[int, _Candidate] = {}
    for module in modules:
        for name, obj in _public_members(module, package):
            try:  # package objects may raise on any attribute access (a hostile ``__class__``)
                _add_candidate(
                    candidates, f"{module.__name__}.{name}", obj, module.__name__, package
                )
            except Exception:
                continue
    entries = [_to_entry(candidate, package) for candidate in candidates.values()]
    entries.sort(key=lambda ep: ep.qualname)
    return Discovery(package, _version_of(package, root), entries, failures)


def resolve_object(qualname: str) -> object:
    """The object a dotted name refers to: import the longest module prefix, getattr the rest."""
    parts = qualname.split(".")
    for split in range(len(parts), 0, -1):
        module_name = ".".join(parts[:split])
        try:
            obj: object = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name and (
                module_name == error.name or module_name.startswith(error.name + ".")
            ):
                continue  # this prefix is not a module: try a shorter one
            raise
        for attribute in parts[split:]:
            try:
                obj = getattr(obj, attribute)
            except AttributeError:
                raise UsageError(
                    f"cannot resolve {qualname!r}: {module_name!r} has no attribute path "
                    f"{'.'.join(parts[split:])!r}; check the spelling against `apiprof-scan --list`"
                ) from None
        return obj
    raise UsageError(
        f"cannot resolve {qualname!r}: no importable module prefix; is the package installed?"
    )


# -- importing -------------------------------------------------------------------------------


def _import_root(package: str) -> types.ModuleType:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(package)
    except ModuleNotFoundError as error:
        if error.name and package.startswith(error.name):
            raise PackageNotFound(
                f"no package named {package!r} is importable here; install it into the environment "
                f"apiprof runs in (e.g. `pip install {package}`) or check the spelling"
            ) from None
        raise PackageNotFound(
            f"importing {package!r} failed: {describe_exception(error)}; "
            "install its missing dependency and scan again"
        ) from None
    except (Exception, SystemExit) as error:
        raise PackageNotFound(
            f"importing {package!r} failed: {describe_exception(error)}; "
            "fix the import error (run `python -c 'import "
            f"{package}'` to see it) and scan again"
        ) from None


def is_private_module(name: str, package: str) -> bool:
    """True for ``pkg._impl``, ``pkg.tests`` and anything below them."""
    relative = name[len(package) :].lstrip(".").split(".") if name != package else []
    return any(part.startswith("_") or part in SKIPPED_MODULES for part in relative)


def _import_public_modules(root: types.ModuleType) -> tuple[list[types.ModuleType], dict[str, str]]:
    """The root and its public submodules (shallow first); failures recorded, never raised."""
    modules, failures = [root], {}
    pending = [root]
    while pending:
        parent = pending.pop(0)
        path = getattr(parent, "__path__", None)
        if path is None:
            continue
        for info in sorted(pkgutil.iter_modules(path, parent.__name__ + "."), key=lambda i: i.name):
            if is_private_module(info.name, root.__name__):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    module = importlib.import_module(info.name)
            except (Exception, SystemExit) as error:
                failures[info.name] = describe_exception(error)
                continue
            modules.append(module)
            if info.ispkg:
                pending.append(module)
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


def _belongs_to(obj: object, package: str) -> bool:
    """Defined in the package or in its private C accelerator (``_json`` for ``json``)."""
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return False
    top = package.split(".")[0]
    return any(module == p or module.startswith(p + ".") for p in (package, top, "_" + top))


def _public_members(module: types.ModuleType, package: str) -> list[tuple[str, object]]:
    exported = getattr(module, "__all__", None)
    if isinstance(exported, (list, tuple)):
        # only names Python code can write: an entry like "../x" is no API (and no file name)
        names = [n for n in exported if isinstance(n, str) and n.isidentifier()]
        pairs = [(n, getattr(module, n, None)) for n in names]
        return [(n, obj) for n, obj in pairs if _safe_kind(obj)]
    members = []
    for name, obj in vars(module).items():
        try:
            if name.startswith("_") or not _entry_kind(obj) or not _belongs_to(obj, package):
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
    return None


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
    return None


def _class_members(cls: type, package: str) -> list[tuple[str, object, EntryKind]]:
    """Public methods, class/static methods and properties, including ones inherited from
    classes of the same package (a private base's public method is public on the subclass)."""
    seen: set[str] = set()  # a name defined lower in the MRO hides the same name above it
    members = []
    for klass in cls.__mro__:
        if klass is not cls and not _belongs_to(klass, package):
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
    if kind is None:
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
