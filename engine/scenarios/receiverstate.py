"""Lessons about the receiver: a method failed on what its constructor stored.

A method that fails on ``self.f.write`` or on ``self.code & FLAG`` was not given a bad
argument: the receiver was built with one. When ``__init__`` stored the attribute straight
from a parameter (``self.code = code``), the lesson names that parameter as ``self.<name>``,
and the receiver is built again with a value that has what the method asked for.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable

from apiprof.engine.scenarios.failing import called, failing_text, innermost
from apiprof.engine.scenarios.refusals import OPERAND_TYPES
from apiprof.engine.scenarios.wants import Lesson, Want


def receiver_operand(error: BaseException, message: str, receiver: object) -> Lesson | None:
    """``unsupported operand type(s) for &: 'str' and 'int'`` in ``self.code & FLAG``, where
    the receiver's constructor stored ``code`` from its parameter: the receiver is built with
    a ``code`` of the other operand's type (a builtin one)."""
    operands = OPERAND_TYPES.search(message)
    frame = innermost(error)
    if operands is None or receiver is None or frame is None:
        return None
    if frame.f_locals.get("self") is not receiver:
        return None
    first, second = (name.rsplit(".", 1)[-1] for name in operands.groups())
    if first == second or not {first, second} <= BUILTIN_OPERANDS:
        return None
    text, _ = failing_text(error)
    for stored in re.findall(r"\bself\.(\w+)", text):
        kind = type(getattr(receiver, stored, None)).__name__
        if kind not in (first, second):
            continue
        parameter = set_from(type(receiver), stored, required=True)
        if parameter:
            wanted = second if kind == first else first
            cause = f"TypeError {message}"
            return Lesson(f"self.{parameter}", Want.TYPE, (wanted,), cause=cause)
    return None


BUILTIN_OPERANDS = frozenset({"int", "float", "str", "bytes", "list", "tuple", "dict", "set"})
"""Operand types a lesson may ask a constructor parameter to have."""


def receiver_attribute(error: AttributeError, receiver: object, cause: str) -> Lesson | None:
    """``'function' object has no attribute 'write'`` asked of ``self.f``, which the
    receiver's constructor stored from its parameter ``f``: the receiver is built with an
    ``f`` that has the attribute (``PlyLogger(f)`` writes to a file)."""
    attribute, obj = getattr(error, "name", None), getattr(error, "obj", None)
    frame = innermost(error)
    if not attribute or obj is None or receiver is None or frame is None:
        return None
    wanted = f"{attribute}()" if called(error, attribute) else attribute
    if frame.f_locals.get("self") is receiver:
        text, _ = failing_text(error)
        for stored in re.findall(r"\bself\.(\w+)", text):
            parameter = getattr(receiver, stored, None) is obj and set_from(
                type(receiver), stored, required=True
            )
            if parameter:
                return Lesson(f"self.{parameter}", Want.ATTRIBUTES, (wanted,), cause=cause)
        return None
    # asked deeper, by a method of the object itself (``self.md._hash_span()`` reading
    # ``self.html_spans`` of the converter the receiver holds)
    for stored, value in list(getattr(receiver, "__dict__", {}).items()):
        parameter = value is obj and set_from(type(receiver), stored, required=True)
        if parameter:
            return Lesson(f"self.{parameter}", Want.ATTRIBUTES, (attribute,), cause=cause)
    return None


def set_from(cls: type, attribute: str, *, required: bool = False) -> str:
    """The constructor parameter with a default of None (``required``: or none) that
    ``__init__`` stores as ``self.<attribute>`` (``self.items = items``, ``self.items = items
    or ...``) — or a base class's ``__init__`` does under the same parameter name, which an
    override hands on with ``super().__init__(md, options)`` — or ""."""
    inits = [vars(klass)["__init__"] for klass in cls.__mro__ if "__init__" in vars(klass)]
    inits = [init for init in inits if inspect.isfunction(init)]
    if not inits:
        return ""
    try:
        own = inspect.signature(inits[0]).parameters
    except (TypeError, ValueError):
        return ""
    for init in inits:
        name = stored_parameter(init, attribute, required=required)
        if name and name in own:
            return name
    return ""


def stored_parameter(init: Callable[..., object], attribute: str, *, required: bool) -> str:
    try:
        parameters = inspect.signature(init).parameters
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (TypeError, ValueError, OSError, SyntaxError):
        return ""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        stored = any(
            isinstance(target, ast.Attribute)
            and target.attr == attribute
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            for target in node.targets
        )
        value = node.value.values[0] if isinstance(node.value, ast.BoolOp) else node.value
        if not (stored and isinstance(value, ast.Name)):
            continue
        parameter = parameters.get(value.id)
        if parameter is not None and (
            parameter.default is None or (required and parameter.default is parameter.empty)
        ):
            return value.id
    return ""
