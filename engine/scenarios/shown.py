"""Arguments as a person reads them: what scenario descriptions, ``apiprof show`` and the
drill-down pages print for captured and synthesised inputs — short, and never the address of
an object that has no ``repr`` of its own."""

from __future__ import annotations

from typing import Any


def shown_arguments(args: tuple[Any, ...], kwargs: dict[str, Any], limit: int = 160) -> str:
    """``(1, 'a', key=2)``: the arguments as a person reads them, shortened."""
    parts = [_short_repr(value) for value in args]
    parts += [f"{name}={_short_repr(value)}" for name, value in kwargs.items()]
    text = f"({', '.join(parts)})"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)`` shortened; an object without a repr of its own shows its state one level
    deep (a receiver captured mid-stream: ``Scanner(text='[1, 2]', pos=1, depth=1)``), not its
    address. One level only: a parser's state points back at the parser."""
    try:
        state = getattr(value, "__dict__", None)
    except Exception:  # a property or __getattr__ that raises: show the type
        state = None
    if _default_repr(value) and isinstance(state, dict) and state:
        inner = ", ".join(f"{k}={_plain_repr(v, 24)}" for k, v in list(state.items())[:8])
        text = f"{type(value).__name__}({inner})"
        return text if len(text) <= 2 * limit else text[: 2 * limit - 1] + "…"
    return _plain_repr(value, limit)


def _default_repr(value: object) -> bool:
    return type(value).__repr__ is object.__repr__


def _plain_repr(value: object, limit: int) -> str:
    """The value's own ``repr`` shortened, or ``<Type>`` where it has none (or it raises)."""
    try:
        text = "" if _default_repr(value) else repr(value)
    except Exception:
        text = ""
    text = text or f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"
