"""What a rejected call's exception says the arguments should have been.

A synthesised call that fails often says exactly what it wanted: ``KeyError: 'data'`` (a dict
with that key), ``'list' object has no attribute 'name'`` (an object that has it), ``list
indices must be integers or slices, not str`` (a mapping), ``No such file or directory: 'x'``
(a file that exists), ``missing required argument 'markers' (pos 1)`` (a C function's parameter
names), a usage line from a ``main()`` (command-line arguments). :func:`learn` reads the
exception, and the traceback's innermost frame for the object it failed on, and says which of
the entry point's parameters wants what, as a :class:`Lesson`. Nothing here knows any package:
only exception types, messages and the objects the call was given.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from apiprof.engine.scenarios.argvparser import argv_tokens, parser_of
from apiprof.engine.scenarios.arity import fewer_items, fewer_parameters, more_items
from apiprof.engine.scenarios.buffers import buffer_wanted
from apiprof.engine.scenarios.builtinrefusals import BYTES_ITEMS, TEXTS, refused_part
from apiprof.engine.scenarios.choices import listed_choices, refused_choice, required_value
from apiprof.engine.scenarios.distinct import DISTINCT_KINDS, repeated_items
from apiprof.engine.scenarios.documents import document_lesson
from apiprof.engine.scenarios.echoes import (
    attribute_named_by_argument,
    key_from_argument,
    name_the_receiver_lists,
)
from apiprof.engine.scenarios.failing import (
    called,
    culprit,
    expression_names,
    failing_text,
    holders,
    innermost,
)
from apiprof.engine.scenarios.heuristics import IteratorMarker
from apiprof.engine.scenarios.lengths import TEACHES as LENGTH_TEACHES
from apiprof.engine.scenarios.lengths import receiver_length
from apiprof.engine.scenarios.mixups import BINARY_FILE, TEXT_FILE, mixes_kinds, wrong_kind
from apiprof.engine.scenarios.modulenames import asked_of_module, missing_module
from apiprof.engine.scenarios.pathwants import path_wanted
from apiprof.engine.scenarios.quoted import text_lacking, wanted_literal, wanted_member
from apiprof.engine.scenarios.receiverstate import receiver_attribute, receiver_operand, set_from
from apiprof.engine.scenarios.refusals import (
    named_optional,
    operand_type,
    richer_number,
    unread_input,
)
from apiprof.engine.scenarios.schemes import scheme_wanted
from apiprof.engine.scenarios.stems import completed_name
from apiprof.engine.scenarios.typetext import BinaryFileMarker, TextFileMarker
from apiprof.engine.scenarios.unpacking import unpacked_shape
from apiprof.engine.scenarios.wantedtext import text_wanted
from apiprof.engine.scenarios.wants import Lesson, Want

TEACHING = re.compile(
    r"raised (AttributeError|KeyError|FileNotFoundError|SystemExit)\b|indices must be integers|"
    r"object is not subscriptable|missing required argument|must be (None or )?(an? )?\w+|"
    r"'NoneType' object is not (iterable|callable)|object is not (iterable|an iterator)|"
    r"No module named|"
    r"can't convert non-string with explicit base|"
    r"raised OSError\b|raised \w+: .*\bapiprof-inputs/|values to unpack \(expected|"
    r"\brequired\b|unsupported operand type|can only concatenate|"
    r"(?i:not ?found|unknown|no such)|positional arguments? but \d+ (were|was) given|"
    r"expected at least \d+ arguments?, got|"
    r"sequence item \d+: expected|has no len\(\)|expected str, bytes or os\.PathLike|"
    r"str, bytes, or os\.PathLike|"
    r"raised (ParseError|ExpatError|SAXParseException|JSONDecodeError)\b|"
    r"must (have|contain|include|define) (an? )?['\"]|"
    r"(?i:duplicat|not unique|must be unique)|requires a buffer of|"
    r"(?i:(?:not an?|invalid|expected an?|must be an?) ['\"]?[a-z][a-z0-9+.-]*['\"]?:? ur[il]\b)|"
    + LENGTH_TEACHES
)
"""Failures whose exception :func:`learn` may read something from (others are not called
again: a ``ValueError`` about the content says nothing about the type), besides a message
quoting a literal the text lacked (:mod:`.quoted`)."""


def may_teach(reason: str) -> bool:
    """Whether a rejected call's reason is of a kind a lesson can come from."""
    return (
        TEACHING.search(reason) is not None
        or mixes_kinds(reason)
        or wanted_literal(reason) is not None
        or reason.endswith(" in repeated call")  # the receiver, built again, may do
        or bool(listed_choices(reason))  # "available: ja, ru": one of those
    )


def learn(
    error: BaseException,
    bound: Mapping[str, object],
    *,
    usage: str = "",
    probe: Callable[[int], BaseException | None] | None = None,
    receiver: object = None,
) -> Lesson | None:
    """What ``error`` (raised by a call given ``bound``, parameter -> value) says one
    parameter wants, or None when it says nothing this module understands.

    ``usage`` is what the call printed to stderr (argparse prints its usage line there before
    ``SystemExit(2)``); ``probe(k)`` calls the target with ``k`` placeholder arguments and
    returns what it raised (to read a C function's parameter names one by one); ``receiver``
    is the instance a method was called on (its constructor may have left an attribute at
    None: lessons about its constructor's parameters are named ``self.<parameter>``)."""
    message = str(error.args[0]) if error.args else ""
    cause = f"{type(error).__name__} {message}".strip()
    if isinstance(error, SystemExit):
        return _from_usage(error, usage)
    choice = refused_choice(message, bound)  # "unknown code 'xy'; available: ja, ru"
    if choice is not None:
        return Lesson(choice[0], Want.ONE_OF, (choice[1],), cause=cause)
    repeated = repeated_items(message, bound) or buffer_wanted(error, bound)  # duplicates,
    if repeated is not None:  # "unpack requires a buffer of 8 bytes"
        return Lesson(repeated[0], Want.TYPE, (repeated[1],), cause=cause)
    uri = scheme_wanted(message, bound)  # "not a data URI"
    if uri is not None:
        return Lesson(uri[0], Want.ONE_OF, (uri[1],), cause=cause)
    required = required_value(message, bound)  # "year must be 0"
    if required is not None:
        return Lesson(required[0], Want.EQUALS, (required[1],), cause=cause)
    document = document_lesson(error, bound)  # a parser's syntax error: its format's document
    if document is not None:
        return document
    length = receiver_length(message, receiver, cause)  # "must have a length of 16"
    if length is not None:
        return length
    imported = missing_module(str(error), bound)  # also inside another exception's message
    if imported is not None:
        name, element = imported
        return Lesson(name, Want.MODULE, (), element, f"{type(error).__name__} {message}")
    if _NONE.match(message) or (isinstance(error, AttributeError) and error.obj is None):
        return _from_none(error, message, bound, receiver)
    if isinstance(error, AttributeError):
        taught = (
            attribute_named_by_argument(error, bound)
            or _from_attribute_error(error, bound, cause)
            or receiver_attribute(error, receiver, cause)
        )
        number = richer_number(error, bound) if taught is None else None
        if number is not None:  # asked of a number the call computed from its arguments
            taught = Lesson(number[0], Want.TYPE, (number[1],), cause=cause)
        return taught
    if isinstance(error, KeyError) and error.args and not isinstance(error.args[0], str):
        return key_from_argument(error, bound)
    if isinstance(error, KeyError) and error.args and isinstance(error.args[0], str):
        key = error.args[0]
        without_key = _lacking(key)
        found = culprit(error, bound, without_key)
        if found is None:  # raised in C while something else consumed it: the arguments say
            found = next(holders(bound, without_key), None)
        if found is None:
            return None
        return Lesson(found[0], Want.KEYS, (key,), found[1], f"KeyError {key!r}")
    path = path_wanted(error, bound)  # a missing file or directory, a list given for a path
    if path is not None:
        name = "FileNotFoundError" if isinstance(error, FileNotFoundError) else "TypeError"
        detail = error.filename if isinstance(error, FileNotFoundError) else message
        return Lesson(path[0], path[2], (), path[1], f"{name} {detail!r}")
    if isinstance(error, FileNotFoundError):
        return None
    shape = unpacked_shape(error, bound)
    if shape is not None:
        return Lesson(shape.parameter, Want.FIELDS, shape.fields, shape.element, cause)
    if isinstance(error, TypeError):
        missing = _MISSING.search(message)
        if missing:
            position = int(missing.group(2))
            given = tuple(list(bound)[: position - 1])  # the arguments before it were taken
            names = (*given, *_parameter_names(missing.group(1), position, probe))
            return Lesson("", Want.NAMES, names, cause=f"TypeError {missing.group(0)}")
        typed = _from_argument_type(message, bound)
        if typed is not None:
            return typed
        fewer = (
            fewer_items(message, bound)
            or more_items(message, bound)
            or fewer_parameters(error, bound)
            or text_wanted(message, error, bound)
        )
        if fewer is not None:  # takes fewer arguments, or text where it was given a number
            return fewer
        mixed = wrong_kind(message, bound, expression_names(error))
        if mixed is not None:
            return Lesson(mixed[0], Want.TYPE, (mixed[1],), cause=f"TypeError {message}")
        operand = operand_type(message, bound)
        if operand is not None and operand[1] in BUILTIN_TYPES:
            return Lesson(operand[0], Want.TYPE, (operand[1],), cause=f"TypeError {message}")
        stored = receiver_operand(error, message, receiver)  # `self.code & FLAG`
        if stored is not None:
            return stored
        if message.startswith(_NUMERIC_TEXT):  # int(port, 10) on a number: digits as text
            # 3.12 inlines comprehensions: the loop variable may be gone from the frame
            found = culprit(error, bound, _is_number) or next(holders(bound, _is_number), None)
            if found is not None:
                return Lesson(found[0], Want.TYPE, ("digits",), found[1], f"TypeError {message}")
        part = refused_part(error, bound)  # "".join(numbers), len(number)
        if part is not None:
            return Lesson(part[0], Want.TYPE, (part[2],), part[1], f"TypeError {message}")
        stepped = _NOT_AN_ITERATOR.match(message)  # `next(lines)` on a list
        if stepped is not None:
            found = culprit(error, bound, lambda value: type(value).__name__ == stepped.group(1))
            if found is not None:
                return Lesson(found[0], Want.TYPE, ("iterator",), found[1], f"TypeError {message}")
        iterated = _NOT_ITERABLE.match(message)
        if iterated is not None and iterated.group(1) != "NoneType":
            found = culprit(error, bound, lambda value: _is_uniterable(value, iterated.group(1)))
            if found is not None:  # `iter(seq)` on an int: the argument shifted into `seq`
                return Lesson(found[0], Want.TYPE, ("list",), found[1], f"TypeError {message}")
        wrong = _indexed_by_string(message)
        if wrong is not None:
            found = culprit(error, bound, lambda value: isinstance(value, wrong))
            if found is not None:
                return Lesson(found[0], Want.MAPPING, (), found[1], f"TypeError {message}")
    member = wanted_member(message, bound)  # "must have a 'path' member": a key it lacks
    if member is not None:
        return Lesson(member[0], Want.KEYS, (member[1],), cause=cause)
    literal = wanted_literal(message)
    text = text_lacking(literal, bound) if literal is not None else None
    if literal is not None and text is not None:
        return Lesson(text, Want.CONTAINS, (literal,), cause=cause)
    stem = completed_name(message, bound, cause)  # 'lorem.mustache' not found: a file's stem
    if stem is not None:
        return stem
    listed = name_the_receiver_lists(error, bound, receiver)  # a name it did not find
    if listed is not None:
        return listed
    unread = unread_input(error, message, bound)  # a file or stream it read and refused
    if unread is not None:
        return Lesson(unread[0], Want.WRITTEN, unread[1], cause=cause)
    named = named_optional(error, message, bound)  # after what a message says more exactly
    if named is not None:  # "start or end required": one of them, not None after all
        return Lesson(named, Want.GIVEN, cause=cause)
    return None


_ARGUMENT_TYPE = re.compile(
    r"(?:argument (?:(\d+)|'(\w+)')|^(\w+)) must be (?:None or )?(?:an? )?(\w+)"
)
BUILTIN_TYPES: dict[str, Any] = {
    "dict": dict[str, int],
    "str": str,
    "int": int,
    "float": float,
    "bytes": bytes,
    "bytearray": bytearray,
    "list": list[int],
    TEXTS: list[str],  # a join's items, or texts a regular expression read (:mod:`.wantedtext`)
    BYTES_ITEMS: list[bytes],
    "tuple": tuple[int, ...],
    "set": set[int],
    "frozenset": frozenset[int],
    "bool": bool,
    "callable": Callable[..., Any],
    "integer": int,
    "string": str,
    "complex": complex,
    "datetime": datetime.datetime,  # an operand of another's type (timedelta + int)
    "date": datetime.date,
    "time": datetime.time,
    "timedelta": datetime.timedelta,
    "Decimal": decimal.Decimal,
    "Fraction": fractions.Fraction,
    "digits": typing.Literal["8080", "443", "22"],  # text int() reads with an explicit base
    "iterator": IteratorMarker,  # `next(lines)`: lines of text, started again before each call
    BINARY_FILE: BinaryFileMarker,  # a text stream where bytes were read (:mod:`.mixups`)
    TEXT_FILE: TextFileMarker,
    **DISTINCT_KINDS,  # items that must not repeat (:mod:`.distinct`)
}
"""What a C function's "argument N must be X" wants, as a type to build."""
_MISSING = re.compile(r"missing required argument '(\w+)' \(pos (\d+)\)")
_INDEXED = {
    "list indices must be integers": list,
    "string indices must be integers": str,
    "tuple indices must be integers": tuple,
    "'int' object is not subscriptable": int,
    "'float' object is not subscriptable": float,
}
MAX_ARGV = 3
"""Most command-line arguments a usage line is given."""
MAX_NAMES = 32
"""Most parameter names read off a C function's errors."""


def _lacking(key: str) -> Callable[[object], bool]:
    """Whether a value is a mapping without ``key``."""
    return lambda value: isinstance(value, Mapping) and key not in value


def _is_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_NUMERIC_TEXT = "int() can't convert non-string with explicit base"
_NOT_ITERABLE = re.compile(r"'(\w+)' object is not iterable")
_NOT_AN_ITERATOR = re.compile(r"'(\w+)' object is not an iterator")


def _is_uniterable(value: object, type_name: str) -> bool:
    """Whether ``value`` is of the type an "is not iterable" message names, and really is not."""
    if type(value).__name__ != type_name:
        return False
    try:
        iter(value)  # type: ignore[call-overload]
    except TypeError:
        return True
    return False


_NONE = re.compile(r"'NoneType' object (is not (iterable|subscriptable|callable)|has no attribute)")
_INSTEAD_OF_NONE = {"iterable": "list", "subscriptable": "dict", "callable": "callable"}


def _from_none(
    error: BaseException, message: str, bound: Mapping[str, object], receiver: object
) -> Lesson | None:
    """``'NoneType' object is not iterable`` where the failing expression names a parameter
    left at its default of None, or an attribute of the receiver its constructor set from
    one: it wants a list (a dict, a callable, an object with the attribute) after all."""
    left = [name for name in expression_names(error) if name in bound and bound[name] is None]
    if not left and receiver is not None:
        text, _ = failing_text(error)
        frame = innermost(error)
        left = [
            f"self.{parameter}"
            for attribute in re.findall(r"\bself\.(\w+)", text)
            if frame is not None
            and frame.f_locals.get("self") is receiver
            and getattr(receiver, attribute, 0) is None
            and (parameter := set_from(type(receiver), attribute))
        ]
    if not left:
        return None
    cause = f"{type(error).__name__} {message}"
    if isinstance(error, AttributeError):
        return Lesson(left[0], Want.ATTRIBUTES, (str(error.name),), cause=cause)
    wanted = _NONE.match(message)
    kind = _INSTEAD_OF_NONE[wanted.group(2)] if wanted and wanted.group(2) else "list"
    return Lesson(left[0], Want.TYPE, (kind,), cause=cause)


def _from_argument_type(message: str, bound: Mapping[str, object]) -> Lesson | None:
    """``argument 1 must be dict or None, not list``, ``argument 'fmt' must be str``: a C
    function says which argument wants which builtin type."""
    typed = _ARGUMENT_TYPE.search(message)
    if typed is None or typed.group(4) not in BUILTIN_TYPES:
        return None
    position, parameter = typed.group(1), typed.group(2) or typed.group(3)
    if position:
        names = list(bound)
        parameter = names[int(position) - 1] if 0 < int(position) <= len(names) else ""
    if parameter not in bound:
        return None
    return Lesson(parameter, Want.TYPE, (typed.group(4),), cause=f"TypeError {message}")


def _indexed_by_string(message: str) -> type | None:
    """The type a call indexed like a mapping (by a string) when it wanted one."""
    for text, kind in _INDEXED.items():
        if message.startswith(text) and (
            kind in (int, float) or "not str" in message or "'str'" in message
        ):
            return kind
    return None


def _from_attribute_error(
    error: AttributeError, bound: Mapping[str, object], cause: str
) -> Lesson | None:
    """``'list' object has no attribute 'name'``: the object it was asked of is one of the
    arguments (or one of an argument's elements), which wants that attribute."""
    attribute = getattr(error, "name", None)
    obj = getattr(error, "obj", None)
    module = asked_of_module(obj, bound)  # a module the argument named lacks it
    if attribute and module is not None:
        return Lesson(
            module[0], Want.MODULE, (attribute,), module[1], f"AttributeError {attribute!r}"
        )
    if not attribute or obj is None or isinstance(obj, (type, types.ModuleType)):
        return None
    found = list(holders(bound, lambda value: value is obj))
    if not found:
        return None
    named = expression_names(error)
    name, element = next((h for h in found if h[0] in named), found[0])
    wanted = f"{attribute}()" if called(error, attribute) else attribute
    return Lesson(name, Want.ATTRIBUTES, (wanted,), element, f"AttributeError {attribute!r}")


def _from_usage(error: SystemExit, printed: str) -> Lesson | None:
    """A usage line (in the exit message, or printed by argparse): the positional arguments
    it names, so ``sys.argv`` can name them (files for the input ones). An argparse parser
    still in the traceback says more: every required option, subcommand and value."""
    text = error.code if isinstance(error.code, str) else printed
    program = sys.argv[0] if sys.argv else ""
    line = next((line for line in text.splitlines() if _is_usage(line, program)), "")
    parser = parser_of(error)
    if parser is not None:
        cause = f"the argument parser of SystemExit {line.strip() or error.code!r}"
        return Lesson("", Want.ARGV, argv_tokens(parser), cause=cause)
    if not line:
        return None
    words = line.split(":", 1)[1] if line.lower().startswith("usage:") else line
    words = words.split(None, 1)[1] if len(words.split()) > 1 else ""  # the program's name
    names = [
        match.group(1)
        for match in re.finditer(r"(?<![-\w])([A-Za-z_][\w]*)", re.sub(r"\[-[^]]*\]", "", words))
    ]
    chosen = tuple(names[:MAX_ARGV])  # an output file named too keeps it off stdout
    return Lesson("", Want.ARGV, chosen, cause=f"SystemExit {line.strip()!r}")


def _is_usage(line: str, program: str) -> bool:
    """``usage: prog [-h] infile``, ``prog [infile [outfile]]``: a line that shows how to call
    the program."""
    lowered = line.lower().lstrip()
    return lowered.startswith("usage") or bool(program and line.lstrip().startswith(program))


def _parameter_names(
    first: str, position: int, probe: Callable[[int], BaseException | None] | None
) -> tuple[str, ...]:
    """The names a C function's "missing required argument 'x' (pos k)" errors give, from
    ``first`` on, by calling it with one more placeholder each time (``probe``)."""
    names = [first]
    while probe is not None and len(names) < MAX_NAMES:
        raised = probe(position - 1 + len(names))
        found = _MISSING.search(str(raised)) if isinstance(raised, TypeError) else None
        if found is None:
            break
        names.append(found.group(1))
    return tuple(names)
