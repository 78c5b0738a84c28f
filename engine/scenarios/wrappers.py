"""Decorators written without ``functools.wraps``: the wrapper says ``(*args, **kwargs)`` and
hands the call on, unchanged, to the function it closes over. Its arguments are those of that
function (``@deprecated def get(obj, glob)`` is called as ``get(obj, glob)``), which nothing on
the wrapper itself records: no ``__wrapped__``, no signature, no annotations."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable

from apiprof.engine.scenarios.usage import function_tree


def handed_to(target: Callable[..., object]) -> Callable[..., object] | None:
    """The function a pass-through wrapper calls with all it was given, or None when
    ``target`` is not one (it names its parameters, says what it wraps, or does more)."""
    if not inspect.isfunction(target) or hasattr(target, "__wrapped__"):
        return None
    code = target.__code__
    if not target.__closure__ or code.co_argcount or code.co_kwonlyargcount:
        return None
    if not (code.co_flags & inspect.CO_VARARGS and code.co_flags & inspect.CO_VARKEYWORDS):
        return None
    tree = function_tree(target)
    if tree is None or tree.args.vararg is None or tree.args.kwarg is None:
        return None
    cells = dict(zip(code.co_freevars, target.__closure__, strict=True))
    varargs, varkeywords = tree.args.vararg.arg, tree.args.kwarg.arg
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in cells
            and _passes_all(node, varargs, varkeywords)
        ):
            try:
                inner = cells[node.func.id].cell_contents
            except ValueError:  # an empty cell
                return None
            return inner if inspect.isfunction(inner) and inner is not target else None
    return None


def _passes_all(call: ast.Call, varargs: str, varkeywords: str) -> bool:
    """``func(*args, **kwargs)``: every positional and keyword argument, and nothing else."""
    return (
        len(call.args) == 1
        and isinstance(call.args[0], ast.Starred)
        and isinstance(call.args[0].value, ast.Name)
        and call.args[0].value.id == varargs
        and len(call.keywords) == 1
        and call.keywords[0].arg is None
        and isinstance(call.keywords[0].value, ast.Name)
        and call.keywords[0].value.id == varkeywords
    )
