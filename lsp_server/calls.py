"""Call sites in a Python module, and the names they call when the source alone says so.

Inlay hints and code lenses need the target of every call in a file: a 2,000-line module has
thousands, and asking jedi to infer each costs about a millisecond. Most calls name their target
outright — ``json.dumps(x)`` after ``import json``, ``dumps(x)`` after ``from json import dumps``,
``len(x)`` — so those are resolved from the import statements in a single pass over parso's tree
(the tree jedi itself parses, cached per file). Only calls on locals, ``self``, call results and
names the file rebinds are left for jedi (:meth:`.resolve.Resolver.infer_calls`).
"""

from __future__ import annotations

import builtins
import hashlib
from dataclasses import dataclass, field
from typing import Any

from parso.python import tree

SCOPE_TYPES = ("funcdef", "classdef")
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class CallSite:
    callee: tuple[int, int]  # (1-based line, column) of the called name: where jedi infers it
    end: tuple[int, int]  # (1-based line, column) just after the closing parenthesis
    dotted: str  # "json.dumps" when the callee is a dotted name, "" for other expressions
    key: tuple[str, int, int]  # stable while the code around it is unchanged (jedi answer cache)


@dataclass(frozen=True)
class FunctionDef:
    name: str
    start: tuple[int, int]  # (1-based line, column) of the ``def`` keyword (or ``async``)
    sites: tuple[int, ...]  # indices of the call sites in its own body (nested defs excluded)


@dataclass
class CallMap:
    sites: list[CallSite] = field(default_factory=list)
    functions: list[FunctionDef] = field(default_factory=list)
    imports: dict[str, str] = field(default_factory=dict)  # local name → dotted target
    ambiguous: set[str] = field(default_factory=set)  # names bound other ways too

    def target(self, site: CallSite) -> str | None:
        """The dotted name a call refers to, when the module's imports settle it."""
        if not site.dotted:
            return None
        root, _, rest = site.dotted.partition(".")
        if root in self.ambiguous:
            return None
        if root in self.imports:
            return self.imports[root] + ("." + rest if rest else "")
        if root in _BUILTINS:
            return "builtins." + site.dotted
        return None


def map_calls(module: tree.Module) -> CallMap:
    calls = CallMap()
    _collect_bindings(module, calls)
    globals_key = _digest(
        "".join(child.get_code() for child in module.children if _binds_globally(child))
    )
    _walk(module, calls, (1, globals_key), function=None)
    return calls


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _binds_globally(statement: tree.BaseNode | tree.Leaf) -> bool:
    """Module-level statements that bind names jedi may use to infer calls anywhere."""
    if statement.type in ("funcdef", "classdef", "decorated", "async_stmt", "endmarker"):
        return False
    return any(
        child.type in ("import_name", "import_from", "expr_stmt", "for_stmt", "with_stmt")
        for child in [statement, *getattr(statement, "children", [])]
    )


def _collect_bindings(module: tree.Module, calls: CallMap) -> None:
    targets: dict[str, set[str]] = {}
    for imp in module.iter_imports():
        for name, target in _import_bindings(imp):
            targets.setdefault(name, set()).add(target)
    calls.imports = {name: next(iter(t)) for name, t in targets.items() if len(t) == 1}
    calls.ambiguous = {name for name, t in targets.items() if len(t) > 1}
    for name, leaves in module.get_used_names().items():
        if any(
            leaf.is_definition() and leaf.search_ancestor("import_name", "import_from") is None
            for leaf in leaves
        ):
            calls.ambiguous.add(name)
            calls.imports.pop(name, None)


def _dotted(node: tree.BaseNode | tree.Leaf) -> str:
    return node.get_code(include_prefix=False).replace(" ", "")


def _import_bindings(imp: tree.Import) -> list[tuple[str, str]]:
    """(local name, dotted target) for absolute imports; star and relative imports bind none."""
    if not isinstance(imp, tree.ImportFrom):
        return [
            (alias, target) for part in imp.children[1:] for alias, target in _imported(part, "")
        ]
    if imp.level or imp.is_star_import():
        return []
    module = ".".join(n.value for n in imp.get_from_names())
    after = imp.children[
        [c.type == "keyword" and c.value == "import" for c in imp.children].index(True) + 1 :
    ]
    return [(alias, target) for part in after for alias, target in _imported(part, module + ".")]


def _imported(node: Any, prefix: str) -> list[tuple[str, str]]:
    """Bindings of one piece of an import statement (``prefix`` is ``"module."`` for from-imports)."""
    if node.type == "name":
        return [(node.value, prefix + node.value)]
    if node.type in ("dotted_as_names", "import_as_names"):
        return [b for child in node.children[::2] for b in _imported(child, prefix)]
    if node.type in ("dotted_as_name", "import_as_name"):  # x as y
        return [(node.children[-1].value, prefix + _dotted(node.children[0]))]
    if node.type == "dotted_name":  # import a.b binds a
        return [(node.children[0].value, node.children[0].value)]
    return []  # parentheses


def _walk(
    node: tree.BaseNode,
    calls: CallMap,
    scope: tuple[int, str],
    function: list[int] | None,
) -> None:
    """``scope`` is (first line, key) of the innermost def or class, or of the module-level
    statement: jedi's answer for a call stays valid while that text and the module's global
    bindings are unchanged."""
    for child in node.children:
        if node.type == "file_input":
            scope = (child.start_pos[0], scope[1][:16] + _digest(child.get_code()))
        if child.type in SCOPE_TYPES:
            inner = (child.start_pos[0], scope[1][:16] + _digest(child.get_code()))
            sites: list[int] = []
            _walk(child, calls, inner, sites if child.type == "funcdef" else None)
            if child.type == "funcdef":
                start = child.parent if child.parent.type == "async_stmt" else child
                calls.functions.append(FunctionDef(child.name.value, start.start_pos, tuple(sites)))
            continue
        if child.type in ("atom_expr", "power"):
            _calls_in(child, calls, scope, function)
        if isinstance(child, tree.BaseNode):
            _walk(child, calls, scope, function)


def _calls_in(
    expr: tree.BaseNode,
    calls: CallMap,
    scope: tuple[int, str],
    function: list[int] | None,
) -> None:
    """The calls made by one ``a.b(x).c[0](y)`` chain (arguments are walked by the caller)."""
    parts = [c for c in expr.children if not (c.type == "keyword" and c.value == "await")]
    base = parts[0]
    dotted = base.value if base.type == "name" else ""
    last_name = base if base.type == "name" else None
    for trailer in parts[1:]:
        if trailer.type != "trailer":
            break  # the ** of a power node
        opener = trailer.children[0].value
        if opener == "." and trailer.children[1].type == "name":
            last_name = trailer.children[1]
            dotted = f"{dotted}.{last_name.value}" if dotted else ""
            continue
        if opener == "(" and last_name is not None:
            line, column = last_name.start_pos
            calls.sites.append(
                CallSite(
                    (line, column), trailer.end_pos, dotted, (scope[1], line - scope[0], column)
                )
            )
            if function is not None:
                function.append(len(calls.sites) - 1)
        last_name, dotted = None, ""
