"""Every command, option and configuration value a user can set is documented in docs/."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from apiprof.cli import build_parser, build_scan_parser
from apiprof.lsp_server.config import ServerConfig, camel_case

DOCS = Path(__file__).resolve().parent.parent / "docs"
README = DOCS.parent / "README.md"


@pytest.fixture(scope="module")
def docs_text() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8")
        for p in sorted(DOCS.rglob("*"))
        if p.suffix in (".rst", ".md")
    )


def _subcommands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> dict[str, argparse.ArgumentParser]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[f"{prefix}{name}"] = sub
                found.update(_subcommands(sub, f"{prefix}{name} "))
    return found


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }


def test_every_command_is_documented(docs_text):
    commands = _subcommands(build_parser())
    assert {"scan", "show", "merge", "scenarios init"} <= set(commands)
    for name in commands:
        assert f"apiprof {name}" in docs_text, f"`apiprof {name}` is not documented in docs/"
    assert "apiprof-scan" in docs_text and "apiprof-lsp" in docs_text


def test_every_option_is_documented(docs_text):
    parsers = [build_scan_parser(), *_subcommands(build_parser()).values()]
    missing = sorted(
        {opt for parser in parsers for opt in _options(parser) if opt not in docs_text}
    )
    assert not missing, f"options missing from docs/: {missing}"


def test_every_sphinx_config_value_is_documented(docs_text):
    from sphinx.application import Sphinx  # noqa: F401  (the extension's setup needs Sphinx importable)

    registered = []

    class Recorder:
        def __getattr__(self, name):
            return lambda *args, **kwargs: (
                registered.append((name, args)) if name == "add_config_value" else None
            )

    from apiprof import sphinx_ext

    sphinx_ext.setup(Recorder())
    names = [args[0] for _, args in registered]
    assert "apiprof_db" in names and "apiprof_auto" in names
    missing = [name for name in names if name not in docs_text]
    assert not missing, f"Sphinx config values missing from docs/: {missing}"


def _lsp_option_paths(cls: type, prefix: str = "") -> list[str]:
    paths = []
    for f in dataclasses.fields(cls):
        key = camel_case(f.name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default):
            paths += _lsp_option_paths(type(default), f"{prefix}{key}.")
        else:
            paths.append(f"{prefix}{key}")
    return paths


def test_every_language_server_option_is_documented(docs_text):
    paths = _lsp_option_paths(ServerConfig)
    assert "databases" in paths and "hover.histogram" in paths
    missing = [p for p in paths if p.rsplit(".", 1)[-1] not in docs_text]
    assert not missing, f"language server options missing from docs/: {missing}"


def test_readme_keeps_both_setup_commands():
    text = README.read_text(encoding="utf-8")
    assert "<!-- scan-command -->" in text and "apiprof-scan" in text
    assert "<!-- test-command -->" in text and "pytest" in text
