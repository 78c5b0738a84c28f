"""Name and usage heuristics: a type for a parameter nobody annotated, from how it is named and
how the function's body uses it.

*Usage* is read from the source: ``isinstance(x, Foo)`` names a type outright; ``x.items()``,
``x.lower()``, ``x.read()``, ``len(x)``, ``x + 1``, ``x(...)``, ``open(x)`` each say what ``x``
must support; attributes that no builtin type has point to the package's own classes that have
them all (duck typing: ``G.adj`` and ``G.nodes`` → the package's graph class). *Names* cover the
conventions of the ecosystem (``path`` → a file in the sandbox, ``dt`` → a datetime, ``sock``
→ a connected loopback socket, ``exc_type`` → an exception class, ``year`` → a plausible year).
Siblings' defaults are the last hint: ``(start, stop=10)`` → ``start`` is probably an int too.
"""

from __future__ import annotations

import ast
import datetime
import functools
import inspect
import io
import re
import socket
import textwrap
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apiprof.engine.scenarios.classnames import snake_case
from apiprof.engine.scenarios.typetext import (
    BinaryFileMarker,
    DirectoryMarker,
    PathMarker,
    TextFileMarker,
    evaluate_type,
    module_namespace,
)


class SameClassMarker:
    """Annotation marker: an instance of the class whose method is being called."""


class SocketMarker:
    """Annotation marker: one end of a connected loopback socket pair."""


class TracebackMarker:
    """Annotation marker: a real traceback object (of a caught exception)."""


class CharMarker:
    """Annotation marker: a one-character string."""


_NAME_GUESSES: dict[str, Any] = {}
for _names, _annotation in [
    (
        "text s1 s2 string name word prefix suffix sep separator msg message doc line pattern "
        "placeholder label title fmt chars instring input_string source src content contents "
        "value_str token key_name attr attribute tag tagname fieldname field_name string_ strg "
        "template markup html xml code expr expression query header headers_text keyword "
        "delimiter quote prompt description comment unit sql anchor",
        str,
    ),
    ("char ch c", CharMarker),
    (
        "n k i j r count size width length num index idx pos start stop step depth indent limit "
        "ndigits places base times level levels steps distance max_size max_count loc offset "
        "nbytes maxsize lineno line_number col column precision digits bits port nth amount "
        "repeat repeats seed maxlen minlen padding capacity typecode",
        int,
    ),
    ("u w node n1 n2 u_of_edge v_of_edge start_node end_node vertex nbr neighbor", int),  # graphs
    ("year", typing.Literal[2024]),
    ("month", typing.Literal[6]),
    ("day", typing.Literal[15]),
    ("hour hours", typing.Literal[12]),
    ("minute minutes second seconds", typing.Literal[30]),
    ("h l v g b q z mu sigma p alpha beta ratio weight scale factor tolerance tol eps", float),
    ("x y", float | list[int]),
    ("s", str | float),
    (
        "data iterable iterables seq sequence items values xs ys elements lst array arr points "
        "numbers samples vec1 vec2 signal kernel xarr it iterator pool population args toks "
        "tokens nodes edges words keys entries elems members children collection",
        list[int],
    ),
    ("list_of_lists m1 m2 matrix rows", list[list[int]]),
    ("pairs key_value_pairs", list[tuple[str, int]]),
    ("obj o object item element elem value val thing target instance default", Any),
    (
        "func function fn f key keyfunc pred predicate callback valuefunc reducefunc validator "
        "wrapping_func handler hook factory action fget fset method callable_ cb decorator "
        "caller wrapper",
        Callable[..., Any],
    ),
    (
        "exception exc_type exctype etype exc_class exception_type error_class expected_exception",
        type[Exception],
    ),
    ("exc exc_value exc_val evalue err error e exc_info_value", ValueError),
    ("tb exc_tb traceback trace_back", TracebackMarker),
    (
        "mapping d dct dictionary kwargs attrs params options opts config settings env",
        dict[str, int],
    ),
    ("fp file stream fileobj fobj f_obj infile outfile fh handle_file buf_file", TextFileMarker),
    ("bytestream binary_file", BinaryFileMarker),
    (
        "bs buf buffer byts byte_string bytestring payload packed blob raw data_bytes chunk octets",
        bytes,
    ),
    (
        "path filename fname file_name filepath file_path pathname path_name infilename "
        "outfilename",
        PathMarker,
    ),
    ("dirname directory dir_name dirpath folder root_dir rootdir dir_path", DirectoryMarker),
    ("sock socket conn connection client_socket", SocketMarker),
    (
        "dt datetime when timestamp_dt start_dt end_dt dtstart until after before dt1 dt2 moment",
        datetime.datetime,
    ),
    ("date d1 d2 start_date end_date", datetime.date),
    ("td delta timedelta duration interval", datetime.timedelta),
    ("tz tzinfo timezone zone", datetime.timezone),
    ("other", SameClassMarker),
    ("url uri href link endpoint", typing.Literal["https://example.com/a/b?q=1#top"]),
    ("email address mail", typing.Literal["someone@example.com"]),
    ("host hostname domain server", typing.Literal["example.com"]),
    ("ip ipaddr ip_address", typing.Literal["127.0.0.1"]),
    ("net network cidr subnet", typing.Literal["127.0.0.0/24"]),
    ("version ver version_string", typing.Literal["1.2.3"]),
    ("encoding enc charset codec", typing.Literal["utf-8"]),
    ("errors", typing.Literal["strict"]),
    ("lang language locale", typing.Literal["en"]),
    ("regex re_pattern expected_regex unexpected_regex", typing.Literal[r"\w+"]),
    ("timestr time_string", typing.Literal["2024-06-15 12:30:00", "12:30:00"]),
    ("datestr date_string", typing.Literal["2024-06-15 12:30:00", "2024-06-15"]),
    ("tzstr tz_string tzname_str", typing.Literal["+02:00", "UTC"]),
    ("json_string json_text json_str", typing.Literal['{"a": [1, 2, 3], "b": null}']),
    ("cls klass class_ type_ typ kind", type),
    ("str_ unicode_", str),  # named after the type they are
    ("int_ integer", int),
    ("float_", float),
    ("bytes_ bytearray_", bytes),
    ("list_ lst_", list[int]),
    ("dict_", dict[str, int]),
    ("set_", set[int]),
    ("tuple_", tuple[int, ...]),
    ("flag enabled strict verbose reverse", bool),
]:
    _NAME_GUESSES.update(dict.fromkeys(_names.split(), _annotation))


def guess_from_name(name: str) -> Any:
    """An annotation for a well-known unannotated parameter name, or None (no safe guess)."""
    if name in _NAME_GUESSES:
        return _NAME_GUESSES[name]
    lowered = snake_case(name).strip("_")
    if lowered in _NAME_GUESSES:
        return _NAME_GUESSES[lowered]
    for suffix, annotation in _SUFFIXES:
        if lowered.endswith(suffix):
            return annotation
    paired = re.fullmatch(r"([a-z]\w*?)(?:_[ab]|_?\d)", lowered)  # enc_a and enc_b: two of one
    if paired and paired.group(1) in _NAME_GUESSES:
        return _NAME_GUESSES[paired.group(1)]
    singular = _NAME_GUESSES.get(lowered[:-1]) if lowered.endswith("s") else None
    known = singular is not None and singular is not Any  # `defaults` is no list of anything
    return typing.cast(Any, list)[singular] if known else None  # funcs, paths: several of one


_SUFFIXES: list[tuple[str, Any]] = [
    ("_path", PathMarker),
    ("_file", TextFileMarker),
    ("_dir", DirectoryMarker),
    ("_func", Callable[..., Any]),
    ("_callback", Callable[..., Any]),
    ("_count", int),
    ("_node", int),
    ("_neighbor", int),
    ("_iterations", int),
    ("_size", int),
    ("_len", int),
    ("_index", int),
    ("_num", int),
    ("_name", str),
    ("_str", str),
    ("_text", str),
    ("_list", list[int]),
    ("_dict", dict[str, int]),
    ("_map", dict[str, int]),
    ("_bytes", bytes),
    ("_date", datetime.date),
    ("_time", datetime.datetime),
    ("_dt", datetime.datetime),
    ("_url", typing.Literal["https://example.com/a/b?q=1#top"]),
    ("_chars", str),
    ("_type", type),
    ("_cls", type),
    ("_class", type),
]


# -- usage --------------------------------------------------------------------------------------


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
    item_attributes: set[str] = field(default_factory=set)  # item.attr for item in x
    # for a, b in x: how the body uses each name the items are unpacked into
    unpacked: list[Usage] = field(default_factory=list)
    # a, b = x: how the body uses each name x itself is unpacked into
    destructured: list[Usage] = field(default_factory=list)
    # read somewhere other than stored as it is (``self.x = x``, ``return x``): None of the
    # reads says what it must be only when this stays False
    handled: bool = False


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
    elif isinstance(parent, ast.Call):
        if parent.func is node:
            usage.called = True
        else:
            name = _call_name(parent.func)
            if (
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


def _call_name(func: ast.expr) -> str:
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
    candidates = []
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
    sibling's type (``major, minor``), else is a string."""
    said = []
    for part in parts:
        strong, weak = infer_from_usage(part, module, classes)
        numbers = [v for v in part.compared_to if type(v) is int]  # `major != 1`: that one
        said.append(typing.Literal[numbers[0]] if numbers else next(iter([*strong, *weak]), None))
    known = next((typed for typed in said if typed is not None), str)
    return typing.cast(Any, tuple)[tuple(known if typed is None else typed for typed in said)]


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
    return frozenset(
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and isinstance(node.ctx, ast.Store)
    )


def unconstrained(usage: Usage | None) -> bool:
    """Whether the body never asks anything of the parameter: it is unused (a callback's
    ``_``) or only stored and returned (an exception's payload), so any value will do."""
    return usage is not None and not usage.handled and usage == Usage()


def sibling_default(signature: inspect.Signature, parameter: str) -> Any:
    """The type of the nearest sibling's plain default (``(start, stop=10)`` → int), or None."""
    names = list(signature.parameters)
    index = names.index(parameter)
    ordered = sorted(range(len(names)), key=lambda i: (abs(i - index), i))
    for position in ordered:
        default = signature.parameters[names[position]].default
        if default is inspect.Parameter.empty or default is None or isinstance(default, bool):
            continue
        if type(default) in (int, float, str, bytes):
            return type(default)
    return None
