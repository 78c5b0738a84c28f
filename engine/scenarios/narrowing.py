"""An annotated parameter the body narrows: ``assert isinstance(priv_key, PrivateKey)`` under
``priv_key: AbstractKey``.

An interface declares the base class and each implementation checks for the subclass it
works with (a command-line operation that signs declares a key, and asserts a private one).
A value of the annotated class is then refused whenever the base class's first concrete
subclass is the other one, so the subclass the body checks for is tried first. Only for a
base class of the package's own (an interface it declares): a guard against another
library's class (``ast.AST`` narrowed to a module) leaves that library's rules in charge.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping
from typing import Any

from apiprof.engine.scenarios.typetext import evaluate_type, module_namespace
from apiprof.engine.scenarios.usage import Usage


def own_class(annotation: Any, target: object) -> bool:
    """Whether ``annotation`` is a class of the package ``target`` belongs to."""
    top = (getattr(target, "__module__", "") or "").split(".")[0]
    module = getattr(annotation, "__module__", "") or "" if inspect.isclass(annotation) else ""
    return bool(top) and module.split(".")[0] == top


def checked_subclasses(
    usage: Usage | None,
    annotation: Any,
    module: types.ModuleType | None,
    classes: Mapping[str, type],
) -> list[type]:
    """The proper subclasses of ``annotation`` the body checks the parameter against with
    ``isinstance`` (in order, each once); [] when the annotation is not a class."""
    if usage is None or not inspect.isclass(annotation):
        return []
    names = {**module_namespace(module), **classes}
    found: list[type] = []
    for text in usage.isinstance_of:
        for part in text.strip("()").split(","):
            checked = evaluate_type(part.strip(), names) if part.strip() else None
            if (
                inspect.isclass(checked)
                and checked is not annotation
                and issubclass(checked, annotation)
                and checked not in found
            ):
                found.append(checked)
    return found
