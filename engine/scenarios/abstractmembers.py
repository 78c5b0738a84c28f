"""Abstract methods that only document an interface and that nothing in the package
implements in Python: ``@abstractmethod def append(self, val):`` with a docstring for a body,
whose class is implemented by a compiled class registered as it. No call runs that body (a
call on any instance reaches the compiled implementation) and no Python subclass can stand in
for the receiver, so such a method is reported as what it is, as an abstract class is. Where a
Python subclass implements it, the base class's own function is profiled on an instance of
that subclass instead (the cost of its body: raising ``NotImplementedError``, or nothing)."""

from __future__ import annotations

import ast
import inspect

from apiprof.engine.scenarios.factories import concrete_subclasses
from apiprof.engine.scenarios.usage import function_tree
from apiprof.model.records import Coverage, Failure


def abstract_method_failure(owner: object, member: str) -> Failure | None:
    """The SKIPPED failure of ``owner.member`` when it is an ``@abstractmethod`` whose body only
    documents it (a docstring, ``pass``, ``...``, ``raise NotImplementedError``) and no Python
    subclass of the package implements it; else None."""
    if not inspect.isclass(owner):
        return None
    method = inspect.getattr_static(owner, member, None)
    function = getattr(method, "__func__", method)
    if not getattr(function, "__isabstractmethod__", False) or not inspect.isfunction(function):
        return None
    if not _documents_only(function):
        return None
    if any(
        inspect.getattr_static(sub, member, None) is not method
        for sub in concrete_subclasses(owner)
    ):
        return None  # its own function is profiled on an instance of that subclass
    return Failure(
        Coverage.SKIPPED,
        "abstract method: its body only documents it, and no Python subclass of the package "
        f"implements it to call it on (a compiled class registered as a {owner.__qualname__} "
        "may: a call reaches that implementation, never this body)",
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
