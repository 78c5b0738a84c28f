"""Docstring examples as scenarios: each ``>>>`` block of an API's docstring, run as written.

Like doctest, a block sees its module's globals and whatever earlier blocks of the same docstring
defined (those run in setup, unmeasured). Expected output is not checked — the example is a
realistic workload, not a test — but statements whose expected output is a traceback, statements
marked ``# doctest: +SKIP`` and blocks that obviously touch files, processes or the network are
left out.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass

from apiprof.engine.discovery.discover import resolve_object
from apiprof.engine.scenarios.doctestglobs import doctest_globals
from apiprof.engine.scenarios.spec import ScenarioSpec
from apiprof.model.records import EntryPoint, ScenarioSource

IO_MODULES = frozenset(
    {
        "os",
        "io",
        "sys",
        "subprocess",
        "socket",
        "shutil",
        "pathlib",
        "tempfile",
        "urllib",
        "http",
        "ftplib",
        "smtplib",
        "requests",
        "httpx",
        "webbrowser",
        "asyncio",
        "multiprocessing",
        "threading",
        "signal",
    }
)
"""Using any of these in an example marks it as doing I/O (or worse): not run."""

IO_BUILTINS = frozenset(
    {"open", "input", "breakpoint", "exit", "quit", "help", "exec", "eval", "compile"}
)


@dataclass(frozen=True)
class ExampleBlock:
    """One contiguous run of ``>>>`` examples in a docstring, already filtered."""

    index: int  # 1-based position among the docstring's blocks (stable ids)
    code: str  # the statements, joined
    skipped: str = ""  # why the whole block is not runnable, "" if it is


def docstring_of(obj: object) -> str:
    """The object's *own* docstring (not one inherited from a base class)."""
    if inspect.isclass(obj):
        doc = vars(obj).get("__doc__")
    elif isinstance(obj, property):
        doc = obj.__doc__ or (obj.fget.__doc__ if obj.fget else None)
    else:
        doc = getattr(obj, "__doc__", None)
    return doc if isinstance(doc, str) else ""


def example_blocks(docstring: str) -> list[ExampleBlock]:
    """The docstring's ``>>>`` blocks, without skipped or expected-to-raise statements."""
    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError:  # malformed doctest (bad indentation): nothing we can run faithfully
        return []
    groups: list[list[doctest.Example]] = []
    next_line = -1
    for example in examples:
        if example.lineno != next_line:
            groups.append([])
        groups[-1].append(example)
        next_line = example.lineno + example.source.count("\n") + example.want.count("\n")
    return [_to_block(index, group) for index, group in enumerate(groups, start=1)]


def _to_block(index: int, group: list[doctest.Example]) -> ExampleBlock:
    kept = [
        example
        for example in group
        if not example.options.get(doctest.SKIP) and example.exc_msg is None
    ]
    code = "".join(example.source for example in kept)
    if not code.strip():
        return ExampleBlock(index, "", "every statement is skipped or expected to raise")
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        return ExampleBlock(index, "", f"not valid Python: {error.msg}")
    return ExampleBlock(index, code, does_io(tree))


def does_io(tree: ast.AST) -> str:
    """A reason if the code obviously touches files, processes or the network, else ""."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            roots = [(node.module or "").split(".")[0]]
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            roots = [node.id] if node.id in IO_BUILTINS else []
        else:
            continue
        for root in roots:
            if root in IO_MODULES or root in IO_BUILTINS:
                return f"does I/O or runs code dynamically (uses {root})"
    return ""


def module_globals_setup(module: str) -> str:
    """Setup code giving an example its module's globals, as doctest does (see
    :func:`example_globals`)."""
    return (
        "from apiprof.engine.scenarios.doctests import example_globals\n"
        f"globals().update(example_globals({module!r}))\n"
    )


def example_globals(module: str) -> dict[str, object]:
    """What an example in ``module`` may use: the package itself and its public names (examples
    are often written after ``from package import *``: pyparsing's use ``Word`` everywhere),
    then the module's own globals, which win, then what the module hands its own doctest run
    (``doctest.testmod(extraglobs=...)``), as that run would see."""
    top = module.split(".")[0]
    names: dict[str, object] = {}
    with contextlib.suppress(Exception):
        package = importlib.import_module(top)
        exported = getattr(package, "__all__", None)
        public = vars(package)
        chosen = exported if isinstance(exported, (list, tuple)) else list(public)
        names.update({n: public[n] for n in chosen if not n.startswith("_") and n in public})
        names[top] = package
    with contextlib.suppress(Exception):
        own = vars(importlib.import_module(module))
        names.update({name: value for name, value in own.items() if not name.startswith("__")})
    names.update(doctest_globals(module))
    return names


def docstring_scenarios(
    entry: EntryPoint, obj: object, public: Mapping[int, str]
) -> tuple[list[ScenarioSpec], str]:
    """Scenarios for ``entry``'s docstring examples, and why examples were left out ("" if none were).

    ``public`` maps ``id(identity object)`` to qualname for all entry points (see
    ``identity_of``) so an example's targets are the public APIs it visibly calls.
    """
    blocks = example_blocks(docstring_of(obj))
    if not blocks:
        return [], ""
    module = (
        getattr(obj.fget if isinstance(obj, property) else obj, "__module__", None) or entry.module
    )
    setup = module_globals_setup(module)
    namespace = example_globals(module)
    specs, reasons = [], []
    for block in blocks:
        if block.skipped:
            reasons.append(f"example {block.index}: {block.skipped}")
            continue
        targets = tuple(find_targets(block.code, namespace, public, entry.qualname))
        specs.append(
            ScenarioSpec(
                id=f"doc:{entry.qualname}#{block.index}",
                qualname=entry.qualname,
                source=ScenarioSource.DOCSTRING,
                description=f"docstring example {block.index} of {entry.qualname}",
                setup=setup,
                call=block.code,
                targets=targets,
            )
        )
        setup += block.code  # later blocks may use what this one defined
    return specs, "; ".join(reasons)


def identity_of(obj: object) -> object:
    """The object that stays the same however an entry point is reached (bound methods vary)."""
    if isinstance(obj, (staticmethod, classmethod)) or inspect.ismethod(obj):
        return obj.__func__
    return obj


def find_targets(
    code: str, namespace: Mapping[str, object], public: Mapping[int, str], own: str
) -> list[str]:
    """``own`` first, then the public entry points the example names: ``dumps``, ``json.dumps``,
    and ``w.wrap`` after ``w = TextWrapper()`` (a method of a class the example or ``own`` is)."""
    tree = ast.parse(code)
    names = dict(namespace)
    names.update(_imported_names(tree))
    found: list[str] = [own]
    attributes: set[str] = set()
    prefixes = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            attributes.add(node.attr)
        if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in prefixes:
            continue  # `a.b` of `a.b.c` is a path to the API, not an API the example uses
        obj = _resolve_chain(node, names)
        qualname = public.get(id(identity_of(obj))) if obj is not None else None
        if qualname and qualname not in found:
            found.append(qualname)
    classes = [q for q in found if inspect.isclass(_lookup(q))]
    for qualname in public.values():
        owner, _, member = qualname.rpartition(".")
        if owner in classes and member in attributes and qualname not in found:
            found.append(qualname)
    return found


def _lookup(qualname: str) -> object:
    try:
        return resolve_object(qualname)
    except Exception:
        return None


def _imported_names(tree: ast.AST) -> dict[str, object]:
    names: dict[str, object] = {}
    for node in ast.walk(tree):
        try:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    target = alias.name if alias.asname else top
                    names[alias.asname or top] = importlib.import_module(target)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if alias.name != "*" and hasattr(module, alias.name):
                        names[alias.asname or alias.name] = getattr(module, alias.name)
        except Exception:
            continue
    return names


def _resolve_chain(node: ast.expr, names: Mapping[str, object]) -> object | None:
    """The object ``a.b.c`` names, walking only through modules and classes (no code runs)."""
    chain: list[str] = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in names:
        return None
    obj = names[node.id]
    for attribute in reversed(chain):
        if not (inspect.ismodule(obj) or inspect.isclass(obj)):
            return None
        try:
            raw = inspect.getattr_static(obj, attribute)
        except AttributeError:
            return None
        obj = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    return obj
