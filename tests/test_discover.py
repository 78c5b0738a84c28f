"""Discovery: public entry points under canonical names, __all__, private names, import failures."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from apiprof.engine.discovery.discover import Discovery, discover, is_private_module, resolve_object
from apiprof.engine.scenarios.factories import import_package
from apiprof.errors import PackageNotFound, UsageError
from apiprof.model.codec import from_data, to_data
from apiprof.model.records import EntryKind

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def found() -> Discovery:
    return discover("discover_pkg")


def by_name(discovery: Discovery) -> dict[str, object]:
    return {ep.qualname: ep for ep in discovery.entry_points}


def test_reexports_get_the_shortest_public_name_and_the_others_as_aliases(found):
    entries = by_name(found)
    assert entries["discover_pkg.area"].aliases == ("discover_pkg.core.area",)
    assert entries["discover_pkg.area"].module == "discover_pkg"
    assert entries["discover_pkg.sub.helper"].aliases == ("discover_pkg.sub.impl.helper",)
    assert entries["discover_pkg.Shape.perimeter"].aliases == ("discover_pkg.core.Shape.perimeter",)
    for alias in (
        "discover_pkg.core.area",
        "discover_pkg.sub.impl.helper",
        "discover_pkg.core.Shape",
    ):
        assert alias not in entries
        assert found.entry(alias) is not None  # still findable by alias


def test_all_is_respected_and_foreign_names_are_not_api(found):
    names = set(by_name(found))
    # imported into __init__ but not listed in its __all__
    assert not any(name.endswith("_hidden_helper") for name in names)
    # core has no usable __all__: its public names count, the foreign os.path.join does not
    assert "discover_pkg.core.clock_text" in names
    assert not any(name.endswith(".join") for name in names)
    assert "discover_pkg.core" not in names  # modules are not entry points


def test_private_names_modules_and_test_suites_are_skipped(found):
    names = set(by_name(found))
    assert "discover_pkg._private_function" not in names
    assert "discover_pkg.Shape._private_method" not in names
    assert not any("_private_mod" in name or ".tests" in name for name in names)
    assert is_private_module("discover_pkg._impl.x", "discover_pkg")
    assert is_private_module("discover_pkg.tests.test_core", "discover_pkg")
    assert not is_private_module("discover_pkg.sub.impl", "discover_pkg")


def test_classes_and_their_member_kinds(found):
    entries = by_name(found)
    kinds = {
        name: entries[f"discover_pkg.Shape{name}"].kind
        for name in ("", ".perimeter", ".square", ".unit", ".angle_sum")
    }
    assert kinds == {
        "": EntryKind.CLASS,
        ".perimeter": EntryKind.METHOD,
        ".square": EntryKind.CLASSMETHOD,
        ".unit": EntryKind.STATICMETHOD,
        ".angle_sum": EntryKind.PROPERTY,
    }
    # a public method inherited from a private base class is public on the subclass
    assert entries["discover_pkg.Counter.total"].kind is EntryKind.METHOD


def test_signatures_are_as_a_caller_writes_them(found):
    entries = by_name(found)
    assert entries["discover_pkg.Shape.perimeter"].signature == "(length: float) -> float"
    assert entries["discover_pkg.Shape.square"].signature == "() -> 'Shape'"
    assert entries["discover_pkg.Shape"].signature == "(sides: int = 3) -> None"
    assert entries["discover_pkg.area"].summary == "Area of a rectangle."
    area = entries["discover_pkg.area"]
    assert area.source_file.endswith("core.py") and area.source_line > 0


def test_a_module_that_fails_to_import_is_recorded_not_fatal(found):
    assert found.import_failures == {
        "discover_pkg.broken": "ImportError: optional dependency 'frobnicate' is missing"
    }
    assert "discover_pkg.sub.helper" in by_name(found)  # modules after it were still walked


def test_unknown_package_says_what_to_do():
    with pytest.raises(PackageNotFound, match="pip install no_such_pkg_xyz"):
        discover("no_such_pkg_xyz")


def test_discovery_round_trips_through_json(found):
    data = json.loads(json.dumps(to_data(found)))
    assert from_data(Discovery, data) == found


def test_stdlib_json_uses_package_level_names_and_counts_c_functions():
    entries = by_name(discover("json"))
    assert entries["json.JSONEncoder"].aliases == ("json.encoder.JSONEncoder",)
    assert entries["json.dumps"].kind is EntryKind.FUNCTION
    assert "json.encoder.JSONEncoder.encode" not in entries and "json.JSONEncoder.encode" in entries
    builtin = entries["json.encoder.encode_basestring"]
    assert (
        builtin.kind is EntryKind.BUILTIN and "json.encoder.c_encode_basestring" in builtin.aliases
    )


def test_resolve_object_imports_modules_and_walks_attributes():
    assert resolve_object("textwrap.TextWrapper.wrap") is textwrap.TextWrapper.wrap
    assert resolve_object("json.decoder") is json.decoder
    with pytest.raises(UsageError, match=r"no attribute path 'TextWrapper\.nope'"):
        resolve_object("textwrap.TextWrapper.nope")
    with pytest.raises(UsageError, match="no importable module"):
        resolve_object("no_such_pkg_xyz.f")


def test_an_all_that_lists_only_submodules_leaves_the_functions_beside_it_public(
    tmp_path, monkeypatch
):
    # sqlparse's __init__ lists only its submodules in __all__; parse/format/split are its API
    package = tmp_path / "submodule_list_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from submodule_list_pkg import grammar\n"
        "__all__ = ['grammar']\n"
        "def parse(text):\n    return grammar.rule(text)\n"
        "def _internal(text):\n    return text\n"
    )
    (package / "grammar.py").write_text("def rule(text):\n    return text.split()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = set(by_name(discover("submodule_list_pkg")))
    assert {"submodule_list_pkg.parse", "submodule_list_pkg.grammar.rule"} <= names
    assert "submodule_list_pkg._internal" not in names
    for module in ("submodule_list_pkg", "submodule_list_pkg.grammar"):
        monkeypatch.delitem(sys.modules, module, raising=False)


def test_a_submodule_raising_a_base_exception_on_import_is_an_import_failure(tmp_path, monkeypatch):
    # a testing helper module that reads ./setup.cfg on import and raises its own ConfigError,
    # derived from BaseException, when it is absent: the rest of the package is still its API
    package = tmp_path / "base_error_pkg"
    (package / "testing").mkdir(parents=True)
    (package / "__init__.py").write_text("def render(text):\n    return text.upper()\n")
    (package / "testing" / "__init__.py").write_text("")
    (package / "testing" / "config.py").write_text(
        "class ConfigError(BaseException):\n    pass\n"
        "raise ConfigError('No config file found at ./setup.cfg')\n"
    )
    (package / "zzz.py").write_text("def last(text):\n    return text\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = discover("base_error_pkg")
    assert found.import_failures == {
        "base_error_pkg.testing.config": "ConfigError: No config file found at ./setup.cfg"
    }
    assert {"base_error_pkg.render", "base_error_pkg.zzz.last"} <= set(by_name(found))
    # the scenarios' own walk over the package's modules skips it alike
    assert import_package("base_error_pkg") == (
        "base_error_pkg",
        "base_error_pkg.testing",
        "base_error_pkg.zzz",
    )
    for module in [name for name in sys.modules if name.startswith("base_error_pkg")]:
        monkeypatch.delitem(sys.modules, module, raising=False)


def test_a_package_that_copies_a_submodules_globals_keeps_its_own_module_names(
    tmp_path, monkeypatch
):
    # a package whose __init__ copies its version module's globals into its own takes that
    # module's __name__ and __spec__ too: its modules are still named as they were imported
    package = tmp_path / "copied_globals_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from .urls import *\nfrom . import meta\nglobals().update(dict(vars(meta).items()))\n"
    )
    (package / "meta.py").write_text("version = '1.0'\n")
    (package / "urls.py").write_text(
        "__all__ = ['Url']\n"
        "class Url:\n    def add(self, part):\n        return part\n"
        "def helper(text):\n    return text\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    entries = by_name(discover("copied_globals_pkg"))
    assert entries["copied_globals_pkg.Url.add"].aliases == ("copied_globals_pkg.urls.Url.add",)
    assert not any(".meta." in name for name in entries)
    assert resolve_object("copied_globals_pkg.Url.add")(None, "x") == "x"
    for module in [name for name in sys.modules if name.startswith("copied_globals_pkg")]:
        monkeypatch.delitem(sys.modules, module, raising=False)
