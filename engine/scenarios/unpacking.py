"""What a failed unpacking says an argument's shape is.

``for token_type, text, start, end, line in tokens:`` raising ``not enough values to unpack
(expected 5, got 3)`` says that each element of ``tokens`` is a 5-tuple and names its fields;
``x, y = pair`` the same of ``pair`` itself. The loop or assignment may be in a helper the
entry point hands the argument to (a generator it iterates): the innermost frame's own
variable is matched, by identity, to the argument (or one of its elements) it holds.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass

from apiprof.engine.scenarios.failing import failing_text, holders, innermost
from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.usage import infer_from_usage, local_usage

_UNPACK = re.compile(r"(?:not enough|too many) values to unpack \(expected (\d+)")
_LOOP = re.compile(r"^in\s+([A-Za-z_]\w*)\s*:")
_ASSIGNED = re.compile(r"^=\s*([A-Za-z_]\w*)\s*(?:#.*)?$")
_NAME = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Shape:
    """The argument whose value (or elements) the failing line unpacks, into these names."""

    parameter: str
    element: bool  # each element of the argument is unpacked (a loop over it)
    fields: tuple[str, ...]


def unpacked_shape(error: BaseException, bound: Mapping[str, object]) -> Shape | None:
    """The shape a ``ValueError`` about unpacking asks of one of the ``bound`` arguments."""
    message = str(error.args[0]) if error.args else ""
    expected = _UNPACK.match(message)
    frame = innermost(error)
    if not isinstance(error, ValueError) or expected is None or frame is None:
        return None
    targets, rest = failing_text(error)
    fields = tuple(part.strip() for part in targets.strip().strip("()[]").split(","))
    if len(fields) != int(expected.group(1)) or not all(_NAME.fullmatch(f) for f in fields):
        return None  # starred or nested targets: the names do not say each field
    loop = _LOOP.match(rest.strip())
    source = loop or _ASSIGNED.match(rest.strip())
    if source is None or source.group(1) not in frame.f_locals:
        return None
    value = frame.f_locals[source.group(1)]
    for name, element in holders(bound, lambda held: held is value):
        if loop is not None and element:
            continue  # a loop over an element of the argument: a nested shape, not said here
        typed = tuple(_typed(field, frame) for field in fields)
        return Shape(name, element or loop is not None, typed)
    return None


def _typed(field: str, frame: types.FrameType) -> str:
    """``field``, or ``field:int`` when no rule knows the name and the helper's body uses it
    as one builtin type (``end - start``: a number)."""
    if guess_from_name(field) is not None:
        return field
    usage = local_usage(frame.f_code, field)
    if usage is None:
        return field
    module = sys.modules.get(frame.f_globals.get("__name__", ""))
    strong, weak = infer_from_usage(usage, module, {})
    kind = next((c for c in (*strong, *weak) if isinstance(c, type) and c in BUILTIN), None)
    return f"{field}:{kind.__name__}" if kind is not None else field


BUILTIN = (int, float, str, bytes, list, dict, bool)
"""Field types a lesson names (:data:`.lessons.BUILTIN_TYPES` builds them)."""
