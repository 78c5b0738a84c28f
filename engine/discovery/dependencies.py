"""Optional dependencies: whether a failure means a part of the package needs something that is
not installed (an extra), which is its own category in a scan, not a fault of the package."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import inspect
import re
import sys

from apiprof.engine.discovery.messages import exception_message


def missing_dependency(error: str, package: str) -> str:
    """The module an import failure says is missing, when it is not part of ``package`` (an
    optional extra that is not installed); "" otherwise."""
    prefix = "ModuleNotFoundError: No module named "
    if not error.startswith(prefix):
        return ""
    name = error.removeprefix(prefix).strip().strip("'\"")
    top = package.split(".")[0]
    return "" if name == top or name.startswith(top + ".") else name


def optional_dependency(error: BaseException, package: str) -> str:
    """The dependency ``package``'s distribution declares (an extra, mostly) whose absence
    ``error`` or an exception it chains from reports — networkx imports numpy inside the
    functions that need it — or "" (a module name made up by synthesised arguments is not one).
    The package's metadata is read only for an error that names a module or an extra: reading
    it takes most of a second in a large environment, and most failures name neither."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        # the error itself, or a message that quotes one (a failure to build an argument)
        message = exception_message(current)
        names = re.findall(r"No module named '([\w.]+)'", message)
        if isinstance(current, ModuleNotFoundError) and current.name:
            names.insert(0, current.name)
        for name in names:
            if _normalized(name.split(".")[0]) in declared_requirements(package.split(".")[0]):
                return name.split(".")[0]
        extra = _extra_asked_for(message, package)
        if extra:
            return extra
        current = current.__cause__ or current.__context__
    return ""


def _extra_asked_for(message: str, package: str) -> str:
    """``"pyparsing[diagrams]"`` when the message tells to ``pip install`` an extra of the
    package's own distribution (raised where an optional part is used without it), else ""."""
    top = package.split(".")[0]
    for name, extra in re.findall(r"pip install\W*([\w.-]+)\[([\w,.-]+)\]", message):
        if _normalized(name) in {*map(_normalized, _distributions_of(top)), _normalized(top)}:
            return f"{name}[{extra}]"
    return ""


@functools.cache
def _distributions_of(package: str) -> tuple[str, ...]:
    """The distributions that provide the top-level module ``package`` (its own name when
    none is known)."""
    return tuple(importlib.metadata.packages_distributions().get(package, [package]))


def unavailable_here(error: BaseException, package: str) -> str:
    """Why ``error`` (or a message quoting it) means the API needs what this machine lacks: a
    module of ``package`` binds the attribute it was asked for only in an import-time branch
    that did not run here (``colorama.win32`` defines the console functions only where
    ``ctypes.WinDLL`` exists); "" otherwise."""
    top = package.split(".")[0]
    current: BaseException | None = error
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for module, name in re.findall(
            r"module '([\w.]+)' has no attribute '(\w+)'", exception_message(current)
        ):
            if module == top or module.startswith(top + "."):
                branch = _conditional_branch(module, name)
                if branch:
                    return f"{module} defines {name} only {branch}, which did not run here"
        current = current.__cause__ or current.__context__
    return ""


@functools.cache  # asked again for every entry point that fails on the same missing name
def _conditional_branch(module_name: str, name: str) -> str:
    """Where ``module_name`` binds ``name`` only conditionally at import time ("when the try
    block at line 5 succeeds", "when `sys.platform == 'win32'`"), or "" (bound
    unconditionally, only under ``if __name__ == "__main__"``, or no source)."""
    module = sys.modules.get(module_name)
    try:
        tree = ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError, SyntaxError):
        return ""
    if tree is None or name in _bound_in(tree.body):
        return ""
    for statement in tree.body:
        if isinstance(statement, ast.If) and "__main__" not in ast.unparse(statement.test):
            if name in _bound_in(statement.body):
                return f"when `{ast.unparse(statement.test)}`"
            if name in _bound_in(statement.orelse):
                return f"unless `{ast.unparse(statement.test)}`"
        if isinstance(statement, ast.Try) and name in _bound_in(statement.orelse + statement.body):
            return f"when the import-time try block at line {statement.lineno} succeeds"
    return ""


def _bound_in(statements: list[ast.stmt]) -> set[str]:
    """Names these statements bind themselves (defs, classes, assignments, imports)."""
    bound: set[str] = set()
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            bound.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in statement.names)
    return bound


@functools.cache
def declared_requirements(package: str) -> frozenset[str]:
    """Normalised names of every requirement (extras included) of the distributions that
    provide ``package``."""
    metadata = importlib.metadata
    names: set[str] = set()
    for distribution in _distributions_of(package):
        try:
            requirements = metadata.requires(distribution) or []
        except metadata.PackageNotFoundError:
            continue
        names.update(
            _normalized(re.split(r"[\s\[;<>=!~(]", line, maxsplit=1)[0]) for line in requirements
        )
    return frozenset(names)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()
