"""Sentences of a grammar the package declares in yacc style, for the self-driven capture.

A parser generated from rule functions (PLY and its many vendored copies: ``p_slice(self, p)``
whose docstring is ``slice : maybe_int ':' maybe_int``, token rules ``t_NUMBER(self, t)``
whose docstring is the token's regular expression) has one entry point per rule, called only by
the generated parser mid-parse with a production object no rule can build. The drivers reach a
rule only when a text they parse uses it, and made-up text uses few. But the grammar is written
down: this module reads it back from the rule docstrings and writes, for each production, the
shortest sentence of the start symbol that uses it — terminals from the lexer's token
patterns (a string ``t_ARROW = r"->"`` or a rule's docstring), its ``literals``, and the
keys of a mapping of reserved words to token names. A lexer state (``states = [("quoted",
"exclusive")]``) gets a text of its own: the rule that enters it (its body pushes or begins
the state), one match of each of its rules, then the rule that leaves it.

A text is named ``grammar:TOP#K`` (the K-th sentence of the package ``TOP``), so a worker that
replays a driver writes it again from the package's own grammar.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from apiprof.engine.discovery.discover import import_public_modules
from apiprof.engine.scenarios.regextext import matching_text
from apiprof.engine.scenarios.spec import ScenarioSpec, text_producer
from apiprof.model.records import ScenarioSource

MAX_SENTENCES = 120
"""Texts written per package at most (one per production, then one per lexer state)."""
MAX_TOKENS = 60
"""A longer sentence is dropped: the shortest use of a production is never that long."""

_RULE_LINE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::|::=)\s*(.*)$")
_SYMBOL = re.compile(r"'(?:\\.|[^'])+'|\"(?:\\.|[^\"])+\"|%prec\s+\w+|\||[A-Za-z_]\w*")

Production = tuple[str, tuple[str, ...]]
_T = TypeVar("_T")


@dataclass
class Grammar:
    """Productions in the order they are written, and what each terminal looks like."""

    productions: list[Production] = field(default_factory=list)
    start: str = ""
    samples: dict[str, str] = field(default_factory=dict)  # terminal -> text it lexes as
    separator: str = " "
    state_texts: list[str] = field(default_factory=list)


def productions_of(docstring: str) -> list[Production]:
    """The productions a yacc-style rule docstring declares (``a : b 'c' | d`` over lines;
    ``%prec`` and what follows it dropped); [] when it is no rule."""
    found: list[Production] = []
    head = ""
    for line in docstring.splitlines():
        matched = _RULE_LINE.match(line)
        if matched:
            head, body = matched.groups()
        elif head and line.strip().startswith("|"):
            body = line.strip()[1:]
        elif line.strip():
            return []  # prose: not a rule
        else:
            continue
        alternative: list[str] = []
        for symbol in [*_SYMBOL.findall(body), "|"]:
            if symbol == "|":
                found.append((head, tuple(alternative)))
                alternative = []
            elif not symbol.startswith("%"):
                alternative.append(symbol)
    return [(head, symbols) for head, symbols in found if head]


def sentences(grammar: Grammar) -> list[str]:
    """For each production, the shortest text of the start symbol that uses it, then the
    lexer states' texts; each once, at most :data:`MAX_SENTENCES`."""
    heads = {head for head, _ in grammar.productions}
    writable = [  # a terminal we cannot write makes its productions unusable
        (head, symbols)
        for head, symbols in grammar.productions
        if all(s in heads or _text(s, grammar) is not None for s in symbols)
    ]
    shortest = _shortest(writable, heads)
    around = _contexts(writable, heads, shortest, grammar.start)
    texts: dict[str, None] = {}
    for head, symbols in writable:
        if head not in around or any(s in heads and s not in shortest for s in symbols):
            continue
        before, after = around[head]
        middle = [token for s in symbols for token in shortest.get(s, (s,))]
        tokens = [*before, *middle, *after]
        if len(tokens) <= MAX_TOKENS:
            texts[grammar.separator.join(str(_text(t, grammar)) for t in tokens)] = None
    texts.update(dict.fromkeys(grammar.state_texts))
    return [text for text in texts if text.strip()][:MAX_SENTENCES]


def _text(terminal: str, grammar: Grammar) -> str | None:
    if terminal[:1] in "'\"" and len(terminal) >= 2:
        return terminal[1:-1].encode().decode("unicode_escape")
    return grammar.samples.get(terminal)


def _shortest(productions: list[Production], heads: set[str]) -> dict[str, tuple[str, ...]]:
    """Each nonterminal's shortest derivation into terminals (a fixed point)."""
    shortest: dict[str, tuple[str, ...]] = {}
    changed = True
    while changed:
        changed = False
        for head, symbols in productions:
            if any(s in heads and s not in shortest for s in symbols):
                continue
            derived = tuple(t for s in symbols for t in shortest.get(s, (s,)))
            if head not in shortest or len(derived) < len(shortest[head]):
                shortest[head] = derived
                changed = True
    return shortest


def _contexts(
    productions: list[Production],
    heads: set[str],
    shortest: dict[str, tuple[str, ...]],
    start: str,
) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """For each nonterminal, the shortest terminals before and after it in a sentence of
    ``start`` (a fixed point, from ``start`` with nothing around it)."""
    around: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {start: ((), ())}
    changed = True
    while changed:
        changed = False
        for head, symbols in productions:
            if head not in around or any(s in heads and s not in shortest for s in symbols):
                continue
            before, after = around[head]
            for index, symbol in enumerate(symbols):
                if symbol not in heads:
                    continue
                left = tuple(t for s in symbols[:index] for t in shortest.get(s, (s,)))
                right = tuple(t for s in symbols[index + 1 :] for t in shortest.get(s, (s,)))
                candidate = ((*before, *left), (*right, *after))
                known = around.get(symbol)
                if known is None or _length(candidate) < _length(known):
                    around[symbol] = candidate
                    changed = True
    return around


def _length(context: tuple[tuple[str, ...], tuple[str, ...]]) -> int:
    return len(context[0]) + len(context[1])


# -- reading the grammar off the package ----------------------------------------------------------


@functools.cache
def package_grammar(top: str) -> tuple[str, ...]:
    """The sentences of the yacc-style grammar the package ``top`` declares (the first holder
    of rules with the most productions), or () when it declares none."""
    holders = list(package_holders(top))
    parsers = [(h, _guarded(_rules, h) or []) for h in holders]
    parsers = [(h, rules) for h, rules in parsers if rules]
    if not parsers:
        return ()
    holder, rules = max(parsers, key=lambda pair: len(pair[1]))
    grammar = Grammar(productions=rules, start=_start(holder, rules))
    for lexer in holders:
        _guarded(_read_lexer, lexer, grammar)
    return tuple(sentences(grammar))


def _guarded(read: Callable[..., _T], *args: object) -> _T | None:
    """``read(*args)``, or None when the package's object refuses to be read (a lazy module,
    an attribute that raises)."""
    try:
        return read(*args)
    except Exception:
        return None


def grammar_text(top: str, index: int) -> str:
    """The ``index``-th sentence of ``top``'s grammar (what a ``grammar:`` driver feeds)."""
    return package_grammar(top)[index]


def grammar_refs(top: str) -> Iterator[tuple[str, str]]:
    """``(grammar:TOP#K, text)`` for each sentence of ``top``'s grammar."""
    for index, text in enumerate(package_grammar(top)):
        yield f"grammar:{top}#{index}", text


def package_holders(top: str) -> Iterator[object]:
    """The package's modules and the classes they define: where rule functions live. Every
    public module is imported first, so the worker that replays a driver numbers the
    sentences as the worker that ran it did, whatever either had imported before."""
    root = _guarded(importlib.import_module, top)
    if isinstance(root, types.ModuleType):
        import_public_modules(root, top)
    for name, module in sorted(sys.modules.copy().items()):
        if not isinstance(module, types.ModuleType) or (
            name != top and not name.startswith(f"{top}.")
        ):
            continue
        yield module
        for value in vars(module).copy().values():
            if isinstance(value, type) and value.__module__ == name:
                yield value


def _rules(holder: object) -> list[Production]:
    """The productions of the ``p_*`` functions ``holder`` has, in source order."""
    found: list[tuple[int, list[Production]]] = []
    for name in dir(holder):
        if not name.startswith("p_") or name == "p_error":
            continue
        function = inspect.unwrap(getattr(holder, name, None))  # type: ignore[arg-type]
        code = getattr(getattr(function, "__func__", function), "__code__", None)
        rules = productions_of(getattr(function, "__doc__", None) or "")
        if code is not None and rules:
            found.append((code.co_firstlineno, rules))
    return [rule for _, rules in sorted(found, key=lambda pair: pair[0]) for rule in rules]


def _start(holder: object, rules: list[Production]) -> str:
    start = getattr(holder, "start", None)
    return start if isinstance(start, str) and start else rules[0][0]


def _read_lexer(holder: object, grammar: Grammar) -> None:
    """Terminal samples, the separator and the state texts from a lexer's ``t_*`` rules."""
    tokens = getattr(holder, "tokens", None)
    if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
        return
    states = _states(holder)
    patterns = _token_patterns(holder)
    for name, pattern in patterns.items():
        if name in tokens and name not in grammar.samples and not _in_state(name, states):
            sample = _sample(pattern)
            if sample is not None:
                grammar.samples[name] = sample
    for value in vars(holder).values() if hasattr(holder, "__dict__") else ():
        if isinstance(value, dict) and value and all(v in tokens for v in value.values()):
            for word, token in value.items():  # reserved words: {"where": "WHERE"}
                if isinstance(word, str):
                    grammar.samples.setdefault(token, word)
    ignored = getattr(holder, "t_ignore", None)
    if isinstance(ignored, str) and " " not in ignored:
        grammar.separator = ""
    for state in states:
        text = _state_text(holder, state, patterns)
        if text:
            grammar.state_texts.append(text)


def _states(holder: object) -> list[str]:
    declared = getattr(holder, "states", None) or ()
    return [s[0] for s in declared if isinstance(s, tuple) and s and isinstance(s[0], str)]


def _in_state(name: str, states: list[str]) -> bool:
    return any(name.startswith(f"{state}_") for state in [*states, "ANY"])


def _token_patterns(holder: object) -> dict[str, str]:
    """Each ``t_NAME`` rule's pattern: the string, or the function's docstring."""
    found: dict[str, str] = {}
    for name in dir(holder):
        if (
            not name.startswith("t_")
            or name in ("t_ignore", "t_error")
            or name.endswith(("_ignore", "_error"))
        ):
            continue
        value = getattr(holder, name, None)
        pattern = value if isinstance(value, str) else getattr(value, "__doc__", None)
        if isinstance(pattern, str) and pattern:
            found[name[2:]] = pattern
    return found


@functools.cache
def _sample(pattern: str) -> str | None:
    try:
        found = matching_text(re.compile(pattern, re.VERBOSE), 1)
    except (re.error, RecursionError):
        return None
    text = found[0] if found else None
    return text if isinstance(text, str) and text and "\n" not in text else None


def _state_text(holder: object, state: str, patterns: dict[str, str]) -> str:
    """The rule entering ``state``, one match of each of its rules, then the rule leaving it."""
    entering = leaving = ""
    inside: list[str] = []
    for name, pattern in patterns.items():
        source = _source(getattr(holder, f"t_{name}", None))
        sample = _sample(pattern)
        if sample is None:
            continue
        if not name.startswith(f"{state}_"):
            if re.search(rf"(?:push_state|begin)\(\s*['\"]{re.escape(state)}['\"]", source):
                entering = entering or sample
        elif re.search(r"pop_state\(|begin\(\s*['\"]INITIAL['\"]", source):
            leaving = leaving or sample
        else:
            inside.append(sample)
    return f"{entering}{''.join(inside)}{leaving}" if entering and leaving else ""


def _source(function: object) -> str:
    try:
        return inspect.getsource(function)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ""


def grammar_spec(ref: str) -> ScenarioSpec | None:
    """The producer of a grammar sentence, ``grammar:TOP#K``; None for a malformed name."""
    top, _, index = ref.removeprefix("grammar:").rpartition("#")
    if not top.isidentifier() or not index.isdigit():
        return None
    return text_producer(
        ref,
        top,
        ScenarioSource.DRIVEN,
        grammar_text,
        int(index),
        description=f"sentence {index} of the grammar {top}'s rule docstrings declare",
        inputs=f"<sentence {index} of {top}'s grammar>",
    )
