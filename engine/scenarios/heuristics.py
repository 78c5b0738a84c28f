"""Name heuristics: a type for a parameter nobody annotated, from how it is named.

*Names* cover the conventions of the ecosystem (``path`` → a file in the sandbox, ``dt`` → a
datetime, ``sock`` → a connected loopback socket, ``exc_type`` → an exception class, ``year`` →
a plausible year). Siblings' defaults are the last hint: ``(start, stop=10)`` → ``start`` is
probably an int too. What the body does with a parameter is read in
:mod:`~apiprof.engine.scenarios.usage`.
"""

from __future__ import annotations

import datetime
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

from apiprof.engine.scenarios.classnames import snake_case
from apiprof.engine.scenarios.typetext import (
    BinaryFileMarker,
    DirectoryMarker,
    PathMarker,
    TextFileMarker,
)


class SameClassMarker:
    """Annotation marker: an instance of the class whose method is being called."""


class SocketMarker:
    """Annotation marker: one end of a connected loopback socket pair."""


class IteratorMarker:
    """Annotation marker: an iterator over lines of text, started again before each call."""


class CursorMarker:
    """Annotation marker: a DB-API cursor that has run a query (rows to fetch, columns named)."""


class TracebackMarker:
    """Annotation marker: a real traceback object (of a caught exception)."""


class CharMarker:
    """Annotation marker: a one-character string."""


class ContextManagerMarker:
    """Annotation marker: a context manager (``with x:``), one that can be entered again."""


class LoggerMarker:
    """Annotation marker: a ``logging.Logger`` of its own that keeps its records to itself."""


class ModuleMarker:
    """Annotation marker: a module object (one of the package's own, in turn)."""


_NAME_GUESSES: dict[str, Any] = {}
for _names, _annotation in [
    (
        "text s1 s2 string name word prefix suffix sep separator msg message doc line pattern "
        "placeholder label title fmt chars instring input_string source src content contents "
        "value_str token key_name attr attribute tag tagname fieldname field_name string_ strg "
        "template markup html xml code expr expression query header headers_text keyword "
        "delimiter quote prompt description comment unit sql anchor",
        str,
    ),
    ("char ch c", CharMarker),
    (
        "n k i j r count size width length num index idx pos start stop step depth indent limit "
        "ndigits places base times level levels steps distance max_size max_count loc offset "
        "nbytes maxsize lineno line_number col column precision digits bits port nth amount "
        "repeat repeats seed maxlen minlen padding capacity typecode tries attempts retries "
        "fails failures max_tries max_retries max_attempts",
        int,
    ),
    ("u w node n1 n2 u_of_edge v_of_edge start_node end_node vertex nbr neighbor", int),  # graphs
    ("year", typing.Literal[2024]),
    ("month", typing.Literal[6]),
    ("day", typing.Literal[15]),
    ("hour hours", typing.Literal[12]),
    ("minute minutes second seconds", typing.Literal[30]),
    ("h l v g b q z mu sigma p alpha beta ratio weight scale factor tolerance tol eps", float),
    ("x y", float | list[int]),
    ("s", str | float),
    (
        "data iterable iterables seq sequence items values xs ys elements lst array arr points "
        "numbers samples vec1 vec2 signal kernel xarr it iterator pool population args toks "
        "tokens nodes edges words keys entries elems members children collection",
        list[int],
    ),
    ("list_of_lists m1 m2 matrix rows", list[list[int]]),
    ("pairs key_value_pairs", list[tuple[str, int]]),
    ("obj o object item element elem value val thing target instance default root tree", Any),
    (
        "func function fn f key keyfunc pred predicate callback valuefunc reducefunc validator "
        "wrapping_func handler hook factory action fget fset method callable_ cb decorator "
        "caller wrapper",
        Callable[..., Any],
    ),
    (
        "exception exc_type exctype etype exc_class exception_type error_class expected_exception",
        type[Exception],
    ),
    ("exc exc_value exc_val evalue err error e exc_info_value", ValueError),
    ("tb exc_tb traceback trace_back", TracebackMarker),
    (
        "mapping d dct dictionary kwargs attrs params options opts config settings env",
        dict[str, int],
    ),
    ("fp file stream fileobj fobj f_obj infile outfile fh handle_file buf_file", TextFileMarker),
    ("bytestream binary_file", BinaryFileMarker),
    (
        "bs buf buffer byts byte_string bytestring payload packed blob raw data_bytes chunk octets",
        bytes,
    ),
    (
        "path filename fname file_name filepath file_path pathname path_name infilename "
        "outfilename fpath inpath outpath srcpath destpath dstpath savepath",
        PathMarker,
    ),
    ("dirname directory dir_name dirpath folder root_dir rootdir dir_path", DirectoryMarker),
    ("sock socket conn connection client_socket", SocketMarker),
    ("cursor cur db_cursor dbcursor", CursorMarker),
    ("module module_obj module_object", ModuleMarker),
    ("logger user_logger userlogger", LoggerMarker),
    (
        "dt datetime when timestamp_dt start_dt end_dt dtstart until after before dt1 dt2 moment",
        datetime.datetime,
    ),
    ("date d1 d2 start_date end_date", datetime.date),
    ("td delta timedelta duration interval", datetime.timedelta),
    ("tz tzinfo timezone zone", datetime.timezone),
    ("other", SameClassMarker),
    ("url uri href link endpoint", typing.Literal["https://example.com/a/b?q=1#top"]),
    ("email address mail", typing.Literal["someone@example.com"]),
    ("host hostname domain server", typing.Literal["example.com"]),
    ("ip ipaddr ip_address", typing.Literal["127.0.0.1"]),
    ("net network cidr subnet", typing.Literal["127.0.0.0/24"]),
    ("version ver version_string", typing.Literal["1.2.3"]),
    ("encoding enc charset codec", typing.Literal["utf-8"]),
    ("errors", typing.Literal["strict"]),
    ("lang language locale", typing.Literal["en"]),
    ("regex re_pattern expected_regex unexpected_regex", typing.Literal[r"\w+"]),
    ("timestr time_string", typing.Literal["2024-06-15 12:30:00", "12:30:00"]),
    ("datestr date_string", typing.Literal["2024-06-15 12:30:00", "2024-06-15"]),
    ("tzstr tz_string tzname_str", typing.Literal["+02:00", "UTC"]),
    ("json_string json_text json_str", typing.Literal['{"a": [1, 2, 3], "b": null}']),
    ("cls klass class_ type_ typ kind", type),
    ("str_ unicode_", str),  # named after the type they are
    ("int_ integer", int),
    ("float_", float),
    ("bytes_ bytearray_", bytes),
    ("list_ lst_", list[int]),
    ("dict_", dict[str, int]),
    ("set_", set[int]),
    ("tuple_", tuple[int, ...]),
    ("flag enabled strict verbose reverse", bool),
    ("basestring substring docstring", str),
    ("line_no lineno_ page_no col_no", int),
    (
        "namespace namespace_uri namespaceuri ns_uri nsuri xmlns",
        typing.Literal["http://www.w3.org/1999/xhtml"],
    ),
]:
    _NAME_GUESSES.update(dict.fromkeys(_names.split(), _annotation))


def guess_from_name(name: str) -> Any:
    """An annotation for a well-known unannotated parameter name, or None (no safe guess)."""
    if name in _NAME_GUESSES:
        return _NAME_GUESSES[name]
    lowered = snake_case(name).strip("_")
    if lowered in _NAME_GUESSES:
        return _NAME_GUESSES[lowered]
    for suffix, annotation in _SUFFIXES:
        if lowered.endswith(suffix):
            return annotation
    for prefix, annotation in _PREFIXES:
        if lowered.startswith(prefix) and len(lowered) > len(prefix):
            return annotation
    paired = re.fullmatch(r"([a-z]\w*?)(?:_[ab]|_?\d)", lowered)  # enc_a and enc_b: two of one
    if paired and paired.group(1) in _NAME_GUESSES:
        return _NAME_GUESSES[paired.group(1)]
    singular = _NAME_GUESSES.get(lowered[:-1]) if lowered.endswith("s") else None
    known = singular is not None and singular is not Any  # `defaults` is no list of anything
    return typing.cast(Any, list)[singular] if known else None  # funcs, paths: several of one


_SUFFIXES: list[tuple[str, Any]] = [
    ("_path", PathMarker),
    ("_file", TextFileMarker),
    ("_dir", DirectoryMarker),
    ("_func", Callable[..., Any]),
    ("_callback", Callable[..., Any]),
    ("_count", int),
    ("_node", int),
    ("_neighbor", int),
    ("_iterations", int),
    ("_size", int),
    ("_len", int),
    ("_index", int),
    ("_num", int),
    ("_name", str),
    ("_str", str),
    ("_text", str),
    ("_list", list[int]),
    ("_dict", dict[str, int]),
    ("_map", dict[str, int]),
    ("_bytes", bytes),
    ("_date", datetime.date),
    ("_time", datetime.datetime),
    ("_dt", datetime.datetime),
    ("_url", typing.Literal["https://example.com/a/b?q=1#top"]),
    ("_chars", str),
    ("_string", str),
    ("_no", int),
    ("_flag", bool),
    ("_type", type | str),  # a class (`exc_type`), or a kind's name (`node_type`, `content_type`)
    ("_cls", type),
    ("_logger", LoggerMarker),
    ("_class", type),
]


_PREFIXES: list[tuple[str, Any]] = [
    ("is_", bool),
    ("has_", bool),
    ("num_", int),
    ("n_", int),
]
"""Type words that start a name (``is_valid``, ``num_items``), after the suffixes."""


def sibling_default(signature: inspect.Signature, parameter: str) -> Any:
    """The type of the nearest sibling's plain default (``(start, stop=10)`` → int), or None."""
    names = list(signature.parameters)
    index = names.index(parameter)
    ordered = sorted(range(len(names)), key=lambda i: (abs(i - index), i))
    for position in ordered:
        default = signature.parameters[names[position]].default
        if default is inspect.Parameter.empty or default is None or isinstance(default, bool):
            continue
        if type(default) in (int, float, str, bytes):
            return type(default)
    return None
