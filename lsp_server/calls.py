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
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

from parso.python import tree

from apiprof.lsp_server.text import LINE_BREAK

SCOPE_TYPES = ("funcdef", "classdef")
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class CallSite:
    callee: tuple[int, int]  # (1-based line, column) of the called name: where jedi infers it
    end: tuple[int, int]  # (1-based line, column) just after the closing parenthesis
    dotted: str  # "json.dumps" when the callee is a dotted name, "" for other expressions
    key: tuple[int, int, int]  # stable while the code around it is unchanged (jedi answer cache)


@dataclass(frozen=True)
class FunctionDef:
    name: str
    start: tuple[int, int]  # (1-based line, column) of the ``def`` keyword (or ``async``)
    sites: tuple[int, ...]  # indices of the call sites in its own body (nested defs excluded)


@dataclass
class CallMap:
    sites: list[CallSite] = field(default_factory=list)
    functions: list[FunctionDef] = field(default_factory=list)
    imports: dict[str, set[str]] = field(default_factory=dict)  # local name → dotted targets
    defined: set[str] = field(default_factory=set)  # names bound other than by import
    _known: dict[str, str | None] = field(default_factory=dict)
    _by_end: tuple[list[tuple[int, int]], list[CallSite]] | None = None

    @property
    def by_end(self) -> list[CallSite]:
        """The call sites sorted by where they end (sorted once per version of the document)."""
        return self._sorted()[1]

    def ending_between(self, first: tuple[int, int], last: tuple[int, int]) -> range:
        """Indices into :attr:`by_end` of the calls whose closing parenthesis lies in [first,
        last] ((1-based line, column) pairs): a viewport or a whole file is two bisections."""
        ends = self._sorted()[0]
        return range(bisect_left(ends, first), bisect_right(ends, last))

    def _sorted(self) -> tuple[list[tuple[int, int]], list[CallSite]]:
        if self._by_end is None:
            ordered = sorted(self.sites, key=lambda site: site.end)
            self._by_end = [site.end for site in ordered], ordered
        return self._by_end

    def target(self, site: CallSite) -> str | None:
        """The dotted name a call refers to, when the module's imports settle it."""
        try:
            return self._known[site.dotted]
        except KeyError:
            found = self._known[site.dotted] = self._target(site.dotted)
            return found

    def _target(self, dotted: str) -> str | None:
        if not dotted:
            return None
        root, _, rest = dotted.partition(".")
        if root in self.defined:
            return None
        imported = self.imports.get(root)
        if imported is not None:
            return (
                next(iter(imported)) + ("." + rest if rest else "") if len(imported) == 1 else None
            )
        return "builtins." + dotted if root in _BUILTINS else None


@dataclass(frozen=True)
class _Statement:
    """What one module-level statement contributes, lines counted from its first line (0)."""

    sites: tuple[CallSite, ...]
    functions: tuple[FunctionDef, ...]  # site indices within this statement
    imports: tuple[tuple[str, str], ...]
    defined: frozenset[str]


StatementCache = dict[int, _Statement]
MAX_CACHED_STATEMENTS = 50_000


def map_calls(module: tree.Module, source: str, cache: StatementCache | None = None) -> CallMap:
    """Every call in ``module`` (parsed from ``source``), with the imports that may name them.

    Work is done per module-level statement and kept in ``cache`` by the statement's text, so
    after an edit only the statements that changed are walked again.
    """
    text = _Slicer(source)
    statements = [c for c in module.children if c.type != "endmarker"]
    globals_key = hash(tuple(text(c) for c in statements if _binds_globally(c)))
    calls = CallMap()
    for statement in statements:
        key = hash((globals_key, text(statement)))
        found = cache.get(key) if cache is not None else None
        shift = statement.start_pos[0] - 1
        if found is None:
            found = _map_statement(statement, text, globals_key, shift)
            if cache is not None:
                if len(cache) > MAX_CACHED_STATEMENTS:
                    cache.clear()
                cache[key] = found
        first = len(calls.sites)
        calls.sites.extend(_moved(site, shift) for site in found.sites)
        calls.functions.extend(
            FunctionDef(f.name, (f.start[0] + shift, f.start[1]), tuple(i + first for i in f.sites))
            for f in found.functions
        )
        for name, target in found.imports:
            calls.imports.setdefault(name, set()).add(target)
        calls.defined |= found.defined
    return calls


def _moved(site: CallSite, lines: int) -> CallSite:
    (l1, c1), (l2, c2) = site.callee, site.end
    return CallSite((l1 + lines, c1), (l2 + lines, c2), site.dotted, site.key)


class _Slicer:
    """The source text of a node, sliced by position (parso's ``get_code`` rebuilds it leaf by
    leaf, which costs more than the rest of the walk)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0, *(m.end() for m in LINE_BREAK.finditer(source))]

    def __call__(self, node: Any) -> str:
        (l1, c1), (l2, c2) = node.start_pos, node.end_pos
        return self.source[self.starts[l1 - 1] + c1 : self.starts[l2 - 1] + c2]


def _binds_globally(statement: tree.BaseNode | tree.Leaf) -> bool:
    """Module-level statements that bind names jedi may use to infer calls anywhere."""
    if statement.type in ("funcdef", "classdef", "decorated", "async_stmt"):
        return False
    return any(
        child.type in ("import_name", "import_from", "expr_stmt", "for_stmt", "with_stmt")
        for child in [statement, *getattr(statement, "children", [])]
    )


@dataclass
class _Found:
    sites: list[CallSite] = field(default_factory=list)
    functions: list[FunctionDef] = field(default_factory=list)
    imports: list[tuple[str, str]] = field(default_factory=list)
    defined: set[str] = field(default_factory=set)


def _map_statement(statement: Any, text: _Slicer, globals_key: int, shift: int) -> _Statement:
    found = _Found()
    scope = (statement.start_pos[0], hash((globals_key, text(statement))), globals_key)
    _visit(statement, found, text, scope, None)
    return _Statement(
        tuple(_moved(site, -shift) for site in found.sites),
        tuple(
            FunctionDef(f.name, (f.start[0] - shift, f.start[1]), f.sites) for f in found.functions
        ),
        tuple(found.imports),
        frozenset(found.defined),
    )


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


def _visit(
    node: Any,
    found: _Found,
    text: _Slicer,
    scope: tuple[int, int, int],
    function: list[int] | None,
) -> None:
    """``scope`` is (first line, key, globals key) of the innermost def or class, or of the
    module-level statement: jedi's answer for a call stays valid while that text and the
    module's global bindings are unchanged (the key is position-free)."""
    kind = node.type
    if kind == "name":
        if node.is_definition() and node.search_ancestor("import_name", "import_from") is None:
            found.defined.add(node.value)
        return
    if kind in ("import_name", "import_from"):
        found.imports.extend(_import_bindings(node))
        return
    children = getattr(node, "children", None)
    if children is None:
        return
    if kind in SCOPE_TYPES:
        inner = (node.start_pos[0], hash((scope[2], text(node))), scope[2])
        sites: list[int] = []
        for child in children:
            _visit(child, found, text, inner, sites if kind == "funcdef" else None)
        if kind == "funcdef":
            start = node.parent if node.parent.type == "async_stmt" else node
            found.functions.append(FunctionDef(node.name.value, start.start_pos, tuple(sites)))
        return
    if kind in ("atom_expr", "power"):
        _calls_in(node, found, scope, function)
    for child in children:
        _visit(child, found, text, scope, function)


def _calls_in(
    expr: tree.BaseNode,
    found: _Found,
    scope: tuple[int, int, int],
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
            found.sites.append(
                CallSite(
                    (line, column), trailer.end_pos, dotted, (scope[1], line - scope[0], column)
                )
            )
            if function is not None:
                function.append(len(found.sites) - 1)
        last_name, dotted = None, ""
