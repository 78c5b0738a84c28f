"""Names a module hands its own doctest run: ``doctest.testmod(globs=...)``, ``extraglobs=``.

Old packages often run their examples from an ``if __name__ == "__main__":`` block that adds a
few objects every example assumes (``globs.update({"vtor": Validator()})``); without them each
example stops at a ``NameError``. The block's source is read, never run: only the expressions
bound to those names are evaluated, in the module's namespace, when an example needs them.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import inspect
from collections.abc import Iterator

from apiprof.engine.scenarios.usage import call_name

RUNNERS = frozenset({"testmod", "DocTestSuite", "run_docstring_examples", "DocFileSuite"})
"""doctest's functions that take the globals their examples run with."""

KEYWORDS = ("globs", "extraglobs")


def doctest_globals(module: str) -> dict[str, object]:
    """The values of the names ``module`` declares for its doctest run, each evaluated in the
    module's namespace; a name whose expression fails is left out."""
    declared = declared_globals(module)
    if not declared:
        return {}
    with contextlib.suppress(Exception):
        namespace = dict(vars(importlib.import_module(module)))
        values: dict[str, object] = {}
        for name, expression in declared.items():
            with contextlib.suppress(Exception):
                values[name] = eval(expression, namespace)  # the package's own expression
        return values
    return {}


@functools.cache
def declared_globals(module: str) -> dict[str, str]:
    """``name -> expression source`` for each name the module passes to a doctest runner."""
    try:
        tree = ast.parse(inspect.getsource(importlib.import_module(module)))
    except (OSError, TypeError, SyntaxError, ImportError, ValueError):
        return {}
    declared: dict[str, str] = {}
    for scope in ast.walk(tree):
        body = getattr(scope, "body", None)
        if not isinstance(body, list):
            continue
        for call in _runner_calls(body):
            for argument in _globals_arguments(call):
                declared.update(_entries(argument, body))
    return declared


def _runner_calls(body: list[ast.stmt]) -> Iterator[ast.Call]:
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and call_name(node.func) in RUNNERS:
                yield node


def _globals_arguments(call: ast.Call) -> Iterator[ast.expr]:
    for keyword in call.keywords:
        if keyword.arg in KEYWORDS:
            yield keyword.value
    if call_name(call.func) == "run_docstring_examples" and len(call.args) > 1:
        yield call.args[1]  # run_docstring_examples(f, globs)


def _entries(argument: ast.expr, body: list[ast.stmt]) -> dict[str, str]:
    """The string keys ``argument`` holds: a dict literal or ``dict(k=...)`` itself, or what the
    statements of the same block put into the variable it names."""
    if not isinstance(argument, ast.Name):
        return _literal_entries(argument)
    found: dict[str, str] = {}
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Assign) and _assigns(node, argument.id):
                found.update(_literal_entries(node.value))
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
                target = node.targets[0]
                key = target.slice
                if (
                    call_name(target.value) == argument.id
                    and isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                ):
                    found[key.value] = ast.unparse(node.value)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "update"
                and call_name(node.func.value) == argument.id
            ):
                for value in node.args:
                    found.update(_literal_entries(value))
                found.update({k.arg: ast.unparse(k.value) for k in node.keywords if k.arg})
    return found


def _assigns(node: ast.Assign, name: str) -> bool:
    return any(isinstance(target, ast.Name) and target.id == name for target in node.targets)


def _literal_entries(value: ast.expr) -> dict[str, str]:
    if isinstance(value, ast.Dict):
        return {
            key.value: ast.unparse(item)
            for key, item in zip(value.keys, value.values, strict=True)
            if isinstance(key, ast.Constant) and isinstance(key.value, str)
        }
    if isinstance(value, ast.Call) and call_name(value.func) == "dict":
        return {k.arg: ast.unparse(k.value) for k in value.keywords if k.arg}
    return {}
