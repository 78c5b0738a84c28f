"""Optional dependencies: whether a failure means a part of the package needs something that is
not installed (an extra), which is its own category in a scan, not a fault of the package."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import inspect
import os
import re
import sys
import traceback

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
        found = (
            _extra_asked_for(message, package)
            or _imported_by_the_package(current, package)
            or _said_not_installed(current, message, package)
        )
        if not found and isinstance(current, ImportError):
            found = _absent_requirement_named(message, package)
        if found:
            return found
        current = current.__cause__ or current.__context__
    return ""


def _imported_by_the_package(error: BaseException, package: str) -> str:
    """The module an import statement in the package's own source failed to find, where it is
    used (``import matplotlib`` inside ``tqdm_gui``), though the distribution does not declare
    it; not a name the call made up (``import_module(name)``) nor a module of the package."""
    name = str(getattr(error, "name", "") or "") if isinstance(error, ModuleNotFoundError) else ""
    top, own = name.split(".")[0], package.split(".")[0]
    if not top or top == own or _importable(top):
        return ""
    statement = re.compile(rf"\s*(from\s+{re.escape(top)}\b[\w.]*\s+import|import\s+{top}\b)")
    line = _package_line(error, package)
    return top if statement.match(line) else ""


_NOT_INSTALLED = re.compile(
    r"\b([A-Za-z][\w.-]*) (?:is|are) not (?:installed|available)|"
    r"(?i:please install|requires? the) ([A-Za-z][\w.-]*)"
)
"""A message saying which library is absent (``Beaker is not installed``)."""


def _said_not_installed(error: BaseException, message: str, package: str) -> str:
    """A library the message says is not installed, that cannot be imported here, and that
    the package's module which raised tries to import (``try: from beaker import cache``
    at import time, a flag set when it fails, and an error of its own when the part is used)."""
    own = package.split(".")[0]
    for groups in _NOT_INSTALLED.findall(message):
        word = next(group for group in groups if group)
        module = word.lower()
        if module.split(".")[0] == own or _importable(module):
            continue
        if _imported_where_raised(error, package, module):
            return word
    return ""


def _imported_where_raised(error: BaseException, package: str, module: str) -> bool:
    """Whether the package's own file whose code raised ``error`` has an import of
    ``module``."""
    own = package.split(".")[0]
    folder = os.path.dirname(str(getattr(sys.modules.get(own), "__file__", "") or ""))
    statement = re.compile(
        rf"^\s*(from\s+{re.escape(module)}\b|import\s+{re.escape(module)}\b)", re.M
    )
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if folder and frame.filename.startswith(folder + os.sep):
            try:
                with open(frame.filename, encoding="utf-8") as source:
                    return statement.search(source.read()) is not None
            except (OSError, UnicodeDecodeError):
                return False
    return False


def _package_line(error: BaseException, package: str) -> str:
    """The source line of the innermost frame of ``error``'s traceback in the package's own
    files ("" when none is)."""
    own = package.split(".")[0]
    folder = os.path.dirname(str(getattr(sys.modules.get(own), "__file__", "") or ""))
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if folder and frame.filename.startswith(folder + os.sep):
            return frame.line or ""
    return ""


def _named_in_package_line(error: BaseException, package: str, text: str) -> bool:
    """Whether the package's own line that raised ``error`` names ``text`` itself (not an
    attribute name the call was given)."""
    return re.search(rf"\b{re.escape(text)}\b", _package_line(error, package)) is not None


def _absent_requirement_named(message: str, package: str) -> str:
    """A requirement of the distribution (an extra's, mostly) that an ``ImportError`` of the
    package's own names (``IProgress not found. Please update jupyter and ipywidgets``) and
    that is not installed."""
    declared = declared_requirements(package.split(".")[0])
    for word in re.findall(r"[A-Za-z][\w.-]*[A-Za-z0-9]", message):
        if _normalized(word) in declared and not _installed(word):
            return word
    return ""


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module in sys.modules without a spec: it is there
        return True


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


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
            elif module in sys.stdlib_module_names and _named_in_package_line(
                current, package, f"{module}.{name}"
            ):
                version = ".".join(map(str, sys.version_info[:2]))
                return f"Python {version}'s {module} has no {name}: a newer Python has"
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
