"""The parsed command line a subcommand's handler takes.

``cmd_bump(args)`` reads ``args.bump`` and ``args.version``: what the package's own parser makes
of ``bump major 1.2.3``, where the ``bump`` subparser says ``set_defaults(func=cmd_bump)``. An
empty ``Namespace`` (or one repaired attribute by attribute) lacks what the parser fills in, and
values of the wrong kind. The parser comes from a function of the package that builds one and
needs no arguments (``createparser()``) or a parser the module holds; the command line from the
subparser itself (:mod:`.argvparser`), and the Namespace from parsing it.
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from apiprof.engine import timeouts
from apiprof.engine.scenarios.argvparser import MAX_SUBCOMMANDS, argv_tokens
from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.factories import public_values
from apiprof.engine.scenarios.trial import quiet_stdio
from apiprof.engine.scenarios.usage import function_tree

NAMESPACE_NAMES = frozenset(["args", "arguments", "namespace", "options", "opts", "parsed"])
"""Untyped parameter names that hold a parsed command line when a subparser dispatches to it."""
PARSER_SECONDS = 2.0
"""How long a function that builds the package's parser may take."""


@dataclass(frozen=True)
class ParsedArguments:
    """Annotation marker: the Namespace the package's parser makes for the subcommand whose
    defaults name ``handler``."""

    handler: Callable[..., object]

    def __repr__(self) -> str:  # used to deduplicate candidates and in descriptions
        return f"ParsedArguments({getattr(self.handler, '__qualname__', self.handler)!r})"


def namespace_candidate(
    target: Callable[..., object], parameter: str, annotation: Any
) -> ParsedArguments | None:
    """The marker for ``target``'s ``parameter`` when it takes a parsed command line (annotated
    so, or an untyped ``args``) and a parser of the package dispatches to ``target``."""
    if annotation is not argparse.Namespace and not (
        annotation is inspect.Parameter.empty and parameter in NAMESPACE_NAMES
    ):
        return None
    if not any(True for _ in _dispatching(target)):
        return None
    return ParsedArguments(target)


def parsed_arguments(marker: ParsedArguments, context: BuildContext, name: str) -> Any:
    """Parse a command line the handler's subparser accepts with the package's parser."""
    from apiprof.engine.scenarios.repaired import argv_words  # repaired builds values: a cycle

    for parser, path in _dispatching(marker.handler):
        subparser = _follow(parser, path)
        argv = [*path, *argv_words(argv_tokens(subparser), context)]
        try:
            with quiet_stdio():
                parsed = parser.parse_args(argv)
        except SystemExit:  # the built command line was refused: the next parser
            continue
        context.notes[name] = f"the parser's reading of {' '.join(argv)!r}"
        return parsed
    raise CannotSynthesize(f"parameter {name!r}: the package's parser refused every command line")


def _dispatching(
    handler: Callable[..., object],
) -> Iterator[tuple[argparse.ArgumentParser, list[str]]]:
    """``(parser, subcommand path)`` for each parser of the package with a subcommand whose
    defaults name ``handler``."""
    module = getattr(handler, "__module__", "") or ""
    for parser in _package_parsers(module.split(".")[0]):
        path = _path_to(parser, handler, MAX_SUBCOMMANDS)
        if path is not None:
            yield parser, path


def _path_to(
    parser: argparse.ArgumentParser, handler: Callable[..., object], depth: int
) -> list[str] | None:
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction) or not depth:
            continue
        for name, sub in action.choices.items():
            if any(value is handler for value in sub._defaults.values()):
                return [name]
            deeper = _path_to(sub, handler, depth - 1)
            if deeper is not None:
                return [name, *deeper]
    return None


def _follow(parser: argparse.ArgumentParser, path: list[str]) -> argparse.ArgumentParser:
    for name in path:
        parser = next(
            action.choices[name]
            for action in parser._actions
            if isinstance(action, argparse._SubParsersAction) and name in action.choices
        )
    return parser


@functools.cache
def _package_parsers(top: str) -> tuple[argparse.ArgumentParser, ...]:
    """Parsers the package's modules hold, then those its argument-less functions that call
    ``ArgumentParser(...)`` build (each built once per worker)."""
    held: list[argparse.ArgumentParser] = []
    builders = []
    for _, _, value in public_values(top, own_module=True):
        if isinstance(value, argparse.ArgumentParser):
            held.append(value)
        elif inspect.isfunction(value) and _builds_parser(value):
            builders.append(value)
    for builder in builders:
        try:
            with timeouts.alarm(PARSER_SECONDS), quiet_stdio():
                made = builder()
        except (Exception, SystemExit, timeouts.CallTimeout):  # it needed more after all
            continue
        if isinstance(made, argparse.ArgumentParser):
            held.append(made)
    return tuple(held)


def _builds_parser(function: Callable[..., object]) -> bool:
    """A function without required parameters whose body calls ``ArgumentParser(...)``."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    if any(
        p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        for p in parameters
    ):
        return False
    tree = function_tree(function)
    return tree is not None and any(
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "ArgumentParser")
            or (isinstance(node.func, ast.Name) and node.func.id == "ArgumentParser")
        )
        for node in ast.walk(tree)
    )
