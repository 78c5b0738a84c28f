"""Records to JSON-ready data and back, checked against their declared types.

One codec for every record that crosses a boundary — the worker pipe, stored JSON, uploads — so
fields are declared once (on the dataclass) and never spelled out again. Decoding is strict:
data from a worker or another machine is untrusted, so every value must have its field's
declared type (an ``int`` field refuses ``True`` and ``"3"``; a missing or unknown field is an
error), strings and containers have size limits, and a failure names the path of the bad value
(``entry.aliases[2]``).

Supported field types: ``str``, ``int``, ``float``, ``bool``, ``None``, unions with ``None``,
``list[T]``, ``tuple[T, ...]``, ``dict[str, T]``, ``typing.Any`` (JSON scalars and containers,
taken as they are), string enums, nested dataclasses, and classes with their own
``to_data()``/``from_data(data)`` pair (e.g. :class:`~apiprof.model.histogram.Histogram`).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable, Hashable
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")

MAX_STRING = 1 << 20
"""Longest string accepted in decoded data (1 MiB of text)."""
MAX_ITEMS = 1 << 20
"""Most items accepted in one decoded list, tuple or mapping."""


class DecodeError(ValueError):
    """Data does not match the record type it claims to be; the message names where."""


def to_data(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses become objects, enums their values, tuples lists."""
    if value is None or isinstance(value, (str, bool, int)):
        return value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, float):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if hasattr(value, "to_data"):
        return value.to_data()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_data(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_data(item) for key, item in value.items()}
    raise TypeError(f"cannot encode {type(value).__name__} values")


def from_data(cls: type[T], data: Any, path: str = "") -> T:
    """Decode ``data`` as a ``cls`` record, or raise :class:`DecodeError` naming the bad value."""
    decoder = _decoder(typing.cast(Hashable, cls))
    return typing.cast(T, decoder(data, path or cls.__name__))


_Decoder = Callable[[Any, str], Any]


@cache
def _decoder(tp: Hashable) -> _Decoder:
    """A decoding function for the type ``tp`` (built once per type)."""
    if tp is Any:
        return _any
    if tp is type(None):
        return _none
    if tp in (str, int, float, bool):
        return _scalar(tp)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _union(typing.get_args(tp))
    if origin in (list, tuple):
        args = typing.get_args(tp)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise TypeError(f"only tuple[T, ...] fields are supported, not {tp}")
        return _sequence(_decoder(args[0]), origin)
    if origin is dict:
        key, item = typing.get_args(tp)
        if key is not str:
            raise TypeError(f"only dict[str, T] fields are supported, not {tp}")
        return _mapping(_decoder(item))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum(tp)
    if isinstance(tp, type) and hasattr(tp, "from_data"):
        return _custom(tp)
    if dataclasses.is_dataclass(tp):
        return _record(tp)
    raise TypeError(f"no decoder for {tp!r}")


def _fail(path: str, expected: str, data: Any) -> typing.NoReturn:
    shown = repr(data)
    raise DecodeError(f"{path}: expected {expected}, got {shown[:80]}")


def _any(data: Any, path: str) -> Any:
    return data


def _none(data: Any, path: str) -> None:
    if data is not None:
        _fail(path, "null", data)


def _scalar(tp: type) -> _Decoder:
    def decode(data: Any, path: str) -> Any:
        if tp is float and isinstance(data, int) and not isinstance(data, bool):
            return float(data)
        if type(data) is not tp:
            _fail(path, tp.__name__, data)
        if isinstance(data, str) and len(data) > MAX_STRING:
            raise DecodeError(f"{path}: a string of {len(data)} characters is over the limit")
        if isinstance(data, float) and not math.isfinite(data):
            _fail(path, "a finite number", data)
        return data

    return decode


def _union(members: tuple[Any, ...]) -> _Decoder:
    decoders = [_decoder(member) for member in members]
    names = " or ".join(getattr(m, "__name__", str(m)) for m in members)

    def decode(data: Any, path: str) -> Any:
        for decoder in decoders:
            try:
                return decoder(data, path)
            except DecodeError:
                continue
        _fail(path, names, data)

    return decode


def _sequence(item: _Decoder, kind: type) -> _Decoder:
    def decode(data: Any, path: str) -> Any:
        if not isinstance(data, list):
            _fail(path, "a list", data)
        if len(data) > MAX_ITEMS:
            raise DecodeError(f"{path}: {len(data)} items is over the limit")
        return kind(item(value, f"{path}[{i}]") for i, value in enumerate(data))

    return decode


def _mapping(item: _Decoder) -> _Decoder:
    def decode(data: Any, path: str) -> Any:
        if not isinstance(data, dict):
            _fail(path, "an object", data)
        if len(data) > MAX_ITEMS:
            raise DecodeError(f"{path}: {len(data)} keys is over the limit")
        return {key: item(value, f"{path}[{key!r}]") for key, value in data.items()}

    return decode


def _enum(tp: type[enum.Enum]) -> _Decoder:
    def decode(data: Any, path: str) -> Any:
        try:
            return tp(data)
        except (ValueError, TypeError):
            _fail(path, f"one of {', '.join(str(m.value) for m in tp)}", data)

    return decode


def _custom(tp: Any) -> _Decoder:
    def decode(data: Any, path: str) -> Any:
        try:
            return tp.from_data(data)
        except (ValueError, TypeError, KeyError, IndexError) as error:
            raise DecodeError(f"{path}: not a valid {tp.__name__} ({error})") from None

    return decode


def _record(tp: Any) -> _Decoder:
    hints = typing.get_type_hints(tp)
    fields = [f for f in dataclasses.fields(tp) if f.init]
    decoders = {f.name: _decoder(hints[f.name]) for f in fields}
    required = {
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }

    def decode(data: Any, path: str) -> Any:
        if not isinstance(data, dict):
            _fail(path, f"a {tp.__name__} object", data)
        if unknown := set(data) - set(decoders):
            raise DecodeError(f"{path}: unknown field {sorted(unknown)[0]!r} for {tp.__name__}")
        if missing := required - set(data):
            raise DecodeError(f"{path}: missing field {sorted(missing)[0]!r} of {tp.__name__}")
        return tp(**{name: decoders[name](value, f"{path}.{name}") for name, value in data.items()})

    return decode
