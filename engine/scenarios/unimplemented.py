"""Base classes that spell out what their subclasses must do: a method whose body only
raises ``NotImplementedError`` (``Pattern.match_file``: "must override match_file()").

The class builds, and every call that reaches such a method fails, so where the package has
concrete subclasses that implement it the class is abstract in all but name: an argument of
it (``PathSpec(patterns)``, a list of ``Pattern``) is built from one of those subclasses, and a
method of it that calls such a method on ``self`` is called on one (see :mod:`.hooks`).
"""

from __future__ import annotations

import ast
import functools
import inspect

from apiprof.engine.scenarios.factories import concrete_subclasses
from apiprof.engine.scenarios.usage import function_tree


def raises_only(method: object) -> bool:
    """Whether ``method`` is a function whose body (past its docstring) only raises
    ``NotImplementedError``."""
    if not inspect.isfunction(method):
        return False
    return _raises_only(method)


@functools.cache
def _raises_only(function: object) -> bool:
    tree = function_tree(function)  # type: ignore[arg-type]  # a plain function
    if tree is None:
        return False
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def left_to_subclasses(cls: type) -> tuple[str, ...]:
    """The methods ``cls`` leaves unimplemented (its own or inherited from the package's
    bases) when the package has a concrete subclass that implements them all; () otherwise."""
    return _left_to_subclasses(cls)


@functools.cache
def _left_to_subclasses(cls: type) -> tuple[str, ...]:
    names = tuple(
        name
        for name in sorted(dir(cls))
        if not name.startswith("__") and raises_only(inspect.getattr_static(cls, name, None))
    )
    if not names or not implementing_subclasses(cls, names):
        return ()
    return names


def implementing_subclasses(cls: type, names: tuple[str, ...]) -> list[type]:
    """The package's concrete subclasses of ``cls`` that implement every one of ``names``."""
    return [
        sub
        for sub in concrete_subclasses(cls)
        if all(
            hasattr(sub, name) and not raises_only(inspect.getattr_static(sub, name, None))
            for name in names
        )
    ]
