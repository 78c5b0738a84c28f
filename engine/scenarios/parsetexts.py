"""Texts in a parser's own format, from the package itself, for its parse entry points.

A parser fed made-up prose refuses it on the first token (pycparser's ``CParser.parse``: "before:
do"), and nothing in its signature says what the grammar is. The package usually shows some of
it: literal blocks in its docstrings, inline literals (````int *c[5];````) and code in its
comments, files under an ``examples`` directory installed with it. Each such snippet is tried
on the entry point itself — one call with the snippet as its only argument, under a short
time limit — and those it accepts become candidates for its text parameter (credited to the
``examples`` source, switched off with ``--no-examples``). Only entry points whose name says they
read a grammar (``parse``, ``loads``, ``compile``, ``tokenize``...) and whose one required
parameter is the text are tried, so other functions pay nothing. A parser of files
(``parse_file(filename)``) is tried, and called, with each snippet written to a file in the
sandbox.
"""

from __future__ import annotations

import functools
import inspect
import io
import re
import sys
import time
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from apiprof.engine import timeouts
from apiprof.engine.scenarios.classnames import snake_case
from apiprof.engine.scenarios.doctexts import MAX_TEXT, package_texts
from apiprof.engine.scenarios.examples import ExampleValues, package_source_texts
from apiprof.engine.scenarios.heuristics import guess_from_name
from apiprof.engine.scenarios.resources import sandbox_text_file
from apiprof.engine.scenarios.trial import quiet_stdio
from apiprof.engine.scenarios.typetext import PathMarker

PARSE_WORDS = frozenset(
    ["parse", "parser", "loads", "compile", "tokenize", "lex", "scan", "fromstring", "decode"]
)
"""Words in an entry point's name that say it reads text in a grammar of the package's own."""
EXAMPLE_DIRECTORIES = ("examples", "example", "samples")
"""Directories installed inside a package whose files are inputs of its grammar."""
MAX_SNIPPETS = 300
"""Snippets tried per entry point at most (files first, then literal blocks, inline, comments)."""
MAX_ACCEPTED = 4
"""Accepted texts kept per entry point (variants rotate through them)."""
TRY_SECONDS = 0.5
"""Time limit of one trial parse."""
BUDGET_SECONDS = 5.0
"""Time all trial parses of one entry point may take together."""

_INLINE = re.compile(r"``([^`\n]{4,400})``")


@dataclass(frozen=True)
class SnippetFiles:
    """Annotation marker: a file in the sandbox holding one of ``texts`` (the variant picks)."""

    texts: tuple[str, ...]

    def path(self, text: str, parameter: str) -> str:
        return sandbox_text_file(text, parameter)

    def __repr__(self) -> str:  # used to deduplicate candidates
        return f"SnippetFiles({len(self.texts)} texts)"


def parser_texts(
    target: Callable[..., object], parameter: str
) -> ExampleValues | SnippetFiles | None:
    """The package's own texts ``target`` accepts for ``parameter``, or None (not a parser,
    the text is not its one required parameter, or no snippet parses). Tried once per
    callable (by its qualified name: a method is tried on the first receiver built)."""
    name = getattr(target, "__name__", "") or ""
    if not PARSE_WORDS & set(snake_case(name).split("_")) or _sole_required(target) != parameter:
        return None
    module = getattr(target, "__module__", "") or ""
    key = f"{module}.{getattr(target, '__qualname__', name)}"
    files = guess_from_name(parameter) is PathMarker  # parse_file(filename)
    if key not in _TRIED:
        _TRIED[key] = _accepted(target, snippets(module.split(".")[0]), parameter if files else "")
    if not _TRIED[key]:
        return None
    return SnippetFiles(_TRIED[key]) if files else ExampleValues(_TRIED[key])


_TRIED: dict[str, tuple[str, ...]] = {}
"""Qualified name -> the texts it accepted (a worker tries each parser once)."""


def _sole_required(target: Callable[..., object]) -> str:
    """The name of ``target``'s only required parameter ("" when it has none or several)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return ""
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    return required[0] if len(required) == 1 else ""


def _accepted(
    target: Callable[..., object], texts: tuple[str, ...], in_file: str = ""
) -> tuple[str, ...]:
    """The texts ``target`` returns from (one call each), at most :data:`MAX_ACCEPTED`; with
    ``in_file`` (the parameter's name) it is given each in a sandbox file."""
    accepted: list[str] = []
    deadline = time.monotonic() + BUDGET_SECONDS
    for text in texts[:MAX_SNIPPETS]:
        if len(accepted) >= MAX_ACCEPTED or time.monotonic() > deadline:
            break
        try:
            with timeouts.alarm(TRY_SECONDS), quiet_stdio():
                target(sandbox_text_file(text, in_file) if in_file else text)
        except (
            Exception,
            SystemExit,
            timeouts.CallTimeout,
        ):  # refused, or too slow: not its grammar
            continue
        accepted.append(text)
    return tuple(accepted)


@functools.cache
def snippets(top: str) -> tuple[str, ...]:
    """Candidate texts of the package ``top``: example files, docstring literal blocks, inline
    literals, then comments; each once, none longer than a driver text may be."""
    found = dict.fromkeys(
        text
        for text in (
            *_example_files(top),
            *(text for _, text in package_texts(top)),
            *_inline_and_comments(top),
        )
        if text.strip() and len(text) <= MAX_TEXT
    )
    return tuple(found)


def _inline_and_comments(top: str) -> Iterator[str]:
    sources = package_source_texts(top)
    for source in sources:
        yield from _INLINE.findall(source)
    for source in sources:
        yield from _comments(source)


def _comments(source: str) -> Iterator[str]:
    """The text of each comment (after ``#``), long enough to be code."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                text = token.string.lstrip("#").strip()
                if len(text) > 4:
                    yield text
    except (tokenize.TokenError, SyntaxError):  # a file that does not tokenize: no comments
        return


def _example_files(top: str) -> Iterator[str]:
    """The text of each file under an examples directory inside the package."""
    module = sys.modules.get(top)
    for root in map(Path, getattr(module, "__path__", []) or []):
        for directory in EXAMPLE_DIRECTORIES:
            folder = root / directory
            if not folder.is_dir():
                continue
            for path in sorted(folder.rglob("*")):
                if path.is_file() and path.suffix not in (".py", ".pyc"):
                    try:
                        yield path.read_text(encoding="utf-8")
                    except (OSError, UnicodeDecodeError):
                        continue
