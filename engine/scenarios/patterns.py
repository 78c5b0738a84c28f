"""The ``patterns`` source: regular-expression matches and texts, from the package's own patterns.

Handlers called with a match of their own pattern (an inline processor's ``handleMatch(m,
data)``, a tokenizer's action) fail on any made-up value: ``m.group(2)`` wants a match with that
group. A parameter annotated ``re.Match``, or named like one (``m``, ``match``, ``mo``) and used
like one (``.group(``, ``.start(``, ``.groups(``), gets a real match of a pattern the package
holds — the receiver's (``compiled_re``, ``pattern``, any compiled attribute), else its
module's — that has every group the body asks for, on text generated from the pattern
(:mod:`.regextext`, sized where the pattern repeats); a text parameter beside it gets the text
the match was taken from. A constructor parameter named ``pattern`` / ``regex`` takes the
module's pattern constants, those the package itself passes to that class first (so its handler
sees the groups it expects). A parameter the body matches against a known pattern
(``NUMBER_RE.match(s)``, ``re.match(r"...", s)``, ``self.regex.search(s)``) gets text that
pattern accepts. Everything is rebuilt from the same seed and variant in the measuring worker.
"""

from __future__ import annotations

import ast
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.callees import passed_on
from apiprof.engine.scenarios.examples import ExampleValues
from apiprof.engine.scenarios.heldpatterns import (
    MAX_PATTERNS,
    held_patterns,
    is_compile,
    module_patterns,
    resolve_pattern,
)
from apiprof.engine.scenarios.regextext import match_of, matching_text
from apiprof.engine.scenarios.usage import Usage, constructor_of, function_tree, usage_of

MATCH_NAMES = frozenset(
    [
        "m",
        "mo",
        "match",
        "matchobj",
        "match_obj",
        "matchobject",
        "match_object",
        "mobj",
        "regex_match",
        "re_match",
        "matched",
        "found",
    ]
)
"""Names a match object goes by."""
MATCH_USES = frozenset(["group", "groups", "groupdict", "span", "lastindex", "lastgroup", "expand"])
"""Attributes only a match has (``start`` and ``end`` count with a match's name)."""
PATTERN_NAMES = frozenset(["pattern", "regex", "regexp", "re_pattern", "rx", "pat", "compiled_re"])
"""Names of a parameter that takes a regular expression's text."""
TEXT_NAMES = frozenset(["data", "text", "string", "s", "line", "source", "src", "content", "buf"])
"""Names of a parameter that, beside a match, is the text it was taken from."""
_MATCHING_CALLS = frozenset(["match", "fullmatch", "search", "finditer", "findall", "split"])


@dataclass(frozen=True)
class MatchOf:
    """Annotation marker: a match of a pattern the package holds, with group ``index`` and the
    named groups ``names`` (what the body asks of it); ``attributes`` are the receiver's
    pattern attributes the method itself matches with, tried first."""

    module: str
    index: int = 0
    names: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()


@dataclass(frozen=True)
class MatchingText:
    """Annotation marker: text the pattern ``expression`` (source text in ``module``, or
    ``self.<attribute>`` of the receiver) accepts."""

    module: str
    expression: str
    elements: bool = False  # a list of such texts (the body matches its elements)


@dataclass(frozen=True)
class MatchedText:
    """Annotation marker: the text the match built for a sibling parameter was taken from."""


def pattern_candidates(
    target: Callable[..., object],
    parameter: inspect.Parameter,
    signature: inspect.Signature,
    annotation: Any,
    usage: Usage | None,
) -> list[Any]:
    """What the ``patterns`` source offers ``parameter`` (unannotated, or annotated as a match
    or a string), strongest first."""
    module = getattr(target, "__module__", "") or ""
    plain = annotation is inspect.Parameter.empty or annotation in (str, bytes, Any, object)
    if _is_match_type(annotation) or (plain and _used_as_match(parameter.name, usage)):
        return [_match_of(target, parameter.name, module)]
    textual = plain or typing.get_args(annotation) in ((str,), (bytes,))  # list[str] too
    if not textual:
        return []
    found: list[Any] = []
    tree = _tree(target)
    matched = _matched_here_or_on(target, tree, parameter.name) if plain else []
    found.extend(MatchingText(where, expression) for where, expression in matched)
    expression = matched[0][1] if matched else ""
    for element in _element_names(tree, parameter.name) if not expression else ():
        expression = _matched_with(tree, element)  # for line in lines: RE.match(line)
        if expression:
            found.append(MatchingText(module, expression, elements=True))
            break
    if not plain:
        return found
    names = list(signature.parameters)
    before = names[: names.index(parameter.name)]
    if parameter.name in TEXT_NAMES and any(
        _used_as_match(name, usage_of(target, name)) or _is_match_type(_annotation(signature, name))
        for name in before
    ):
        found.append(MatchedText())
    if parameter.name.lower() in PATTERN_NAMES or _compiled(target, parameter.name):
        texts = module_patterns(target)
        if texts:
            found.append(ExampleValues(texts))
    return found


def build_pattern_value(tp: Any, context: BuildContext, name: str) -> Any:
    """Build one of this module's markers (see :func:`pattern_candidates`)."""
    if isinstance(tp, MatchOf):
        patterns = [
            p for p in held_patterns(context.receiver, tp.attributes, tp.module) if _fits(p, tp)
        ]
        if not patterns:
            raise CannotSynthesize(
                f"parameter {name!r}: no pattern of the receiver or module {tp.module} has "
                f"group {tp.index}{' and ' + ', '.join(tp.names) if tp.names else ''}"
            )
        pattern = context.pick(patterns[:MAX_PATTERNS])
        match = _match(pattern, context, name)
        context.notes[name] = f"a match of {_shown(pattern)}"
        return match
    if isinstance(tp, MatchingText):
        holder = context.receiver if context.receiver is not None else context.owner
        pattern = resolve_pattern(tp.expression, tp.module, holder)
        if pattern is None:
            raise CannotSynthesize(f"parameter {name!r}: cannot find the pattern {tp.expression}")
        if tp.elements:  # n texts, each as short as the pattern allows
            context.notes[name] = f"texts {_shown(pattern)} matches"
            found = matching_text(pattern, 1, context.seed)
            if found is None:
                raise CannotSynthesize(f"parameter {name!r}: no text matches {pattern.pattern!r}")
            context.sized = True
            return [found[0]] * context.n
        context.notes[name] = f"text {_shown(pattern)} matches"
        return _text(pattern, context, name)
    if isinstance(tp, MatchedText):
        if context.matched is None:
            raise CannotSynthesize(f"parameter {name!r}: no match was built beside it")
        context.notes[name] = "the text of the match beside it"
        return context.matched
    raise TypeError(tp)


def _shown(pattern: re.Pattern[Any], limit: int = 48) -> str:
    text = repr(pattern.pattern)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _match(pattern: re.Pattern[Any], context: BuildContext, name: str) -> re.Match[Any]:
    text = _text(pattern, context, name)
    match = match_of(pattern, text)
    if match is None:
        raise CannotSynthesize(f"parameter {name!r}: no text matches {pattern.pattern!r}")
    context.matched = text
    return match


def _text(pattern: re.Pattern[Any], context: BuildContext, name: str) -> Any:
    found = matching_text(pattern, context.n, context.seed)
    if found is None:
        raise CannotSynthesize(
            f"parameter {name!r}: no text found that {pattern.pattern!r} matches"
        )
    text, sized = found
    context.sized |= sized
    return text


def _is_match_type(annotation: Any) -> bool:
    return annotation is re.Match or typing.get_origin(annotation) is re.Match


def _used_as_match(name: str, usage: Usage | None) -> bool:
    if usage is None:
        return False
    uses = usage.attributes
    return bool(uses & MATCH_USES) or (name in MATCH_NAMES and bool(uses & {"start", "end"}))


def _annotation(signature: inspect.Signature, name: str) -> Any:
    return signature.parameters[name].annotation


def _match_of(target: Callable[..., object], parameter: str, module: str) -> MatchOf:
    """What the body asks of the match (``m.group(2)``, ``m.group('name')``, ``m['name']``)
    and which of the receiver's patterns it matches with itself."""
    tree = _tree(target)
    index, names = 0, []
    attributes = []
    for node in ast.walk(tree) if tree is not None else ():
        if _is_call_on(node, parameter, {"group", "start", "end", "span"}):
            call = typing.cast(ast.Call, node)
            for argument in call.args:
                if isinstance(argument, ast.Constant) and isinstance(argument.value, int):
                    index = max(index, argument.value)
                elif isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    names.append(argument.value)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == parameter
            and isinstance(node.slice, ast.Constant)
        ):
            key = node.slice.value
            if isinstance(key, int):
                index = max(index, key)
            elif isinstance(key, str):
                names.append(key)
        elif _self_pattern_call(node):
            attributes.append(typing.cast(Any, node).func.value.attr)
    return MatchOf(module, index, tuple(dict.fromkeys(names)), tuple(dict.fromkeys(attributes)))


def _is_call_on(node: ast.AST, name: str, methods: set[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in methods
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == name
    )


def _self_pattern_call(node: ast.AST) -> bool:
    """``self.<attribute>.match(...)`` (or search, ...)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MATCHING_CALLS
        and isinstance(node.func.value, ast.Attribute)
        and isinstance(node.func.value.value, ast.Name)
        and node.func.value.value.id == "self"
    )


def _tree(target: Callable[..., object]) -> ast.AST | None:
    function = inspect.unwrap(getattr(target, "__func__", target))
    if inspect.isclass(function):
        function = constructor_of(function)
    return function_tree(function)


def _fits(pattern: re.Pattern[Any], wanted: MatchOf) -> bool:
    return pattern.groups >= wanted.index and all(n in pattern.groupindex for n in wanted.names)


MAX_TRIED_PATTERNS = 3
"""Patterns offered at most for one parameter: a parser that tries its forms in turn
(``DATETIME.match(s)``, else ``DATE.match(s)``, else ``TIME.match(s)``) accepts text of any
of them, and the caller may want only the last (``time(raw)`` refusing a datetime)."""


def _matched_here_or_on(
    target: Callable[..., object], tree: ast.AST | None, parameter: str
) -> list[tuple[str, str]]:
    """(module, pattern expression) for each pattern the body matches ``parameter`` with, in
    the order it tries them; else those of the package's callee the parameter is handed to
    unchanged (``time(raw)`` only calls ``parse_rfc3339(raw)``, which does the matching)."""
    module = getattr(target, "__module__", "") or ""
    here = _all_matched_with(tree, parameter)
    if here:
        return [(module, expression) for expression in here[:MAX_TRIED_PATTERNS]]
    raw = inspect.unwrap(getattr(target, "__func__", target))
    for callee, name in passed_on(raw, parameter) if callable(raw) else ():
        there = _all_matched_with(_tree(callee), name)
        if there:
            where = getattr(callee, "__module__", "") or module
            return [(where, expression) for expression in there[:MAX_TRIED_PATTERNS]]
    return []


def _matched_with(tree: ast.AST | None, parameter: str) -> str:
    """The source text of the first pattern the body matches ``parameter`` with ("" when it
    matches with none)."""
    found = _all_matched_with(tree, parameter)
    return found[0] if found else ""


def _all_matched_with(tree: ast.AST | None, parameter: str) -> list[str]:
    """The source text of each pattern the body matches ``parameter`` with, in source order:
    ``P`` in ``re.match(P, parameter)`` or ``P.match(parameter)``."""
    found: list[str] = []
    nodes = sorted(
        (node for node in ast.walk(tree) if isinstance(node, ast.Call)) if tree is not None else (),
        key=lambda node: (node.lineno, node.col_offset),
    )
    for node in nodes:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MATCHING_CALLS
        ):
            continue
        on = node.func.value
        if isinstance(on, ast.Name) and on.id == "re":
            if len(node.args) >= 2 and _names(node.args[1], parameter):
                found.append(ast.unparse(node.args[0]))
        elif (
            node.args and _names(node.args[0], parameter) and (_is_reference(on) or is_compile(on))
        ):
            found.append(ast.unparse(on))
    return list(dict.fromkeys(found))


def _element_names(tree: ast.AST | None, parameter: str) -> list[str]:
    """Locals that hold one element of ``parameter`` without taking it out: ``x =
    parameter[0]``, ``for x in parameter`` (``parameter.pop(0)`` of a matching element
    empties the list the measured calls share, where a refused one is put back)."""
    found = []
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.For, ast.comprehension)) and _names(node.iter, parameter):
            target, value = node.target, None
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        else:
            continue
        taken = value is None or (
            isinstance(value, ast.Subscript) and _names(value.value, parameter)
        )
        if taken and isinstance(target, ast.Name):
            found.append(target.id)
    return found


def _names(node: ast.expr, parameter: str) -> bool:
    """``parameter`` itself, or the parameter tidied (``text.strip()``, ``line.lower()``)."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _TIDYING
    ):
        node = node.func.value
    return isinstance(node, ast.Name) and node.id == parameter


_TIDYING = frozenset(["strip", "lstrip", "rstrip", "lower", "upper", "casefold", "expandtabs"])
"""String methods a parser applies before matching, which keep text a pattern accepts."""


def _is_reference(node: ast.expr) -> bool:
    """A name, or a dotted attribute path (``self.regex``, ``patterns.NUMBER``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _compiled(target: Callable[..., object], parameter: str) -> bool:
    """Whether the body compiles ``parameter`` as a pattern (``re.compile(parameter)``)."""
    tree = _tree(target)
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "compile"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
        and node.args
        and _names(node.args[0], parameter)
        for node in (ast.walk(tree) if tree is not None else ())
    )
