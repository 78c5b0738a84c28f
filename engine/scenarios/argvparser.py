"""Command-line arguments an ``argparse`` parser accepts, read from the parser itself.

A ``main()`` that exits with a usage error built its :class:`argparse.ArgumentParser` on the
way: the exception's traceback still holds it (the frame of ``parse_known_args``). Its actions
say exactly what a valid command line is — positional arguments, required options with their
values, the first subcommand and what that one requires, choices (also those a help text
lists), a required mutually exclusive group — where a usage line leaves out what it wraps or abbreviates. The command line
comes back as lesson tokens (:mod:`.repaired` turns them into ``sys.argv``): a literal word
(``=build``, ``=3``), an option (``--input``), or a name that becomes a file in the sandbox
(``input``; a name with ``out`` in it becomes a path to write to). A value without a ``type=``
whose name says it is a number (``number``, ``count``) is one: the program converts it itself.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from apiprof.engine.scenarios.choices import listed_choices
from apiprof.engine.scenarios.heuristics import guess_from_name

MAX_TOKENS = 16
"""Longest command line built from a parser."""
MAX_SUBCOMMANDS = 3
"""Nested subcommands followed at most."""
NUMBER_WORDS = frozenset(["number", "num"])
"""Command-line values that are numbers, though a function's parameter so named often is not
(``number`` may be the text of one)."""


def parser_of(error: BaseException) -> argparse.ArgumentParser | None:
    """The outermost argument parser whose parsing raised ``error`` (a usage error's exit),
    else one a frame of its traceback held (a ``main()`` that parsed no subcommand and
    exits after printing its help: its ``parser`` local)."""
    held = None
    trace = error.__traceback__
    while trace is not None:
        found = trace.tb_frame.f_locals
        candidate = found.get("self")
        if isinstance(candidate, argparse.ArgumentParser):
            return candidate
        if held is None:
            held = next((v for v in found.values() if isinstance(v, argparse.ArgumentParser)), None)
        trace = trace.tb_next
    return held


def argv_tokens(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """Lesson tokens for a command line ``parser`` accepts, with every required part."""
    return tuple(_tokens(parser, MAX_SUBCOMMANDS))[:MAX_TOKENS]


def _tokens(parser: argparse.ArgumentParser, depth: int) -> Iterator[str]:
    grouped = _chosen_from_groups(parser)
    later: list[str] = []  # positionals come after the options
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if depth and action.choices:
                name, sub = next(iter(action.choices.items()))
                later += [f"={name}", *_tokens(sub, depth - 1)]
            continue
        if not action.option_strings:
            later += _values(action, positional=True)
        elif action.required or action in grouped:
            yield action.option_strings[-1]  # the long form: it says what it is
            yield from _values(action, positional=False)
    yield from later


def _chosen_from_groups(parser: argparse.ArgumentParser) -> set[argparse.Action]:
    """The first option of each required mutually exclusive group."""
    return {
        group._group_actions[0]
        for group in parser._mutually_exclusive_groups
        if group.required and group._group_actions
    }


def _values(action: argparse.Action, *, positional: bool) -> list[str]:
    nargs = action.nargs
    if nargs == 0 or isinstance(action, _NO_VALUE):
        return []
    if isinstance(nargs, int):
        count = nargs
    elif nargs in ("?", "*"):
        count = 1 if positional else 0  # an input file rather than stdin
    elif nargs == argparse.REMAINDER:
        count = 0
    else:
        count = 1
    return [_value(action) for _ in range(count)]


_NO_VALUE = (
    argparse._StoreConstAction,
    argparse._StoreTrueAction,
    argparse._StoreFalseAction,
    argparse._AppendConstAction,
    argparse._CountAction,
    argparse._HelpAction,
    argparse._VersionAction,
)


def _value(action: argparse.Action) -> str:
    """One value: a choice, a number, a file (to read, or to write for an output)."""
    if action.choices:
        return f"={next(iter(action.choices))}"
    listed = listed_choices(action.help) if isinstance(action.help, str) else []
    if listed:  # "One of 'major', 'minor' or 'patch'": the choices its help names
        return f"={listed[0]}"
    kind: Any = action.type
    name = action.dest if action.dest not in (None, argparse.SUPPRESS) else "value"
    if isinstance(action.metavar, str) and not action.option_strings:
        name = action.metavar
    if kind is None and (name in NUMBER_WORDS or guess_from_name(name) in (int, float)):
        kind = guess_from_name(name) or int  # an untyped `number`, `count`: converted later
    if kind in (int, float):
        default = action.default if isinstance(action.default, (int, float)) else 1
        return f"={kind(default)}"
    if isinstance(kind, argparse.FileType):
        writing = any(flag in getattr(kind, "_mode", "r") for flag in "wax")
        return f"{name}_out" if writing else _input_name(name)
    return _input_name(name)


def _input_name(name: str) -> str:
    """A name that becomes a file to read: one naming an output keeps its ``out``."""
    return name.replace("-", "_") or "value"
