"""Python syntax trees for APIs that take them: parsed from real source, never bare nodes.

Linters, code generators and import scanners take ``ast`` nodes. ``ast.AST()`` builds without
complaint but is an empty node no tool accepts (pyflakes' ``Checker`` looks the tree's class up
in a table of module-like nodes). So a module node is the parse of a program that uses every
construct of the running Python's grammar followed by ``n`` plain statements (the size axis: a
walker that dispatches on node classes then reaches each of its handlers), and any other class — ``ast.arg``, ``ast.AnnAssign``, the
categories ``ast.stmt`` and ``ast.expr`` — is the first node of that class in that program.

Tree walkers also name their handlers after node classes: ``visit_FunctionDef`` in an
``ast.NodeVisitor``, or the class name in capitals (``ARG``, ``ANNASSIGN``) where a checker
dispatches with ``getattr(self, type(node).__name__.upper())``. :func:`handled_node_class`
reads that name; :mod:`.visitors` asks it beside the package's own node classes.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass

from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize

_EVERY_CONSTRUCT = '''\
"""A module that uses every construct, so that any node class can be found in its parse."""
from __future__ import annotations
import os.path as osp
from collections import deque, OrderedDict as od
from . import sibling

CONSTANT: int = 1
names = [a for a in range(3) if a] + list({b: b for b in "xy"}) + [*{c for c in ()}]
total = sum(x * 2 for x in range(4)) ** 2 // 3 % 5 - -1 + (~1) << 1 >> 1 | 2 & 3 ^ 4
flag = not (1 < 2 <= 3 != 4 == 4 > 0 >= 0) and None is None or 1 in [1] or 2 not in () or b"1"
text = f"{total!r:>{CONSTANT}} {names[0]} {names[1:2]} {names[::2]}"
lam = lambda p, /, q=1, *rest, r, s=2, **more: (p, q, rest, r, s, more)
choice = 1 if flag else 2
pair = first, *others = (1, 2, 3)
matrix = (names @ names) / +total if total is not None else {1, 2}
del pair


@staticmethod
def decorated(a: int, b: str = "", *args: int, c: float, d: bytes = b"", **kw: object) -> None:
    global CONSTANT
    CONSTANT += 1
    assert a, "message"
    raise ValueError("x") from None


async def coroutine(items):
    async with items as held:
        async for item in held:
            await item
    return [i async for i in items]


def generator(limit):
    count = 0
    while count < limit:
        count += 1
        if count == 2:
            continue
        elif count > 5:
            break
        else:
            pass
        yield count
    yield from range(2)

    def inner():
        nonlocal count
        return count

    return inner


class Shape(object, metaclass=type):
    """A class."""

    sides: int

    def area(self) -> float:
        try:
            with open(osp.join("a", "b")) as one, open("c") as two:
                return float(one.read() + two.read())
        except (OSError, ValueError) as error:
            raise RuntimeError(str(error))
        finally:
            print("done")
        for key, value in {}.items():
            print(key, value)
        else:
            return 0.0


def matching(subject):
    match subject:
        case [1, 2, *rest]:
            return rest
        case {"key": value, **others}:
            return value, others
        case Shape(sides=3) | Shape(sides=4) as shape:
            return shape
        case str() if subject:
            return subject
        case None:
            return None
        case _:
            return (walrus := subject)
'''

_NEWER_CONSTRUCTS = {
    (3, 11): "try:\n    pass\nexcept* ValueError:\n    pass\n",
    (3, 12): "type Alias[T] = list[T]\ndef generic[T: int, *Ts, **P](x: T) -> T:\n    return x\n",
}
"""Syntax a later Python added: parsed only where the running one has it."""

_OTHER_MODES: dict[type, tuple[str, str]] = {
    ast.Expression: ("value + 1", "eval"),
    ast.Interactive: ("value = 1", "single"),
    ast.FunctionType: ("(int, str) -> bool", "func_type"),
}
"""Root nodes of the parser's other modes, with a source each parses."""

_STATEMENTS = (
    "value_{i} = [{i}, {i} + 1, str({i})]",
    "def function_{i}(a, b={i}):\n    return a * b if a else [b for _ in range(2)]",
    "class Class_{i}:\n    attribute: int = {i}\n    def method(self):\n        return self.attribute",
    "if value_{i}:\n    print(value_{i}[0], sep='')\nelse:\n    pass",
    "for item_{i} in range({i}):\n    total = item_{i} ** 2",
)
"""The statements a sized module is made of, in turn (the module for ``n`` has ``n``)."""


def is_syntax_class(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, ast.AST)


def syntax_node(cls: type, context: BuildContext, name: str) -> ast.AST:
    """A well-formed node of ``cls``: for a module (or any node), the program that uses every
    construct and ``context.n`` statements more; else the first node of ``cls`` in it."""
    if cls in (ast.AST, ast.mod, ast.Module):
        return ast.parse(python_source(context))
    if cls in _OTHER_MODES:
        source, mode = _OTHER_MODES[cls]
        return ast.parse(source, mode=mode)
    found = _first_node_of(cls)
    if found is None:
        raise CannotSynthesize(
            f"parameter {name!r}: no {cls.__name__} node is made by any construct of this Python"
        )
    return copy.deepcopy(found)


@dataclass(frozen=True)
class PythonSource:
    """Annotation marker: Python source text, the program that uses every construct and ``n``
    statements more (sized), for a text its module hands to ``ast.parse``."""


SOURCE_WORDS = frozenset(("source", "src", "code", "text", "program"))
"""Words of a parameter's name that say it may be source text."""


def takes_python_source(target: object, name: str) -> bool:
    """Whether ``name`` is text a tool of Python source parses: a parameter named like source
    (``source_text``, ``code``) of a callable whose module calls ``ast.parse``. A tool that
    marks or walks the tree it parses reaches a handler per construct only with a program
    that has them all (made-up prose is not Python, one word is a lone name)."""
    if not SOURCE_WORDS & set(name.lower().split("_")):
        return False
    module = getattr(target, "__module__", "") or ""
    return bool(module) and _parses_python(module)


@functools.cache
def _parses_python(module_name: str) -> bool:
    module = sys.modules.get(module_name)
    try:
        source = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        return False
    return "ast.parse(" in source


def python_source(context: BuildContext) -> str:
    context.sized = True
    return _every_construct_source() + sized_program(context.n)


def sized_program(n: int) -> str:
    """Python source of ``n`` statements of the kinds a module commonly holds."""
    return "\n".join(_STATEMENTS[i % len(_STATEMENTS)].format(i=i) for i in range(max(n, 1)))


def handled_node_class(method_name: str, owner_names: Callable[[], list[str]]) -> type | None:
    """The ``ast`` class a handler is named after: ``visit_X`` / ``depart_X``-style names whose
    ``X`` is an ``ast`` class, or the class name in capitals where the owner (its method names
    asked through ``owner_names``) has at least :data:`MIN_CAPITAL_HANDLERS` of them."""
    bare = method_name.lstrip("_")
    for prefix in ("visit_", "leave_", "depart_"):
        if bare.startswith(prefix):
            return _ast_classes().get(bare[len(prefix) :])
    if not bare.isupper():
        return None
    found = _capitals().get(bare)
    if found is None:
        return None
    handlers = sum(1 for other in owner_names() if other in _capitals())
    return found if handlers >= MIN_CAPITAL_HANDLERS else None


MIN_CAPITAL_HANDLERS = 5
"""Capitalised node names an owner needs before ``NAME`` is read as ``ast.Name``'s handler."""


@functools.cache
def _ast_classes() -> dict[str, type[ast.AST]]:
    return {
        name: value
        for name, value in vars(ast).items()
        if isinstance(value, type) and issubclass(value, ast.AST) and not name.startswith("_")
    }


@functools.cache
def _capitals() -> dict[str, type[ast.AST]]:
    return {name.upper(): cls for name, cls in _ast_classes().items()}


@functools.cache
def _every_construct_source() -> str:
    return _EVERY_CONSTRUCT + "".join(
        text for version, text in _NEWER_CONSTRUCTS.items() if sys.version_info >= version
    )


@functools.cache
def _every_construct() -> ast.Module:
    return ast.parse(_every_construct_source())


@functools.cache
def _first_node_of(cls: type) -> ast.AST | None:
    for node in ast.walk(_every_construct()):
        if isinstance(node, cls):
            return node
    return None
