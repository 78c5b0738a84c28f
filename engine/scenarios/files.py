"""TOML scenario files: read, check and turn into ``ScenarioSpec`` values, with file:line errors.

The format is documented in ``docs/scenario-format.md``.
"""

from __future__ import annotations

import difflib
import keyword
import re
import tomllib
from pathlib import Path
from typing import Any

from apiprof.engine.scenarios.locate import locate_keys
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, FORMAT_VERSION, ScenarioSpec
from apiprof.errors import ScenarioFileError, UsageError
from apiprof.model.records import ScenarioSource

# -- scenario files --------------------------------------------------------------------------

_TOP_KEYS = {"format": int, "package": str, "defaults": dict, "scenario": list}
_DEFAULT_KEYS = {"setup": str, "size_axis": str, "sizes": list, "repeat": int}
_SCENARIO_KEYS = {
    "name": str,
    "target": str,
    "call": str,
    "description": str,
    "setup": str,
    "inputs": dict,
    "size_axis": str,
    "sizes": list,
    "targets": list,
    "repeat": int,
    "enabled": bool,
}
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
MAX_CODE = 65536
"""Longest ``setup`` or ``call`` a scenario file may hold (characters)."""
_TOML_TYPE = {
    int: "an integer",
    str: "a string",
    dict: "a table",
    list: "an array",
    bool: "true or false",
}


def load_scenario_file(path: str | Path) -> list[ScenarioSpec]:
    """The enabled scenarios of a TOML scenario file; any problem raises ScenarioFileError(file:line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioFileError(
            str(path), None, f"cannot read the scenario file: {error}"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line, problem = _toml_error_position(error)
        raise ScenarioFileError(str(path), line, f"not valid TOML: {problem}") from None
    except RecursionError:
        raise ScenarioFileError(
            str(path), None, "arrays or tables nest deeper than apiprof reads; flatten them"
        ) from None
    return _FileReader(path, text, data).read()


def _toml_error_position(error: tomllib.TOMLDecodeError) -> tuple[int | None, str]:
    message = str(error)
    if match := re.search(r"\s*\(at line (\d+), column \d+\)", message):
        return int(match.group(1)), message[: match.start()] + message[match.end() :]
    if match := re.search(r"\s*\(at end of document\)", message):
        return message.count("\n") or None, message[: match.start()]
    return getattr(error, "lineno", None), message


class _FileReader:
    """Validates the parsed TOML of one file and builds its specs, reporting file:line."""

    def __init__(self, path: Path, text: str, data: dict[str, Any]) -> None:
        self.path, self.text, self.data = path, text, data
        self.lines = locate_keys(text)

    def fail(self, key_path: tuple[str | int, ...], problem: str) -> ScenarioFileError:
        return ScenarioFileError(str(self.path), self.line_of(key_path), problem)

    def line_of(self, key_path: tuple[str | int, ...]) -> int | None:
        for end in range(len(key_path), 0, -1):
            if (line := self.lines.get(key_path[:end])) is not None:
                return line
        return None

    def read(self) -> list[ScenarioSpec]:
        self.check_keys((), self.data, _TOP_KEYS, "the file")
        version = self.data.get("format")
        if version is None:
            raise ScenarioFileError(
                str(self.path), 1, f"missing `format = {FORMAT_VERSION}` at the top of the file"
            )
        if version != FORMAT_VERSION:
            raise self.fail(
                ("format",),
                f"unsupported format {version}; this apiprof reads format "
                f"{FORMAT_VERSION} (upgrade apiprof or rewrite the file)",
            )
        defaults = self.data.get("defaults", {})
        self.check_keys(("defaults",), defaults, _DEFAULT_KEYS, "[defaults]")
        self.check_sizes(("defaults",), defaults)
        self.check_code(("defaults", "setup"), defaults.get("setup", ""))
        specs: list[ScenarioSpec] = []
        names: dict[str, int | None] = {}
        for index, table in enumerate(self.data.get("scenario", [])):
            where = ("scenario", index)
            if not isinstance(table, dict):
                raise self.fail(
                    ("scenario",),
                    "`scenario` must be an array of tables: write [[scenario]] headers",
                )
            spec = self.read_scenario(where, table, defaults)
            if spec.id in names:
                raise self.fail(
                    (*where, "name"),
                    f"duplicate scenario name {table['name']!r} "
                    f"(first used on line {names[spec.id]}); names must be unique",
                )
            names[spec.id] = self.line_of((*where, "name"))
            if table.get("enabled", True):
                specs.append(spec)
        return specs

    def check_keys(
        self,
        where: tuple[str | int, ...],
        table: dict[str, Any],
        allowed: dict[str, type],
        label: str,
    ) -> None:
        for key, value in table.items():
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = (
                    f"did you mean `{close[0]}`?"
                    if close
                    else f"allowed: {', '.join(sorted(allowed))}"
                )
                raise self.fail((*where, key), f"unknown key `{key}` in {label}; {hint}")
            expected = allowed[key]
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise self.fail(
                    (*where, key), f"`{key}` must be {_TOML_TYPE[expected]}, got {value!r}"
                )

    def check_sizes(self, where: tuple[str | int, ...], table: dict[str, Any]) -> None:
        sizes = table.get("sizes")
        if sizes is not None and (not sizes or not all(type(s) is int and s >= 0 for s in sizes)):
            raise self.fail(
                (*where, "sizes"),
                f"`sizes` must be a non-empty array of integers >= 0, got {sizes!r}",
            )
        axis = table.get("size_axis")
        # "" turns a default axis off
        if (axis and not axis.isidentifier()) or (
            isinstance(axis, str) and keyword.iskeyword(axis)
        ):
            raise self.fail(
                (*where, "size_axis"), f"`size_axis` must be a Python variable name, got {axis!r}"
            )
        repeat = table.get("repeat")
        if repeat is not None and repeat < 1:
            raise self.fail((*where, "repeat"), f"`repeat` must be at least 1, got {repeat}")
        targets = table.get("targets")
        if targets is not None and not all(isinstance(t, str) and t for t in targets):
            raise self.fail(
                (*where, "targets"),
                f"`targets` must be an array of qualified names, got {targets!r}",
            )

    def check_code(self, where: tuple[str | int, ...], code: str) -> None:
        if len(code) > MAX_CODE:
            raise self.fail(
                where,
                f"`{where[-1]}` is longer than {MAX_CODE} characters; move the code into a module",
            )
        try:
            compile(code, f"<{where[-1]}>", "exec", dont_inherit=True)
        except (RecursionError, MemoryError):
            problem = f"the Python code in `{where[-1]}` nests too deeply to compile; split it up"
            raise self.fail(where, problem) from None
        except SyntaxError as error:
            line = self.line_of(where)
            if line is not None and error.lineno:
                line += error.lineno - 1 + self.value_starts_below(line)
            problem = f"Python syntax error in `{where[-1]}`: {error.msg}"
            raise ScenarioFileError(str(self.path), line, problem) from None

    def value_starts_below(self, line: int) -> int:
        """1 when the multi-line string on ``line`` opens with a newline (its text starts below)."""
        rest = self.text.splitlines()[line - 1].split("=", 1)[-1].strip()
        return int(rest in ('"""', "'''"))

    def read_scenario(
        self, where: tuple[str | int, ...], table: dict[str, Any], defaults: dict[str, Any]
    ) -> ScenarioSpec:
        self.check_keys(where, table, _SCENARIO_KEYS, "[[scenario]]")
        for required in ("name", "target", "call"):
            if required not in table:
                raise self.fail(where, f"[[scenario]] needs `{required}`")
        if not _NAME.match(table["name"]):
            raise self.fail(
                (*where, "name"),
                f"`name` may use letters, digits, '_', '.', '-' only, got {table['name']!r}",
            )
        self.check_sizes(where, table)
        merged = {**defaults, **table}
        if "sizes" in table and "size_axis" not in merged:
            raise self.fail(
                (*where, "sizes"), "`sizes` needs `size_axis` (the variable the sizes are bound to)"
            )
        enabled = table.get("enabled", True)
        if enabled:
            self.check_code((*where, "setup"), table.get("setup", ""))
            self.check_code((*where, "call"), table["call"])
        size_axis = merged.get("size_axis", "")
        inputs = "".join(
            f"{name} = {render_literal(value)}\n" for name, value in table.get("inputs", {}).items()
        )
        bad = [
            name
            for name in table.get("inputs", {})
            if not name.isidentifier() or keyword.iskeyword(name)
        ]
        if bad:
            raise self.fail(
                (*where, "inputs", bad[0]), f"input name {bad[0]!r} is not a Python variable name"
            )
        setup = "\n".join(
            part
            for part in (defaults.get("setup", ""), inputs, table.get("setup", ""))
            if part.strip()
        )
        return ScenarioSpec(
            id=f"file:{self.path.name}#{table['name']}",
            qualname=table["target"],
            source=ScenarioSource.FILE,
            description=table.get("description", ""),
            setup=setup,
            call=table["call"],
            size_axis=size_axis,
            sizes=tuple(merged.get("sizes", DEFAULT_SIZES)) if size_axis else (),
            targets=tuple(table.get("targets", ())),
            repeat=merged.get("repeat"),
        )


def render_literal(value: Any) -> str:
    """Python source for a TOML value (``inf``/``nan`` included), used to bind ``inputs``."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return f"float({str(value)!r})"
    if isinstance(value, list):
        return "[" + ", ".join(render_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{key!r}: {render_literal(item)}" for key, item in value.items()) + "}"
        )
    if isinstance(value, (str, int, float, bool)):
        return repr(value)
    return f"__import__('datetime').{type(value).__name__}.fromisoformat({value.isoformat()!r})"


def check_targets(specs: list[ScenarioSpec], known: list[str]) -> None:
    """Refuse scenarios whose ``target`` (or ``targets``) names nothing: a typo would otherwise
    measure nothing, silently. ``known`` are the discovered names (canonical and aliases);
    a name outside them must still resolve (a private helper a scenario measures on purpose)."""
    from apiprof.engine.discovery.discover import resolve_object

    names = set(known)
    for spec in specs:
        for target in dict.fromkeys((spec.qualname, *spec.targets)):
            if target in names:
                continue
            try:
                resolve_object(target)
                continue
            except Exception:
                pass
            close = difflib.get_close_matches(target, known, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            file_name, _, name = spec.id.removeprefix("file:").partition("#")
            raise UsageError(
                f"{file_name}: scenario {name!r} targets {target!r}, which does not exist{hint} "
                "(list the entry points with `apiprof-scan PACKAGE --list`)"
            )
