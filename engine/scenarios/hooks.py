"""Base classes that leave a hook to their subclasses without saying so.

``pytz.lazy.LazyDict.keys`` calls ``self._fill()``, which only its subclasses define: the base
class builds, and every call on it fails. Such a class is abstract in all but name for that
method, so its receiver is built from a concrete subclass that defines the hook (the way an
``abc`` abstract class is). A hook is a method the body calls on ``self`` that the class
neither defines nor assigns anywhere in its own methods, nor answers through ``__getattr__``,
and that one of its concrete subclasses defines.
"""

from __future__ import annotations

import ast
import functools
import inspect

from apiprof.engine.scenarios.factories import concrete_subclasses
from apiprof.engine.scenarios.unimplemented import raises_only
from apiprof.engine.scenarios.usage import function_tree, self_attributes


def missing_hooks(cls: type, member: str) -> tuple[str, ...]:
    """The methods ``cls.member`` calls on ``self`` that ``cls`` does not have and a concrete
    subclass of it does (none: the class serves as it is)."""
    method = inspect.getattr_static(cls, member, None)
    if not inspect.isfunction(method) or hasattr(cls, "__getattr__"):
        return ()
    hooks = _missing(cls, method)
    subclasses = concrete_subclasses(cls, member) if hooks else []
    filled = any(
        all(hasattr(sub, hook) and not raises_only(getattr(sub, hook, None)) for hook in hooks)
        for sub in subclasses
    )
    return hooks if filled else ()


@functools.cache
def _missing(cls: type, method: object) -> tuple[str, ...]:
    tree = function_tree(method)  # type: ignore[arg-type]  # a plain function
    if tree is None:
        return ()
    called = [
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    ]
    absent = [
        name
        for name in dict.fromkeys(called)
        if not hasattr(cls, name) or raises_only(inspect.getattr_static(cls, name))
    ]  # `raise NotImplementedError` in the base: left to subclasses all the same
    return tuple(name for name in absent if name not in _assigned(cls))


def _assigned(cls: type) -> frozenset[str]:
    """Attributes the class's own methods (and its bases') set on ``self``."""
    found: set[str] = set()
    for klass in cls.__mro__:
        for value in vars(klass).values():
            tree = function_tree(value) if inspect.isfunction(value) else None
            if tree is not None:
                found.update(self_attributes(tree, ast.Store))
    return frozenset(found)
