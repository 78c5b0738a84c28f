"""Texts a package's docstrings show as literal blocks (``.. sourcecode:: jinja``, ``::``): the
inputs of its own grammar its authors wrote down — a template with ``{% for %}``, a query,
a configuration — offered by the self-driven capture (:mod:`.drive`) to drivers that take a
text, as the package's own outputs are. Not ``>>>`` examples: those run as docstring scenarios.

A text is named by where it is, ``doctext:QUALNAME#K`` (the K-th literal block of that
docstring), so a worker that replays a driver reads it again from the package rather than
receiving it from another worker.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from collections.abc import Iterator

from apiprof.engine.discovery.discover import resolve_object
from apiprof.engine.scenarios.doctests import docstring_of

MAX_TEXT = 2000
"""Longer blocks are listings, not inputs a driver should run."""

_DIRECTIVE = re.compile(r"^\s*\.\. (?:sourcecode|code-block|code)::")


def literal_blocks(docstring: str) -> list[str]:
    """The literal blocks of a reST docstring, dedented: what follows a line ending in ``::``
    or a ``sourcecode``/``code-block`` directive, indented deeper than that line. After a
    first line (whose indentation the docstring does not show; Python 3.13 also strips the
    block's), the block is one paragraph."""
    lines = docstring.expandtabs().splitlines()
    blocks: list[str] = []
    for index, line in enumerate(lines):
        if not (line.rstrip().endswith("::") or _DIRECTIVE.match(line)):
            continue
        indent = len(line) - len(line.lstrip()) if index else -1
        body: list[str] = []
        for following in lines[index + 1 :]:
            deeper = len(following) - len(following.lstrip()) > indent
            if following.strip() and not deeper:
                break
            if not following.strip() and index == 0 and any(b.strip() for b in body):
                break
            if not body and following.strip().startswith(":"):  # a directive's option
                continue
            body.append(following)
        text = textwrap.dedent("\n".join(body)).strip("\n")
        if text.strip() and ">>>" not in text and len(text) <= MAX_TEXT:
            blocks.append(text + "\n")
    return blocks


def docstring_text(qualname: str, index: int) -> str:
    """The ``index``-th (from 1) literal block of ``qualname``'s docstring."""
    return literal_blocks(docstring_of(resolve_object(qualname)))[index - 1]


def package_texts(top: str) -> Iterator[tuple[str, str]]:
    """``(name, text)`` of every literal block in the docstrings of the package's imported
    modules, their functions and classes, and the classes' methods; ``name`` is
    ``doctext:QUALNAME#K``."""
    for module_name, module in sorted(sys.modules.items()):
        if module is None or not (module_name == top or module_name.startswith(top + ".")):
            continue
        for qualname, obj in _documented(module_name, module):
            try:
                blocks = literal_blocks(docstring_of(obj))
            except Exception:  # a docstring property that raises
                continue
            for index, text in enumerate(blocks, start=1):
                yield f"doctext:{qualname}#{index}", text


def _documented(module_name: str, module: object) -> Iterator[tuple[str, object]]:
    yield module_name, module
    for name, obj in list(vars(module).items()):
        if getattr(obj, "__module__", None) != module_name or name.startswith("_"):
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield f"{module_name}.{name}", obj
        if inspect.isclass(obj):
            for member, value in list(vars(obj).items()):
                if inspect.isfunction(value) and not member.startswith("_"):
                    yield f"{module_name}.{name}.{member}", value
