"""Subclasses the package's own documentation shows its users writing.

Some classes are schemas a user fills in: a base class leaves a class attribute empty
(``componentType = None``, an empty collection of named fields) and only users' subclasses set
it, so every method that reads it refuses on the package's own class ("Component type not
defined"). Packages that work this way show such a subclass in their docstrings::

    class LotteryDraw(SequenceOf):  #  SetOf is similar
        componentType = Integer()

This module finds those class statements (in ``.. code-block::`` and literal blocks and
``>>>`` examples), keeps those whose body only assigns class attributes (no methods: nothing
runs but the expressions the documentation itself shows), and builds them in the worker in
the namespace of the package's modules. A class gets its own documented subclasses and also
those of a sibling that leaves the same attributes empty the same way (``SetOf`` borrows the
body of the ``SequenceOf`` example), each as a subclass of the class itself.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import re
import sys
import textwrap
from collections.abc import Iterator, Sized
from dataclasses import dataclass

from apiprof.engine import timeouts
from apiprof.engine.scenarios.trial import TRIAL_SECONDS, quiet_stdio

MAX_EXAMPLES = 4
"""Documented subclasses offered per class (its own first)."""
_CLASS_LINE = re.compile(r"^(\s*)class\s+(\w+)\s*\(\s*([\w.]+)\s*\)\s*:")


@dataclass(frozen=True)
class DocumentedSubclass:
    """A class statement of the package's documentation: its name, its base as written, its
    source, and the module whose docstring shows it."""

    name: str
    base: str
    source: str
    module: str


@functools.cache
def documented_subclasses(cls: type) -> tuple[type, ...]:
    """Subclasses of ``cls`` built from its package's documented examples: those written for
    ``cls`` first, then bodies written for a sibling whose attributes ``cls`` leaves empty
    alike. Empty when the package documents none."""
    package = (getattr(cls, "__module__", "") or "").split(".")[0]
    if not package:
        return ()
    own: list[type] = []
    borrowed: list[type] = []
    for example in _examples(package):
        built = _built(example)
        if built is None:
            continue
        base = built.__mro__[1]
        attributes = _set_attributes(built)
        if base is cls:
            own.append(built)
        elif attributes and _same_gaps(cls, base, attributes):
            values = {name: vars(built)[name] for name in attributes}
            values["__module__"] = built.__module__
            borrowed.append(type(built.__name__, (cls,), values))
    return tuple([*own, *borrowed][:MAX_EXAMPLES])


def documented_for(cls: type, member: str) -> tuple[type, ...]:
    """The documented subclasses of ``cls`` that set an attribute ``cls`` leaves empty and
    its method ``member`` reads (itself, or a method of ``cls`` it calls on ``self``, four
    calls deep): a method that never reads what users fill in keeps the class itself."""
    read = read_names(cls, member)
    return tuple(
        subclass
        for subclass in documented_subclasses(cls)
        if any(
            name in read and unset(getattr(cls, name, None)) for name in _set_attributes(subclass)
        )
    )


READ_DEPTH = 4
"""Calls on ``self`` followed from a method to find what it reads."""
_SELF_CALL = re.compile(r"\b(?:self|super\(\))\.(\w+)\s*\(|\b\w+\.(\w+)\(\s*self\b")
"""A method called on ``self``: ``self.m(``, ``super().m(``, ``Base.m(self``."""
_NAME = re.compile(r"\b\w+\b")
_SELF_USES = (
    (re.compile(r"\bself\s*\[[^]]*\]\s*=[^=]"), "__setitem__"),
    (re.compile(r"\bself\s*\["), "__getitem__"),
    (re.compile(r"\blen\(self\)"), "__len__"),
    (re.compile(r"\bin self\b|\biter\(self\)"), "__iter__"),
)
"""What a method does with ``self`` that calls one of its special methods."""


def read_names(cls: type, member: str) -> frozenset[str]:
    """Every word in the source of ``cls.member`` and the methods it calls on ``self``."""
    words: set[str] = set()
    seen: set[str] = set()
    frontier = [member]
    for _ in range(READ_DEPTH + 1):
        following: list[str] = []
        for name in frontier:
            if name in seen:
                continue
            seen.add(name)
            source = _source_of(cls, name)
            words.update(_NAME.findall(source))
            following += [own or base for own, base in _SELF_CALL.findall(source)]
            following += [dunder for use, dunder in _SELF_USES if use.search(source)]
        frontier = following
    return frozenset(words)


def _source_of(cls: type, name: str) -> str:
    """The source of every definition of ``name`` in ``cls`` and its bases (an override
    hands on to its base's through ``super()``)."""
    sources = []
    for klass in cls.__mro__:
        member = vars(klass).get(name)
        function = getattr(member, "fget", None) or getattr(member, "__func__", None) or member
        try:
            sources.append(inspect.getsource(function) if inspect.isfunction(function) else "")
        except (OSError, TypeError):
            continue
    return "\n".join(sources)


@functools.cache
def documented_attributes(package: str) -> frozenset[str]:
    """The class attributes the package's documented subclasses set (what it shows its users
    filling in)."""
    built = (_built(example) for example in _examples(package))
    return frozenset(name for made in built if made is not None for name in _set_attributes(made))


def unset(value: object) -> bool:
    """Whether a class attribute is left for subclasses: None, or an empty collection."""
    if value is None:
        return True
    if isinstance(value, (str, bytes, type)):
        return False
    with contextlib.suppress(Exception):
        return isinstance(value, Sized) and len(value) == 0
    return False


def _same_gaps(cls: type, base: type, attributes: tuple[str, ...]) -> bool:
    """Whether ``cls`` is a sibling of ``base`` (a direct base of ``base`` is one of its bases:
    ``SetOf`` and ``SequenceOf`` share theirs) that leaves every one of ``attributes`` empty
    as ``base`` does (the same kind of empty value)."""
    if issubclass(base, cls) or not set(base.__bases__) & set(cls.__mro__[1:]) - {object}:
        return False
    for name in attributes:
        mine, theirs = getattr(cls, name, MISSING), getattr(base, name, MISSING)
        if mine is MISSING or theirs is MISSING:
            return False
        if not (unset(mine) and unset(theirs) and type(mine) is type(theirs)):
            return False
    return True


MISSING = object()


def _set_attributes(built: type) -> tuple[str, ...]:
    return tuple(name for name in vars(built) if not name.startswith("__"))


@functools.cache
def _built(example: DocumentedSubclass) -> type | None:
    """The documented class, built in the namespace of the package's modules (the module that
    shows it on top); None when its base is not one of the package's classes or its body
    raises."""
    module = sys.modules.get(example.module)
    if module is None:
        return None
    namespace = {**_package_namespace(example.module.split(".")[0]), **vars(module)}
    try:
        code = compile(example.source, f"<documented subclass in {example.module}>", "exec")
        with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
            exec(code, namespace)  # only class attributes: what the documentation shows
    except (Exception, timeouts.CallTimeout):
        return None
    built = namespace.get(example.name)
    if not inspect.isclass(built) or len(built.__mro__) < 2:
        return None
    base = built.__mro__[1]
    if (base.__module__ or "").split(".")[0] != example.module.split(".")[0]:
        return None
    built.__module__ = base.__module__
    return built


def _package_namespace(package: str) -> dict[str, object]:
    """Public names of the package's loaded modules (documentation writes ``NamedTypes``
    where the module itself imports ``namedtype``)."""
    namespace: dict[str, object] = {}
    for name, module in sorted(sys.modules.items()):
        if name == package or name.startswith(package + "."):
            for attribute, value in vars(module).items():
                if not attribute.startswith("_"):
                    namespace.setdefault(attribute, value)
    return namespace


@functools.cache
def _examples(package: str) -> tuple[DocumentedSubclass, ...]:
    """Class statements that set only class attributes, in the package's docstrings."""
    found: dict[str, DocumentedSubclass] = {}
    for module_name, doc in _docstrings(package):
        for example in _class_statements(doc, module_name):
            found.setdefault(f"{example.base}\0{example.source}", example)
    return tuple(found.values())


def _docstrings(package: str) -> Iterator[tuple[str, str]]:
    for name, module in sorted(sys.modules.items()):
        if not (name == package or name.startswith(package + ".")):
            continue
        if isinstance(module.__doc__, str):
            yield name, module.__doc__
        for value in list(vars(module).values()):
            if not inspect.isclass(value) or value.__module__ != name:
                continue
            for member in [value, *vars(value).values()]:
                doc = getattr(member, "__doc__", None)
                if isinstance(doc, str) and "class " in doc:
                    yield name, doc


def _class_statements(doc: str, module: str) -> Iterator[DocumentedSubclass]:
    lines = [line.replace(">>> ", "", 1).replace("... ", "", 1) for line in doc.splitlines()]
    for index, line in enumerate(lines):
        header = _CLASS_LINE.match(line)
        if header is None:
            continue
        indent = len(header.group(1))
        body = [line]
        for following in lines[index + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following)
        source = textwrap.dedent("\n".join(body))
        if _only_attributes(source):
            yield DocumentedSubclass(header.group(2), header.group(3), source, module)


def _only_attributes(source: str) -> bool:
    """Whether the class statement's body only assigns (and documents itself)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.ClassDef):
        return False
    statement = tree.body[0]
    if statement.decorator_list or statement.keywords:
        return False
    assigns = 0
    for node in statement.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            assigns += 1
        elif not isinstance(node, ast.Pass) and not (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):
            return False
    return assigns > 0
