"""Names a module imports only for type checking, imported for real to resolve its annotations.

Partly typed packages annotate with names from an ``if TYPE_CHECKING:`` block — ``cj:
CookieJar`` with ``from http.cookiejar import CookieJar``, ``hooks: _t.HooksInputType`` with
``from . import _types as _t`` — so their string annotations cannot be evaluated in the module's
globals. The block is read from the module's source and each import in it is tried (inside the
sandboxed worker, like every import of the package): what imports gives the annotations their
names; what does not (``_typeshed``, absent stub-only packages) is left out.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import sys
from typing import Any


@functools.cache
def type_checking_names(module_name: str) -> dict[str, Any]:
    """The names ``module_name``'s top-level ``if TYPE_CHECKING:`` blocks import ({} when its
    source cannot be read)."""
    module = sys.modules.get(module_name)
    try:
        tree = ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError, SyntaxError):
        tree = None
    if tree is None:
        return {}
    package = getattr(module, "__package__", None) or module_name.rpartition(".")[0]
    names: dict[str, Any] = {}
    _resolving.add(module_name)
    try:
        for node in tree.body:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for statement in node.body:
                    if isinstance(statement, ast.ImportFrom):
                        names.update(_imported_from(statement, package))
                    elif isinstance(statement, ast.Import):
                        names.update(_imported(statement))
                    elif isinstance(statement, DEFINITIONS):
                        names.update(_defined(statement, module, names))
    finally:
        _resolving.discard(module_name)
    return names


DEFINITIONS = (ast.ClassDef, ast.Assign, ast.AnnAssign)
"""What a ``TYPE_CHECKING`` block defines for annotations besides imports: a protocol class
(``class Encoder(Protocol)``), a type variable or alias (``E = TypeVar("E", bound=Encoder)``)."""

_resolving: set[str] = set()
"""Modules whose blocks are being read: two modules importing each other's type-checking names
would otherwise read each other without end."""


def _defined(statement: ast.stmt, module: Any, names: dict[str, Any]) -> dict[str, Any]:
    """The names a definition in the block binds, executed in the module's namespace with what
    the block imported so far (inside the sandboxed worker, like the package's own import);
    {} when it cannot run outside a type checker."""
    if isinstance(statement, ast.AnnAssign) and statement.value is None:
        return {}  # a bare declaration binds nothing
    namespace = {**vars(module), **names}
    before = set(namespace)
    try:
        code = compile(ast.Module(body=[statement], type_ignores=[]), module.__name__, "exec")
        exec(code, namespace)
    except Exception:
        return {}
    return {name: namespace[name] for name in set(namespace) - before}


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING`` (``t.TYPE_CHECKING``)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imported_from(statement: ast.ImportFrom, package: str) -> dict[str, Any]:
    relative = "." * statement.level + (statement.module or "")
    try:
        base = importlib.util.resolve_name(relative, package) if statement.level else relative
        module = importlib.import_module(base)
    except Exception:  # an import that only type checkers can satisfy
        return {}
    names: dict[str, Any] = {}
    for alias in statement.names:
        value = getattr(module, alias.name, None)
        if value is None and base not in _resolving:  # defined in that module's own block
            value = type_checking_names(base).get(alias.name)
        if value is None:  # a submodule: `from . import _types as _t`
            try:
                value = importlib.import_module(f"{base}.{alias.name}")
            except Exception:
                continue
        names[alias.asname or alias.name] = value
    return names


def _imported(statement: ast.Import) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for alias in statement.names:
        try:
            module = importlib.import_module(alias.name)
        except Exception:
            continue
        if alias.asname:
            names[alias.asname] = module
        else:  # `import a.b` binds `a`
            names[alias.name.split(".")[0]] = sys.modules[alias.name.split(".")[0]]
    return names
