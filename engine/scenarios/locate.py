"""Which line of a (valid) TOML text sets each key: tomllib reports positions only for syntax
errors, and a scenario file's mistakes are reported as file:line."""

from __future__ import annotations

import re

# -- locating keys in TOML text --------------------------------------------------------------

_KEY_PART = r'(?:"(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_\-]+)'
_KEY_LINE = re.compile(rf"^\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=")
_HEADER_LINE = re.compile(rf"^\s*(\[\[?)\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*\]\]?")


def locate_keys(text: str) -> dict[tuple[str | int, ...], int]:
    """Map each key path — ``("scenario", 2, "sizes")`` — to the 1-based line that sets it.

    tomllib reports positions only for syntax errors; this light scan of the (already valid)
    text lets semantic errors point at the right line too.
    """
    lines: dict[tuple[str | int, ...], int] = {}
    arrays: dict[tuple[str | int, ...], int] = {}  # array-of-tables path -> current index
    table: tuple[str | int, ...] = ()
    for number, line in enumerate(_statement_lines(text), start=1):
        if line is None:
            continue
        if header := _HEADER_LINE.match(line):
            keys = _split_key(header.group(2))
            if header.group(1) == "[[":
                array = (*_with_indexes(keys[:-1], arrays), keys[-1])
                arrays[array] = arrays.get(array, -1) + 1
                table = (*array, arrays[array])
            else:
                table = _with_indexes(keys, arrays)
            lines.setdefault(table, number)
            continue
        if key := _KEY_LINE.match(line):
            lines.setdefault((*table, *_split_key(key.group(1))), number)
    return lines


def _with_indexes(
    keys: list[str], arrays: dict[tuple[str | int, ...], int]
) -> tuple[str | int, ...]:
    """``[scenario.inputs]`` after the third ``[[scenario]]`` is ``("scenario", 2, "inputs")``."""
    path: tuple[str | int, ...] = ()
    for key in keys:
        path = (*path, key)
        if path in arrays:
            path = (*path, arrays[path])
    return path


def _split_key(key: str) -> list[str]:
    return [part.strip().strip("\"'") for part in re.findall(_KEY_PART, key)]


def _statement_lines(text: str) -> list[str | None]:
    """The text's lines, with None for lines that start inside a multi-line string or array."""
    result: list[str | None] = []
    quote, depth = "", 0
    for line in text.splitlines():
        result.append(line if not quote and depth == 0 else None)
        quote, depth = _scan_line(line, quote, depth)
    return result


def _scan_line(line: str, quote: str, depth: int) -> tuple[str, int]:
    """Carry multi-line string and bracket state across one line."""
    i = 0
    while i < len(line):
        if quote:
            if quote == '"""' and line[i] == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i, quote = i + 3, ""
                continue
            i += 1
            continue
        char = line[i]
        if char == "#":
            break
        if line.startswith('"""', i) or line.startswith("'''", i):
            quote, i = line[i : i + 3], i + 3
            continue
        if char in "\"'":
            end = i + 1
            while end < len(line) and line[end] != char:
                end += 2 if char == '"' and line[end] == "\\" else 1
            i = end + 1
            continue
        if char in "[{" and (depth or "=" in line[:i]):
            depth += 1
        elif char in "]}" and depth:
            depth -= 1
        i += 1
    return quote, depth
