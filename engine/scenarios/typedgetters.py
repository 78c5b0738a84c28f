"""The value a mapping's typed getter looks for: ``get_int(key)`` wants an int under the key.

A configuration tree's ``get_int``, ``get_bool``, ``get_list``, ``get_config`` find the key
(so the receiver is first given the call's own key, :mod:`.warmup`) and then check that what is
stored there is of the type the name says (``'x' has type 'str' rather than 'int'``). Storing
the key itself as its value satisfies only ``get_string``; this module says what to store.
"""

from __future__ import annotations

import re

_GETTER = re.compile(r"^get_?([a-z]+)$")
_STORED: dict[str, object] = {}
for _words, _value in [
    ("int integer long", 7),
    ("float double number num decimal", 2.5),
    ("bool boolean flag", True),
    ("list array seq sequence", ["one", "two"]),
    ("str string text", "word"),
    ("bytes", b"bytes"),
]:
    _STORED.update(dict.fromkeys(_words.split(), _value))
_NESTED = frozenset(["config", "tree", "section", "dict", "mapping", "table", "object"])
"""Getters of a nested part: an empty instance of the receiver's own class, else a dict."""


def stored_for(member: str, receiver: object) -> tuple[object] | None:
    """``(value,)`` to store under the key before ``receiver.member(key)`` when the getter's
    name says a type; None when it says none (the key is stored as its own value)."""
    matched = _GETTER.match(member.lower())
    if matched is None:
        return None
    word = matched.group(1)
    if word in _STORED:
        value = _STORED[word]
        return (list(value) if isinstance(value, list) else value,)
    if word in _NESTED:
        try:
            return (type(receiver)(),)
        except Exception:  # a class that needs arguments: a plain mapping
            return ({},)
    return None
