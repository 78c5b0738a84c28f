"""``apiprof scenarios init``: a scenario file to fill in, one disabled entry per uncovered API.

Works from plain ``Discovery`` data (no import of the package), so the CLI can write it in the
parent process. Every generated entry is valid TOML *and* valid Python with ``...`` placeholders,
carrying ``enabled = false`` so the file loads cleanly until the user fills an entry in and deletes
that line.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from apiprof.engine.discovery.discover import Discovery
from apiprof.engine.scenarios.partial import PartialArgument
from apiprof.engine.scenarios.spec import DEFAULT_SIZES, FORMAT_VERSION
from apiprof.errors import UsageError
from apiprof.model.records import EntryKind, EntryPoint

_HEADER = """\
# apiprof scenario file (format {format}) for {package}{version}
# Written by `apiprof scenarios init`. Format reference: docs/scenario-format.md.
#
# Each [[scenario]] below is a template for an entry point no scenario covers yet. To use one:
#   1. in `setup`, replace every `...` with a real value (`n` is the size, if you keep a size axis);
#   2. check `call`: one execution of it is what gets measured;
#   3. delete the `enabled = false` line.
# Then: apiprof-scan {package} --scenarios THIS_FILE
format = {format}
package = "{package}"
"""


@dataclass(frozen=True)
class Missing:
    """Why an entry point still needs a hand-written scenario, and what was found for it."""

    reason: str = ""  # the coverage status and reason ("no_arguments: parameter 'x' ...")
    location: str = ""  # where its scenario raised, when one did
    partial: tuple[PartialArgument, ...] = ()  # the best values found per parameter


def write_scaffold(
    discovery: Discovery,
    covered: set[str],
    path: str | Path,
    *,
    overwrite: bool = False,
    missing: Mapping[str, Missing] | None = None,
) -> int:
    """Write the template file for the entry points not ``covered``; returns how many entries
    it holds. ``missing`` adds each one's reason and best partial arguments."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise UsageError(
            f"{path} already exists; choose another path or pass --force to replace it"
        )
    todo = [ep for ep in discovery.entry_points if ep.qualname not in covered]
    version = f" {discovery.version}" if discovery.version else ""
    parts = [_HEADER.format(format=FORMAT_VERSION, package=discovery.package, version=version)]
    parts.extend(render_template(ep, (missing or {}).get(ep.qualname)) for ep in todo)
    path.write_text("\n".join(parts), encoding="utf-8")
    return len(todo)


def render_template(entry: EntryPoint, missing: Missing | None = None) -> str:
    """One disabled ``[[scenario]]`` table: the signature and why it is missing in comments,
    the best values found already filled in, ``...`` where a person must decide."""
    parameters = _required_parameters(entry)
    found = {p.name: p for p in missing.partial} if missing else {}
    owner, _, member = entry.qualname.rpartition(".")
    setup = [f"import {entry.module}"]
    if entry.kind in (EntryKind.METHOD, EntryKind.PROPERTY):
        receiver = found.get("obj")
        note = receiver.note if receiver else "an instance to call the method on"
        setup.append(f"obj = {owner}(...)  # {_one_line(note)}")
        callee = f"obj.{member}"
    else:
        callee = entry.qualname
    if found and not parameters:  # no signature text, but synthesis found parameters
        parameters = [(p.name, "", p.keyword) for p in missing.partial if p.name != "obj"]  # type: ignore[union-attr]
    for name, annotation, _ in parameters:
        known = found.get(name)
        code = known.code if known else "..."
        note = known.note if known else (annotation or "a value")
        setup.append(f"{name} = {code}  # {_one_line(note)}")
    arguments = ", ".join(f"{name}={name}" if keyword else name for name, _, keyword in parameters)
    call = callee if entry.kind is EntryKind.PROPERTY else f"{callee}({arguments})"
    comment = f"# {entry.qualname}{entry.signature}" + (
        f"\n#   {entry.summary}" if entry.summary else ""
    )
    if missing and missing.reason:
        comment += f"\n# not profiled: {_one_line(missing.reason, 300)}"
    if missing and missing.location:
        comment += f"\n#   raised at {missing.location}"
    return (
        f"{comment}\n"
        "[[scenario]]\n"
        f"name = {_toml_string(entry.qualname.removeprefix(entry.package + '.') or entry.qualname)}\n"
        f"target = {_toml_string(entry.qualname)}\n"
        "enabled = false\n"
        f'# size_axis = "n"\n'
        f"# sizes = {list(DEFAULT_SIZES)}\n"
        "setup = '''\n" + "\n".join(setup).replace("'''", '"""') + "\n'''\n"
        f"call = {_toml_string(call)}\n"
    )


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _required_parameters(entry: EntryPoint) -> list[tuple[str, str, bool]]:
    """(name, annotation text, keyword-only) of each parameter without a default."""
    if not entry.signature or entry.kind is EntryKind.PROPERTY:
        return []
    signature = entry.signature
    try:
        function = ast.parse(f"def f{signature}: pass").body[0]
    except SyntaxError:  # defaults shown as <object ...> reprs
        try:
            function = ast.parse(f"def f{_strip_defaults(signature)}: pass").body[0]
        except SyntaxError:
            return []
    assert isinstance(function, ast.FunctionDef)
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    required = positional[: len(positional) - len(arguments.defaults)]
    result = [
        (arg.arg, ast.unparse(arg.annotation) if arg.annotation else "", False) for arg in required
    ]
    for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if default is None:
            result.append((arg.arg, ast.unparse(arg.annotation) if arg.annotation else "", True))
    return result


def _strip_defaults(signature: str) -> str:
    """Replace unparsable ``<...>`` default reprs so the signature parses."""
    out, depth = [], 0
    for char in signature:
        if char == "<":
            depth += 1
            if depth == 1:
                out.append("None")
        elif char == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(char)
    return "".join(out)


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON string escaping is valid TOML)."""
    return json.dumps(text, ensure_ascii=False)
