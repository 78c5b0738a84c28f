"""Texts of a parser's grammar grown from the package's own tokens, so that its parse results
show every kind of node.

A tree interpreter's ``visit_comparator`` needs the node a parser makes for a comparison, a
statement class's ``get_parameters`` the group a parser makes for a function call: the
package's parser makes them from texts that hold a comparison or a call, and the package's
docstrings seldom show such texts. The package's source does name its grammar's punctuation
(a lexer's ``'=='``, ``'[?'``, ``'{'`` literals), so texts are grown from an accepted seed (a
word, or a text its docstrings show) by a fixed set of templates — the bare token, ``a . a``,
``. a``, ``a .``, ``( a )``, ``a [ a ]``, ``a [ 0 ]``, ``{ a : a }``, ``a [ 0 : 1 ]`` — and a
text is kept when the parser accepts it and its result holds a kind of node no kept text's
result held (a mapping's ``type``, an object's class). Bounded: :data:`MAX_TRIES` parses in
:data:`BUDGET_SECONDS`, each under :data:`TRY_SECONDS`.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import itertools
import time
from collections.abc import Callable, Iterator, Mapping

from apiprof.engine import timeouts
from apiprof.engine.scenarios.examples import package_source_texts
from apiprof.engine.scenarios.reachable import reachable
from apiprof.engine.scenarios.trial import quiet_stdio

MAX_TOKENS = 40
"""Punctuation literals of the package used at most (the most frequent first)."""
MAX_TRIES = 2000
"""Texts parsed per parser at most."""
MAX_KEPT = 40
"""Texts kept per parser at most (each shows a kind of node the others do not)."""
BUDGET_SECONDS = 3.0
TRY_SECONDS = 0.2
WORDS = ("a", "0", "1")
"""Plain operands: a name and numbers."""
PAIRS = {"(": ")", "[": "]", "{": "}", "`": "`", "'": "'", '"': '"', "<": ">"}
"""Openers and the closer each pairs with."""
KIND_KEYS = ("type", "kind", "node_type", "nodetype", "tag")


def grown_texts(parse: Callable[[str], object], seeds: tuple[str, ...], package: str) -> list[str]:
    """Texts ``parse`` accepts whose results show new kinds of nodes, the seeds' first."""
    seen: set[str] = set()
    kept: list[str] = []
    deadline = time.monotonic() + BUDGET_SECONDS
    tries = 0
    for text in _candidates(seeds, tokens(package)):
        if tries >= MAX_TRIES or len(kept) >= MAX_KEPT or time.monotonic() > deadline:
            break
        tries += 1
        try:
            with timeouts.alarm(TRY_SECONDS), quiet_stdio():
                result = parse(text)
        except (Exception, timeouts.CallTimeout):  # not of its grammar, or too slow to try
            continue
        shown = kinds(result, package) - seen
        if shown:
            seen |= shown
            kept.append(text)
    return kept


def kinds(value: object, package: str) -> set[str]:
    """The kinds of node ``value`` holds: mappings' kind values and the package's classes."""
    found: set[str] = set()
    for _, held in reachable(value, package):
        if isinstance(held, Mapping):
            found.update(
                f"{key}={held[key]}" for key in KIND_KEYS if isinstance(held.get(key), str)
            )
        elif (type(held).__module__ or "").split(".")[0] == package:
            found.add(type(held).__qualname__)
    return found


def _candidates(seeds: tuple[str, ...], punctuation: tuple[str, ...]) -> Iterator[str]:
    """The seeds, then each template over the seeds' first, the words and the tokens."""
    yield from seeds
    operand = seeds[0] if seeds else WORDS[0]
    word, number, other = operand, WORDS[1], WORDS[2]
    closers = [(opener, PAIRS[opener[-1]]) for opener in punctuation if opener[-1] in PAIRS]
    yield from punctuation
    for token in punctuation:
        yield f"{word}{token}{word}"
        yield f"{token}{word}"
        yield f"{word}{token}"
    for opener, closer in closers:
        yield f"{opener}{word}{closer}"
        yield f"{opener}{number}{closer}"
        yield f"{word}{opener}{word}{closer}"
        yield f"{word}{opener}{number}{closer}"
        yield f"{word}{opener}{closer}"
    for (opener, closer), token in itertools.product(closers, punctuation):
        yield f"{opener}{word}{token}{word}{closer}"
        yield f"{word}{opener}{number}{token}{other}{closer}"
        yield f"{word}{opener}{token}{closer}"
        yield f"{word}{opener}{token}{word}{closer}"


@functools.cache
def tokens(package: str) -> tuple[str, ...]:
    """The short punctuation string literals in the package's source, most frequent first,
    then the single characters doubled (``||``, ``&&``: operators a lexer reads a character at
    a time)."""
    counts: dict[str, int] = {}
    with contextlib.suppress(Exception):  # its source is found through the imported package
        importlib.import_module(package)
    for source in package_source_texts(package):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            value = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and _punctuation(value):
                counts[value] = counts.get(value, 0) + 1
    ranked = sorted(counts, key=lambda token: (-counts[token], token))[:MAX_TOKENS]
    doubled = [token * 2 for token in ranked if len(token) == 1 and token * 2 not in ranked]
    return (*ranked, *doubled)  # a lexer that reads '|' and then looks for a second one


def _punctuation(text: str) -> bool:
    return 0 < len(text) <= 3 and not any(c.isalnum() or c.isspace() or c == "\\" for c in text)
