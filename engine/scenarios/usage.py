"""Usage heuristics: what a function's body does with a parameter nobody annotated says what it
must be.

``isinstance(x, Foo)`` names a type outright; ``x.items()``, ``x.lower()``, ``x.read()``,
``len(x)``, ``x + 1``, ``x(...)``, ``open(x)`` each say what ``x`` must support; attributes that
no builtin type has point to the package's own classes that have them all (duck typing:
``G.adj`` and ``G.nodes`` → the package's graph class); a parameter the body never asks
anything of takes any value.
"""

from __future__ import annotations

import ast
import datetime
import functools
import inspect
import io
import socket
import textwrap
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from apiprof.engine.scenarios.concatenated import share_of_concatenation
from apiprof.engine.scenarios.heuristics import CharMarker, ContextManagerMarker, SocketMarker
from apiprof.engine.scenarios.typetext import (
    BinaryFileMarker,
    PathMarker,
    TextFileMarker,
    evaluate_type,
    module_namespace,
)


@dataclass
class Usage:
    """What a function's body does with one parameter."""

    attributes: set[str] = field(default_factory=set)  # x.attr and x.method(...)
    isinstance_of: list[str] = field(default_factory=list)  # source text of isinstance's types
    called: bool = False
    iterated: bool = False  # for ... in x, list(x), sorted(x)
    subscripted: bool = False  # x[...]
    measured: bool = False  # len(x)
    arithmetic: bool = False  # x + 1, x * 2, -x
    as_int: bool = False  # range(x), int index, bit operations
    as_path: bool = False  # open(x), os.path.*(x)
    as_char: bool = False  # ord(x)
    compared_to: list[Any] = field(default_factory=list)  # constants x is compared with
    passed_to_str_method: bool = False  # "".join(x), sep.join(x) (x: strings)
    formatted: bool = False  # "%s" % x, f"{x}", "{}".format(x), str(x): any value prints
    entered: bool = False  # with x: (a context manager)
    item_attributes: set[str] = field(default_factory=set)  # item.attr for item in x
    # for a, b in x: how the body uses each name the items are unpacked into
    unpacked: list[Usage] = field(default_factory=list)
    # a, b = x: how the body uses each name x itself is unpacked into
    destructured: list[Usage] = field(default_factory=list)
    # read somewhere other than stored as it is (``self.x = x``, ``return x``): None of the
    # reads says what it must be only when this stays False
    handled: bool = False
    # the defaults of the package's parameters it is handed on to (``format_size(...,
    # binary=binary)`` where ``binary=False``): values of those types do (:mod:`.callees`)
    defaults: list[Any] = field(default_factory=list)


_PATH_CALLS = {"open", "exists", "isfile", "isdir", "getsize", "stat", "listdir", "scandir"}
_ITERATING_CALLS = {
    "list",
    "tuple",
    "set",
    "sorted",
    "sum",
    "min",
    "max",
    "enumerate",
    "zip",
    "iter",
    "frozenset",
    "any",
    "all",
    "map",
    "filter",
    "reversed",
    "dict",
}
_INT_CALLS = {"range", "chr", "bin", "hex", "oct"}


def function_tree(
    function: Callable[..., object],
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The syntax tree of a function's own source (cached), or None without source."""
    try:
        return _parsed(function)
    except TypeError:  # an unhashable callable
        return None


@functools.cache
def _parsed(function: Callable[..., object]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def constructor_of(cls: type) -> Callable[..., object]:
    """The function that takes a class's arguments: its own ``__init__``, else its own
    ``__new__`` (a named tuple that checks its fields), else the inherited ``__init__``."""
    own = vars(cls)
    if "__init__" in own:
        return typing.cast(Callable[..., object], own["__init__"])
    new = own.get("__new__")
    if isinstance(new, staticmethod):
        new = new.__func__
    if inspect.isfunction(new):
        return new
    inherited: Callable[..., object] = cls.__init__  # type: ignore[misc]  # read, not called
    return inherited


def usage_of(function: Callable[..., object], parameter: str) -> Usage | None:
    """How ``function``'s own body uses ``parameter`` (None when its source is unavailable)."""
    target = inspect.unwrap(getattr(function, "__func__", function))
    if inspect.isclass(target):
        target = constructor_of(target)
    tree = function_tree(target)
    if tree is None:
        return None
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return _usage_in(tree, parameter, parents, unpack=True)


def local_usage(code: types.CodeType, name: str) -> Usage | None:
    """How the function compiled to ``code`` uses its local variable ``name`` (a loop's or an
    assignment's target as well as a parameter), or None without source."""
    tree = function_tree(code)  # type: ignore[arg-type]  # getsource reads a code object too
    if tree is None:
        return None
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return _usage_in(tree, name, parents, unpack=False)


def _usage_in(tree: ast.AST, name: str, parents: Mapping[int, ast.AST], *, unpack: bool) -> Usage:
    """How ``tree`` uses the local ``name``; with ``unpack``, also what it does with the names
    the items of ``name`` are unpacked into (``for key, value in name``)."""
    usage = Usage()
    items: set[str] = set()  # names the loops over the parameter bind to its items
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            _note(usage, node, parents)
            usage.handled |= not _kept_as_is(node, parents)
            loop = parents.get(id(node))
            if (
                unpack
                and isinstance(loop, ast.Assign)
                and loop.value is node
                and len(loop.targets) == 1
                and isinstance(loop.targets[0], ast.Tuple)
                and not usage.destructured
            ):
                usage.destructured = _parts(tree, loop.targets[0], parents)
            share = share_of_concatenation(node, parents) if unpack else None
            if share is not None and not usage.destructured:
                usage.destructured = _parts(tree, share, parents)
            if not isinstance(loop, (ast.For, ast.comprehension)) or loop.iter is not node:
                continue
            if isinstance(loop.target, ast.Name) and loop.target.id != name:
                items.add(loop.target.id)
            elif isinstance(loop.target, ast.Tuple) and unpack and not usage.unpacked:
                usage.unpacked = _parts(tree, loop.target, parents)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in items
        ):
            usage.item_attributes.add(node.attr)
    return usage


def _parts(tree: ast.AST, target: ast.Tuple, parents: Mapping[int, ast.AST]) -> list[Usage]:
    """How the body uses each name of an unpacking target (``key, value``)."""
    return [
        _usage_in(tree, element.id, parents, unpack=False)
        if isinstance(element, ast.Name)
        else Usage()
        for element in target.elts
    ]


def _kept_as_is(node: ast.expr, parents: Mapping[int, ast.AST]) -> bool:
    """Whether this read of a name only stores it (in an attribute, a variable, a container
    being stored) or returns it: nothing that asks anything of the value."""
    parent = parents.get(id(node))
    while isinstance(parent, (ast.Tuple, ast.List)) or (
        isinstance(parent, ast.Dict) and node in parent.values
    ):
        node, parent = parent, parents.get(id(parent))
    if isinstance(parent, ast.Assign):  # `a, b = x` asks x for two items
        return parent.value is node and not isinstance(parent.targets[0], ast.Tuple)
    if isinstance(parent, ast.AnnAssign):
        return parent.value is node
    return isinstance(parent, ast.Return)


def _note(usage: Usage, node: ast.Name, parents: Mapping[int, ast.AST]) -> None:
    parent = parents.get(id(node))
    if isinstance(parent, ast.Attribute) and parent.value is node:
        usage.attributes.add(parent.attr)
    elif isinstance(parent, ast.FormattedValue):
        usage.formatted = True
    elif isinstance(parent, ast.withitem) and parent.context_expr is node:
        usage.entered = True
    elif isinstance(parent, ast.keyword):
        call = parents.get(id(parent))
        usage.formatted |= isinstance(call, ast.Call) and call_name(call.func) == "format"
    elif isinstance(parent, ast.Call):
        if parent.func is node:
            usage.called = True
        else:
            name = call_name(parent.func)
            if name in ("format", "str", "repr") and node in parent.args:
                usage.formatted = True
            elif (
                name == "isinstance"
                and parent.args
                and parent.args[0] is node
                and len(parent.args) > 1
            ):
                usage.isinstance_of.append(ast.unparse(parent.args[1]))
            elif name in _PATH_CALLS:
                usage.as_path = True
            elif name in _ITERATING_CALLS:
                usage.iterated = True
            elif name in _INT_CALLS:
                usage.as_int = True
            elif name == "len":
                usage.measured = True
            elif name == "ord":
                usage.as_char = True
            elif name == "join" and isinstance(parent.func, ast.Attribute):
                usage.passed_to_str_method = isinstance(parent.func.value, (ast.Constant, ast.Name))
    elif isinstance(parent, ast.Subscript) and parent.value is node:
        usage.subscripted = True
    elif isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
        usage.iterated = True
    elif isinstance(parent, ast.BinOp):
        usage.arithmetic = True
        if isinstance(
            parent.op, (ast.BitAnd, ast.BitOr, ast.LShift, ast.RShift, ast.FloorDiv, ast.Mod)
        ):
            other = parent.right if parent.left is node else parent.left
            if isinstance(other, ast.Constant) and isinstance(other.value, int):
                usage.as_int = True
            if (
                isinstance(parent.op, ast.Mod)
                and parent.left is not node
                and isinstance(other, ast.Constant)
                and isinstance(other.value, str)
            ):
                usage.as_int = False  # "%s" % x: anything
                usage.arithmetic = False
                usage.formatted = True
    elif (
        isinstance(parent, ast.Tuple)
        and isinstance(parents.get(id(parent)), ast.BinOp)
        and _formats_with_text(typing.cast(ast.BinOp, parents.get(id(parent))), parent)
    ):
        usage.formatted = True  # "%s and %s" % (x, y)
    elif isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.Invert)):
        usage.arithmetic = True
    elif isinstance(parent, ast.Compare):
        for other in (parent.left, *parent.comparators):
            if isinstance(other, ast.Constant) and other is not node:
                usage.compared_to.append(other.value)
            if isinstance(other, (ast.Tuple, ast.List, ast.Set)) and isinstance(
                parent.ops[0], ast.In
            ):
                usage.compared_to += [e.value for e in other.elts if isinstance(e, ast.Constant)]


def call_name(func: ast.expr) -> str:
    """``f`` of ``f(...)`` and of ``obj.f(...)``; "" for anything else."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


_BUILTIN_DUCKS: list[tuple[Any, type]] = [
    (str, str),
    (bytes, bytes),
    (list[int], list),
    (dict[str, int], dict),
    (set[int], set),
    (datetime.datetime, datetime.datetime),
    (datetime.date, datetime.date),
    (datetime.timedelta, datetime.timedelta),
    (TextFileMarker, io.StringIO),
    (BinaryFileMarker, io.BytesIO),
    (SocketMarker, socket.socket),
    (int, int),
    (float, float),
]
_ANY_OBJECT = set(dir(object))
_PLAIN_ITEMS = (str, bytes, int, float, dict, list)
"""Item types a list built for a parameter may hold (values that need no building)."""


def infer_from_usage(
    usage: Usage,
    module: types.ModuleType | None,
    classes: Mapping[str, type],
) -> tuple[list[Any], list[Any]]:
    """Candidate annotations for a parameter used as ``usage`` says, most telling first, as
    (strong, weak): an ``isinstance`` check, a string compared with, a method only one type has
    are strong; ``x + 1`` or ``len(x)`` fit many types, so a well-known name outranks them."""
    candidates: list[Any] = []
    names = {**module_namespace(module), **classes}
    for text in usage.isinstance_of:
        evaluated = evaluate_type(text.strip("()"), names) if not text.startswith("(") else None
        if text.startswith("("):
            members = [
                evaluate_type(part, names) for part in text.strip("()").split(",") if part.strip()
            ]
            candidates.extend(member for member in members if member is not None)
        elif evaluated is not None:
            candidates.append(evaluated)
    strings = [value for value in usage.compared_to if isinstance(value, str)]
    if strings:
        candidates.append(typing.Literal[tuple(dict.fromkeys(strings))])
    if usage.as_path:
        candidates.append(PathMarker)
    if usage.as_char:
        candidates.append(CharMarker)
    if usage.entered:
        candidates.append(ContextManagerMarker)
    attributes = usage.attributes - _ANY_OBJECT
    if attributes:
        candidates.extend(
            annotation for annotation, runtime in _BUILTIN_DUCKS if attributes <= set(dir(runtime))
        )
        candidates.extend(_package_ducks(attributes, classes))
    if usage.destructured:  # `major, minor = x`: a tuple, each part typed by its own use
        candidates.append(_parts_type(usage.destructured, module, classes))
    if usage.unpacked:  # `for key, value in x`: pairs, each part typed by its own use
        pairs = _parts_type(usage.unpacked, module, classes)
        candidates.append(typing.cast(Any, list)[pairs])
    item_attributes = usage.item_attributes - _ANY_OBJECT
    if item_attributes:  # `[t.upper() for t in tokens]`: a list of what has those methods
        candidates.extend(
            typing.cast(Any, list)[item]
            for item in _PLAIN_ITEMS
            if item_attributes <= set(dir(item))
        )
    strong = list(dict.fromkeys(candidates))
    candidates = [type(value) for value in usage.defaults]
    if usage.called:
        candidates.append(Callable[..., Any])
    numbers = [
        value
        for value in usage.compared_to
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    ]
    if usage.as_int or (numbers and all(isinstance(v, int) for v in numbers)):
        candidates.append(int)
    if usage.arithmetic:
        candidates.append(float if any(isinstance(v, float) for v in numbers) else int)
    if usage.passed_to_str_method:
        candidates.append(list[str])
    if usage.iterated or usage.subscripted or usage.measured:
        candidates.append(list[int])
        if usage.measured or usage.subscripted:
            candidates.append(str)
    return strong, [c for c in dict.fromkeys(candidates) if c not in strong]


def _parts_type(
    parts: list[Usage], module: types.ModuleType | None, classes: Mapping[str, type]
) -> Any:
    """``tuple[...]`` of what each part's use says; a part nothing is asked of takes a typed
    sibling's plain type (``major, minor``: numbers), else is a string (``kind, text, line``
    where only ``kind`` is called: one callable, not three)."""
    said = []
    for part in parts:
        strong, weak = infer_from_usage(part, module, classes)
        numbers = [v for v in part.compared_to if type(v) is int]  # `major != 1`: that one
        said.append(typing.Literal[numbers[0]] if numbers else next(iter([*strong, *weak]), None))
    known = next((typed for typed in said if _plain(typed)), str)
    return typing.cast(Any, tuple)[tuple(known if typed is None else typed for typed in said)]


def _plain(typed: Any) -> bool:
    """A value type a sibling part may share: a number, a text, a literal."""
    return typed in (int, float, str, bytes, bool) or typing.get_origin(typed) is typing.Literal


def _package_ducks(attributes: set[str], classes: Mapping[str, type]) -> list[type]:
    """The package's concrete classes that have every attribute (set in ``__init__`` counts)."""
    found = []
    for cls in classes.values():
        if inspect.isabstract(cls) or issubclass(cls, BaseException):
            continue
        known = set(dir(cls)) | _init_attributes(typing.cast(Callable[..., object], cls))
        if attributes <= known:
            found.append(cls)
    found.sort(key=lambda cls: (len(cls.__mro__), cls.__name__))  # the most basic class first
    return found[:3]


@functools.cache
def _init_attributes(cls: Callable[..., object]) -> frozenset[str]:
    init = vars(cls).get("__init__")
    if not inspect.isfunction(init):
        return frozenset()
    tree = function_tree(init)
    if tree is None:
        return frozenset()
    return frozenset(self_attributes(tree, ast.Store))


def self_attributes(tree: ast.AST, context: type[ast.expr_context] = ast.Load) -> list[str]:
    """``x`` of every ``self.x`` in ``tree`` read (or, with ``ast.Store``, set), in order."""
    return [
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and isinstance(node.ctx, context)
    ]


def _formats_with_text(operation: ast.BinOp, operand: ast.expr) -> bool:
    """Whether ``operation`` is ``"text" % operand``."""
    return (
        isinstance(operation.op, ast.Mod)
        and operation.right is operand
        and isinstance(operation.left, ast.Constant)
        and isinstance(operation.left.value, str)
    )


def only_formatted(usage: Usage | None) -> bool:
    """Whether the body only prints the parameter into text (an exception's message): a
    string is then as good a value as any, and one nobody can refuse."""
    if usage is None or not usage.formatted:
        return False
    return replace(usage, formatted=False, handled=False) == Usage()


def unconstrained(usage: Usage | None) -> bool:
    """Whether the body never asks anything of the parameter: it is unused (a callback's
    ``_``) or only stored and returned (an exception's payload), so any value will do."""
    return usage is not None and not usage.handled and usage == Usage()
