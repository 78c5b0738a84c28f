"""Scenarios: repeatable code that exercises an entry point, from files, docstrings or synthesis.

A scenario is plain data (``ScenarioSpec``) so it can cross into a sandboxed worker; there
``compile_scenario`` turns it into a zero-argument callable whose one execution is what gets
measured. The TOML scenario-file format is documented in ``docs/scenario-format.md``.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import difflib
import io
import keyword
import re
import signal
import symtable
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apiprof.engine import deadline
from apiprof.engine.discover import Discovery, describe_exception, resolve_object
from apiprof.model.records import Scenario, ScenarioSource
from apiprof.errors import ScenarioFileError

FORMAT_VERSION = 1
"""The scenario-file ``format`` this module reads."""

DEFAULT_SIZES = (10, 30, 100, 300, 1000)


@dataclass(frozen=True)
class ScenarioSpec:
    """Everything needed to run one scenario, as plain data."""

    id: str  # stable: "file:<file name>#<name>", "doc:<qualname>#<k>", "synth:<qualname>"
    qualname: str  # the entry point it is for
    source: ScenarioSource
    description: str
    setup: str  # run once per size before measuring; may use the size variable
    call: str  # statements; one execution is what gets measured; may use the size variable
    size_axis: str = ""  # variable name, e.g. "n"; "" = no size axis
    sizes: tuple[int, ...] = ()
    targets: tuple[str, ...] = ()  # qualnames measured inside `call`; empty means (qualname,)
    repeat: int | None = None

    @property
    def measured(self) -> tuple[str, ...]:
        """The qualnames to measure: ``targets`` or, by default, the entry point itself."""
        return self.targets or (self.qualname,)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "qualname": self.qualname,
            "source": self.source.value,
            "description": self.description,
            "setup": self.setup,
            "call": self.call,
            "size_axis": self.size_axis,
            "sizes": list(self.sizes),
            "targets": list(self.targets),
            "repeat": self.repeat,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScenarioSpec:
        return cls(
            **{
                **data,
                "source": ScenarioSource(data["source"]),
                "sizes": tuple(data["sizes"]),
                "targets": tuple(data["targets"]),
            }
        )

    def to_scenario(self) -> Scenario:
        return Scenario(self.id, self.qualname, self.source, self.description, self.size_axis)


# -- running ---------------------------------------------------------------------------------


def compile_scenario(spec: ScenarioSpec, size: int | None) -> Callable[[], object]:
    """Run ``spec.setup`` in a fresh namespace and return a callable doing one ``spec.call``.

    The call statements become the body of a function whose every bound name is declared
    ``global``: the same meaning as executing them at module level in the setup namespace, at
    the cost of one Python call per run. The callable returns the value of the last statement
    when that is an expression.
    """
    namespace: dict[str, Any] = {"__name__": "__apiprof_scenario__", "__builtins__": builtins}
    if spec.size_axis:
        if size is None:
            raise ValueError(
                f"scenario {spec.id} has size axis {spec.size_axis!r}: pass one of {spec.sizes}"
            )
        namespace[spec.size_axis] = size
    if spec.setup.strip():
        exec(compile(spec.setup, f"<setup of {spec.id}>", "exec"), namespace)
    return _compile_call(spec.call, f"<call of {spec.id}>", namespace)


_CALL_NAME = "__apiprof_call__"
_NO_TYPE_PARAMS = {"type_params": []} if sys.version_info >= (3, 12) else {}


def _compile_call(call: str, filename: str, namespace: dict[str, Any]) -> Callable[[], object]:
    module = ast.parse(call, filename, "exec")
    code = compile(module, filename, "exec")  # module-level rules: rejects return/yield
    if not module.body:
        return lambda: None
    try:
        bound = _names_bound_by(call)
    except SyntaxError:  # e.g. a star import, legal only at module level
        return lambda: exec(code, namespace)
    body: list[ast.stmt] = [ast.Global(names=sorted(bound))] if bound else []
    body.extend(module.body)
    if isinstance(body[-1], ast.Expr):  # hand back the last expression's value, as a REPL shows it
        body[-1] = ast.copy_location(ast.Return(value=body[-1].value), body[-1])
    function = ast.FunctionDef(
        name=_CALL_NAME,
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body,
        decorator_list=[],
        **_NO_TYPE_PARAMS,
    )
    wrapper = ast.Module(body=[function], type_ignores=[])
    ast.fix_missing_locations(wrapper)
    scope: dict[str, Any] = {}
    exec(compile(wrapper, filename, "exec"), namespace, scope)
    return scope[_CALL_NAME]


def _names_bound_by(call: str) -> set[str]:
    """Names the call statements bind at their top level (what exec would store globally)."""
    source = f"def {_CALL_NAME}():\n" + "".join(f"    {line}\n" for line in call.splitlines())
    table = symtable.symtable(source, "<call>", "exec")
    function = next(child for child in table.get_children() if child.get_name() == _CALL_NAME)
    return {symbol.get_name() for symbol in function.get_symbols() if symbol.is_local()}


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
        specs, names = [], {}
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
        if axis and not axis.isidentifier() or keyword.iskeyword(axis):
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
        try:
            compile(code, f"<{where[-1]}>", "exec", dont_inherit=True)
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


# -- combining sources -----------------------------------------------------------------------


def collect_scenarios(
    discovery: Discovery,
    scenario_files: Sequence[Path] = (),
    *,
    docstrings: bool = True,
    synthesize: bool = True,
    sizes: Sequence[int] = DEFAULT_SIZES,
    check: bool = True,
) -> tuple[list[ScenarioSpec], dict[str, str]]:
    """All scenarios for a discovered package, and why each uncovered entry point has none.

    File scenarios are taken as written. Docstring and synthesised scenarios are tried once at
    the smallest size (``check``; this runs the package's code, so only inside the sandboxed
    worker) and kept only if they run twice without raising.
    """
    from apiprof.engine.doctests import docstring_scenarios, identity_of
    from apiprof.engine.synthesized import find_synthesized_scenario

    specs = [spec for path in scenario_files for spec in load_scenario_file(path)]
    reasons: dict[str, list[str]] = {ep.qualname: [] for ep in discovery.entry_points}
    objects: dict[str, object] = {}
    for entry in discovery.entry_points:
        try:
            objects[entry.qualname] = resolve_object(entry.qualname)
        except Exception as error:
            reasons[entry.qualname].append(f"import failed: {describe_exception(error)}")
    public = {id(identity_of(obj)): qualname for qualname, obj in objects.items()}
    for entry in discovery.entry_points:
        if entry.qualname not in objects:
            continue
        if synthesize:
            spec, reason = find_synthesized_scenario(entry.qualname, tuple(sizes), check=check)
            if spec is None:
                reasons[entry.qualname].append(reason)
            else:
                specs.append(spec)
        if docstrings:
            found, reason = docstring_scenarios(entry, objects[entry.qualname], public)
            failures: list[str] = []
            kept = [spec for spec in found if not check or _keep(spec, failures)]
            if not kept and (reason or failures):
                reasons[entry.qualname].append(
                    "docstring examples: " + "; ".join(filter(None, [reason, *failures]))
                )
            specs.extend(kept)
    covered = {qualname for spec in specs for qualname in (spec.qualname, *spec.targets)}
    unscenarioed = {
        qualname: "; ".join(why) or "no scenario source was enabled"
        for qualname, why in reasons.items()
        if qualname not in covered
    }
    return specs, unscenarioed


def _keep(spec: ScenarioSpec, reasons: list[str]) -> bool:
    failure, _ = try_scenario(spec)
    if failure:
        reasons.append(f"{spec.id} {failure}")
    return not failure


TRIAL_SECONDS = 5.0
"""A trial call that takes longer than this is abandoned (its scenario is dropped)."""


class _TrialTimeout(BaseException):
    """Raised by the alarm inside a trial; a BaseException so ``except Exception`` can't eat it."""


def try_scenario(
    spec: ScenarioSpec, size: int | None = None, *, calls: int = 2
) -> tuple[str, object]:
    """Run the scenario's setup and ``calls`` calls: ("", last result) or (reason, None).

    Calls twice by default: an argument that the first call uses up (an iterator, a file read
    to its end) makes repeated measurement meaningless, and this catches it.
    """
    if size is None and spec.size_axis:
        size = spec.sizes[0]
    result: object = None
    stage = "setup"
    try:
        with _alarm(TRIAL_SECONDS), _quiet_stdio():
            run = compile_scenario(spec, size)
            for attempt in range(calls):
                stage = "call" if attempt == 0 else "repeated call"
                result = run()
    except _TrialTimeout:
        return f"took longer than {TRIAL_SECONDS:g} s on a trial call", None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit from argparse-style mains, too
        return f"raised {describe_exception(error)} in {stage}", None
    return "", result


@contextlib.contextmanager
def _quiet_stdio() -> Iterator[None]:
    """Trials print nowhere and read an empty stdin (never the worker's own pipes)."""
    stdin = sys.stdin
    sys.stdin = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        sys.stdin = stdin


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (main thread on POSIX only; elsewhere no limit).
    Nests: an enclosing ITIMER_REAL timeout is re-armed with what is left of it."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise _TrialTimeout()

    previous = signal.signal(signal.SIGALRM, interrupt)
    outer_remaining, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    outer_budget = deadline.arm(seconds)  # in workers: a trial stuck in C code ends the process
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        deadline.disarm(outer_budget)
        signal.signal(signal.SIGALRM, previous)
        if outer_remaining:  # an enclosing timeout keeps running (and fires at once if it is due)
            signal.setitimer(
                signal.ITIMER_REAL, max(outer_remaining - (time.monotonic() - started), 1e-4)
            )
