"""Stub annotations: the types an untyped package's ``.pyi`` stubs give its functions.

Stubs are looked for, in order, beside the module (a package's own ``.pyi`` files, e.g. for a C
extension, or the typed ``.py`` source a mypyc-compiled module ships beside itself), in an installed ``<package>-stubs`` distribution (what ``types-*`` packages
install), and in the third-party stubs of the typeshed copy that ships with jedi — or, for the
standard library's compiled code, in that typeshed's ``stdlib`` stubs (a package that
re-exports ``OrderedDict`` offers its C methods, which have no signature of their own; the
library's Python functions are read like any other code). A stub that
re-exports a name (``from ._parser import parse as parse``) is followed to where it is defined,
a method a stub class does not define to the class's bases (``OrderedDict.clear`` is
``MutableMapping.clear``); ``@overload`` variants each contribute their annotations, in order. Reading stubs runs no code
of the package beyond importing modules it already imports.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.machinery
import importlib.util
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiprof.engine.scenarios.typetext import DEFAULT_NAMES, evaluate_node, module_namespace

MAX_HOPS = 4
"""Re-exports followed at most this many times (stubs may import in circles)."""


@dataclass(frozen=True)
class StubSignature:
    """What the stubs say about one callable: candidate annotations per parameter (one per
    overload that has it, first overload first) and the return types."""

    parameters: dict[str, list[Any]] = field(default_factory=dict)
    returns: list[Any] = field(default_factory=list)
    origin: str = ""  # the stub file it came from
    signature: inspect.Signature | None = None  # the first overload's, for callables without one


def stub_signature(obj: object, qualname: str = "") -> StubSignature | None:
    """The stub's view of ``obj`` (found by its defining module and qualified name, else by
    the public ``qualname`` it is scanned under); None when no stub describes it."""
    for module, path in _stub_locations(obj, qualname):
        found = _find_in_stub(module, path, MAX_HOPS, stdlib=_compiled(obj))
        if found is not None:
            stub_module, definitions = found
            return _signature_from(definitions, stub_module)
    return None


def _stub_locations(obj: object, qualname: str) -> Iterator[tuple[str, list[str]]]:
    target = obj.__func__ if isinstance(obj, (classmethod, staticmethod)) else obj
    if isinstance(target, property) and target.fget is not None:
        target = target.fget
    suffix: list[str] = ["__init__"] if inspect.isclass(target) else []
    module = getattr(target, "__module__", None)
    bound_to = getattr(target, "__self__", None)
    # a C method names no module: its class does (unbound, or bound to an instance)
    owner = getattr(target, "__objclass__", None) or (
        type(bound_to) if bound_to is not None and not inspect.ismodule(bound_to) else None
    )
    if module is None and inspect.isclass(owner) and not inspect.isclass(bound_to):
        module = owner.__module__
    if module is None and inspect.isclass(bound_to):  # a compiled classmethod names no module
        module = bound_to.__module__
    inner = getattr(target, "__qualname__", None)
    if isinstance(module, str) and isinstance(inner, str) and "<" not in inner:
        yield module, [*inner.split("."), *suffix]
        if module.startswith("_") and module.lstrip("_") in sys.stdlib_module_names:
            # a C accelerator's object is stubbed where the stdlib exports it:
            # `_functools.reduce` in functools.pyi, `_heapq.heappush` in heapq.pyi
            yield module.lstrip("_"), [*inner.split("."), *suffix]
        for package in _exporting_packages(module, inner.split(".")[0]):
            yield package, [*inner.split("."), *suffix]
    parts = qualname.split(".")
    for split in range(len(parts) - 1, 0, -1):
        yield ".".join(parts[:split]), [*parts[split:], *suffix]


def _exporting_packages(module: str, name: str) -> Iterator[str]:
    """The packages above ``module`` that re-export its ``name`` as the same object, nearest
    first: a package whose only stub is its ``__init__.pyi`` describes there what its private
    modules define (``pkg._impl.make`` is stubbed as ``pkg.make``)."""
    defined = getattr(sys.modules.get(module), name, None)
    parts = module.split(".")
    for end in range(len(parts) - 1, 0, -1):
        package = ".".join(parts[:end])
        if defined is not None and getattr(sys.modules.get(package), name, None) is defined:
            yield package


@dataclass
class _Stub:
    module: str
    tree: ast.Module
    names: dict[str, Any]  # what annotations in the stub may refer to


def _compiled(obj: object) -> bool:
    """Whether ``obj`` is compiled code (no Python source for the other sources to read)."""
    target = inspect.unwrap(getattr(obj, "__func__", obj))  # type: ignore[arg-type]
    return not (inspect.isfunction(target) or (inspect.isclass(target) and _has_source(target)))


def _has_source(cls: type) -> bool:
    try:
        inspect.getsourcefile(cls)
    except TypeError:  # a class defined in C
        return False
    # a C class may carry the name of a Python module (``_elementtree.Element`` calls itself
    # ``xml.etree.ElementTree.Element``): only Python methods show a class statement made it
    return any(
        inspect.isfunction(member) for klass in cls.__mro__[:-1] for member in vars(klass).values()
    )


def _find_in_stub(
    module: str, path: list[str], hops: int, *, stdlib: bool = True
) -> tuple[_Stub, list[ast.AST]] | None:
    """The stub definitions at ``path`` in ``module``'s stub (standard-library stubs only with
    ``stdlib``: for compiled code, and for the bases of a stub class)."""
    stub = load_stub(module, stdlib)
    if stub is None or not path:
        return None
    body: list[ast.stmt] = stub.tree.body
    for depth, name in enumerate(path):
        found = [node for node in _flatten(body) if _defines(node, name)]
        if not found and depth == 0 and hops > 0:
            source = _imported_from(stub, name)
            if source is not None:
                other, original = source
                return _find_in_stub(other, [original, *path[1:]], hops - 1, stdlib=stdlib)
        if not found:
            return None
        if depth == len(path) - 1:
            return stub, list(found)
        classes = [node for node in found if isinstance(node, ast.ClassDef)]
        rest = path[depth + 1 :]
        if not classes and rest == ["__init__"]:  # a compiled class its stub calls a function
            return stub, [node for node in found if not isinstance(node, ast.ClassDef)]
        if not classes:
            return None
        if len(rest) == 1 and not any(
            _defines(node, rest[0]) for node in _flatten(classes[0].body)
        ):
            own_new: list[ast.AST] = [
                node for node in _flatten(classes[0].body) if _defines(node, "__new__")
            ]
            if rest == ["__init__"] and own_new:  # `partial(func, /, *args)` is its __new__
                return stub, own_new
            return _find_in_bases(stub, classes[0], rest, hops)
        body = classes[0].body
    return None


def _find_in_bases(
    stub: _Stub, cls: ast.ClassDef, path: list[str], hops: int
) -> tuple[_Stub, list[ast.AST]] | None:
    """``path`` looked up in the stub class's bases, each where it is defined (this stub, the
    module it is imported from, else builtins), first found wins."""
    if hops <= 0:
        return None
    for base in cls.bases:
        while isinstance(base, ast.Subscript):  # dict[_KT, _VT]
            base = base.value
        if not isinstance(base, ast.Name):
            continue
        if any(_defines(node, base.id) for node in _flatten(stub.tree.body)):
            where = stub.module, base.id
        else:
            where = _imported_from(stub, base.id) or ("builtins", base.id)
        found = _find_in_stub(where[0], [where[1], *path], hops - 1)
        if found is not None:
            return found
    return None


def _flatten(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a stub body, looking inside ``if sys.version_info ...:`` blocks."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _flatten(node.body)
            yield from _flatten(node.orelse)
        else:
            yield node


def _defines(node: ast.stmt, name: str) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
        node.name == name
    )


def _imported_from(stub: _Stub, name: str) -> tuple[str, str] | None:
    for node in _flatten(stub.tree.body):
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if (alias.asname or alias.name) == name:
                return _absolute(stub.module, node), alias.name
    return None


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = _is_package(module)
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, node.module] if node.module else base)


def _is_package(module: str) -> bool:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    return bool(spec and spec.submodule_search_locations)


def _signature_from(definitions: list[ast.AST], stub: _Stub) -> StubSignature:
    parameters: dict[str, list[Any]] = {}
    returns: list[Any] = []
    signature = None
    for node in definitions:
        if isinstance(node, ast.ClassDef):
            returns.append(stub.names.get(node.name))
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = node.args
        overload = _runtime_signature(arguments)
        if signature is None or _required(overload) < _required(signature):
            signature = overload  # of overloads, the one asking least (`reduce(f, items)`)
        every = [
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            *filter(None, (arguments.vararg, arguments.kwarg)),
        ]
        for argument in every:
            if argument.annotation is None:
                continue
            value = evaluate_node(argument.annotation, stub.names)
            if value is not None:
                parameters.setdefault(argument.arg, []).append(value)
        if node.returns is not None:
            value = evaluate_node(node.returns, stub.names)
            if value is not None:
                returns.append(value)
    return StubSignature(parameters, [r for r in returns if r is not None], stub.module, signature)


def _required(signature: inspect.Signature | None) -> int:
    """How much an overload asks: its required parameters; one asking nothing (``update(**kw)``
    beside ``update(m, /, **kw)``) is the degenerate form, ranked after every other."""
    if signature is None:
        return 1 << 20  # no usable signature: any other overload is better
    required = sum(
        p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in signature.parameters.values()
    )
    return required or 1 << 19


def _runtime_signature(arguments: ast.arguments) -> inspect.Signature | None:
    """The parameter list a stub gives (names, kinds, which have defaults), without ``self``."""
    kind = inspect.Parameter
    positional = [*arguments.posonlyargs, *arguments.args]
    first_default = len(positional) - len(arguments.defaults)
    parameters = [
        kind(
            argument.arg,
            kind.POSITIONAL_ONLY
            if index < len(arguments.posonlyargs)
            else kind.POSITIONAL_OR_KEYWORD,
            default=None if index >= first_default else kind.empty,
        )
        for index, argument in enumerate(positional)
        if argument.arg not in ("self", "cls")
    ]
    if arguments.vararg:
        parameters.append(kind(arguments.vararg.arg, kind.VAR_POSITIONAL))
    for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        parameters.append(
            kind(argument.arg, kind.KEYWORD_ONLY, default=kind.empty if default is None else None)
        )
    if arguments.kwarg:
        parameters.append(kind(arguments.kwarg.arg, kind.VAR_KEYWORD))
    try:
        return inspect.Signature(parameters)
    except ValueError:
        return None


# -- finding and reading stub files -----------------------------------------------------------


@functools.cache
def load_stub(module: str, stdlib: bool = False) -> _Stub | None:
    """The parsed stub of ``module`` and the names its annotations can use (cached); with
    ``stdlib``, typeshed's standard-library stubs count too."""
    path = find_stub_file(module, stdlib)
    if path is None:
        return None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    runtime = sys.modules.get(module)
    names = module_namespace(runtime)
    names.update(_stub_imports(module, tree))
    for node in _flatten(tree.body):  # aliases (`_FileOrStr: TypeAlias = bytes | str | IO[str]`)
        target, value = _alias(node)
        if target and value is not None and target not in names:
            evaluated = evaluate_node(value, names)
            if evaluated is not None:
                names[target] = evaluated
    return _Stub(module, tree, names)


def _alias(node: ast.stmt) -> tuple[str, ast.expr | None]:
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and not isinstance(node.value, ast.Call)
    ):
        return node.targets[0].id, node.value
    return "", None


def _stub_imports(module: str, tree: ast.Module) -> dict[str, Any]:
    """Runtime objects for the names a stub imports, where they exist (``_typeshed`` does not:
    its names are mapped by :mod:`~apiprof.engine.scenarios.typetext`)."""
    names: dict[str, Any] = {}
    for node in _flatten(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                loaded = _import_quietly(alias.name)
                if loaded is not None:
                    names[alias.asname or alias.name.split(".")[0]] = (
                        loaded if alias.asname else _import_quietly(alias.name.split(".")[0])
                    )
        elif isinstance(node, ast.ImportFrom):
            source = _import_quietly(_absolute(module, node))
            for alias in node.names:
                if source is not None and hasattr(source, alias.name):
                    names[alias.asname or alias.name] = getattr(source, alias.name)
                elif alias.name in DEFAULT_NAMES:
                    names[alias.asname or alias.name] = DEFAULT_NAMES[alias.name]
    return names


def _import_quietly(name: str) -> Any:
    if not name or name.split(".")[0] in ("_typeshed", "typing_extensions", "_cffi_backend"):
        return importlib.import_module("typing") if name == "typing_extensions" else None
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def find_stub_file(module: str, stdlib: bool = False) -> Path | None:
    """Where the stub for ``module`` is: beside it, in ``<top>-stubs``, or in jedi's typeshed."""
    for candidate in _candidates(module, stdlib):
        if candidate.is_file():
            return candidate
    return None


def _candidates(module: str, stdlib: bool) -> Iterator[Path]:
    parts = module.split(".")
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin and spec.origin not in ("built-in", "frozen"):
        origin = Path(spec.origin)
        yield origin.with_name(origin.name.split(".")[0] + ".pyi")
        if origin.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            # compiled by mypyc (or Cython's pure-Python mode): the typed source ships beside it
            yield origin.with_name(origin.name.split(".")[0] + ".py")
    top, rest = parts[0], parts[1:]
    if stdlib and (top in sys.stdlib_module_names or top == "builtins"):
        library = typeshed_stdlib()
        if library is not None:
            yield library.joinpath(*parts).with_suffix(".pyi")
            yield library.joinpath(*parts, "__init__.pyi")
    for root in (*map(Path, filter(None, sys.path)), *typeshed_roots(top)):
        base = root / f"{top}-stubs" if root.name != top else root
        if root.name != top and not base.is_dir():
            continue
        yield base.joinpath(*rest).with_suffix(".pyi") if rest else base / "__init__.pyi"
        yield base.joinpath(*rest, "__init__.pyi")


@functools.cache
def typeshed_roots(top: str) -> tuple[Path, ...]:
    """``<typeshed>/stubs/<distribution>/<top>`` directories of jedi's typeshed copy."""
    typeshed = _typeshed()
    stubs = typeshed / "stubs" if typeshed is not None else None
    if stubs is None or not stubs.is_dir():
        return ()
    return tuple(sorted(path for path in stubs.glob(f"*/{top}") if path.is_dir()))


def typeshed_stdlib() -> Path | None:
    """The standard library's stubs in jedi's typeshed copy, or None."""
    typeshed = _typeshed()
    library = typeshed / "stdlib" if typeshed is not None else None
    return library if library is not None and library.is_dir() else None


@functools.cache
def _typeshed() -> Path | None:
    try:
        spec = importlib.util.find_spec("jedi")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "third_party" / "typeshed"
