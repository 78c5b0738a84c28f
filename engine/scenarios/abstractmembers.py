"""Abstract methods that only document an interface: ``@abstractmethod def append(self, val):``
with a docstring for a body. No call runs that body — a call on any instance reaches the
implementation of its class — so such a method is reported as what it is, with the package's
subclasses that implement it (profiled under their own names), as an abstract class is."""

from __future__ import annotations

import ast
import inspect

from apiprof.engine.scenarios.factories import concrete_subclasses
from apiprof.engine.scenarios.usage import function_tree
from apiprof.model.records import Coverage, Failure

MAX_NAMED = 3
"""Implementations a reason names at most."""


def abstract_method_failure(owner: object, member: str) -> Failure | None:
    """The SKIPPED failure of ``owner.member`` when it is an ``@abstractmethod`` whose body only
    documents it (a docstring, ``pass``, ``...``, ``raise NotImplementedError``); else None."""
    if not inspect.isclass(owner):
        return None
    method = inspect.getattr_static(owner, member, None)
    function = getattr(method, "__func__", method)
    if not getattr(function, "__isabstractmethod__", False) or not inspect.isfunction(function):
        return None
    if not _documents_only(function):
        return None
    implementations = [
        f"{sub.__qualname__}.{member}"
        for sub in concrete_subclasses(owner)
        if inspect.getattr_static(sub, member, None) is not method
    ][:MAX_NAMED]
    where = (
        f"its implementations ({', '.join(implementations)}) are profiled"
        if implementations
        else "no Python subclass of the package implements it (a compiled class registered "
        f"as a {owner.__qualname__} may)"
    )
    return Failure(
        Coverage.SKIPPED,
        f"abstract method: its body only documents it and no call runs it; {where}",
    )


def _documents_only(function: object) -> bool:
    tree = function_tree(function)  # type: ignore[arg-type]  # a plain function
    if tree is None:
        return False
    for statement in tree.body:
        if isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring, or `...`
        if isinstance(statement, ast.Raise) and statement.exc is not None:
            raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
            if isinstance(raised, ast.Name) and raised.id == "NotImplementedError":
                continue
        return False
    return True
