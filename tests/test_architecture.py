"""The import rules of docs/architecture.rst, checked on every module of the package.

Each part of apiprof may import only the parts listed for it below (and itself). A new
sub-package fails this test until it is given a place in the layering here and in the docs.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_PACKAGE = {"tests", "bench", "docs", "build", "dist"}

MODEL = {"apiprof.model", "apiprof.errors"}
STORE = {*MODEL, "apiprof.db"}
FINDING = {*MODEL, "apiprof.engine.timeouts", "apiprof.engine.discovery"}
ENGINE = {
    *STORE,
    *FINDING,
    "apiprof.engine.measure",
    "apiprof.engine.scenarios",
    "apiprof.engine.isolation",
    "apiprof.engine.testsuite",
}
READERS = {*STORE, "apiprof.format", "apiprof.svg", "apiprof.growth_plot"}

ALLOWED: dict[str, set[str]] = {
    "apiprof": MODEL,  # the package's __init__: its version and error base only
    "apiprof.model": set(),
    "apiprof.errors": set(),
    "apiprof.format": MODEL,
    "apiprof.svg": {*MODEL, "apiprof.format"},  # the graphics every reader draws with
    # a growth fit drawn without words: readers draw it, writers store it (db/charts.py)
    "apiprof.growth_plot": {*MODEL, "apiprof.format", "apiprof.svg"},
    "apiprof.db": {*MODEL, "apiprof.growth_plot"},
    "apiprof.engine.timeouts": set(),
    "apiprof.engine.discovery": MODEL,
    "apiprof.engine.measure": MODEL,
    "apiprof.engine.scenarios": FINDING,
    "apiprof.engine.isolation": {
        *FINDING,
        "apiprof.engine.measure",
        "apiprof.engine.scenarios",
    },
    "apiprof.engine.testsuite": ENGINE - {"apiprof.db", "apiprof.engine.testsuite"},
    "apiprof.engine.scan": ENGINE,
    "apiprof.engine.cluster": {*ENGINE, "apiprof.engine.scan", "apiprof.engine.collect"},
    # in-the-wild collection: live probes from measure, the local spool and synced mirror in db
    "apiprof.engine.collect": {*STORE, "apiprof.engine.measure"},
    "apiprof.engine": set(),  # the engine package's __init__
    "apiprof.sphinx_ext": READERS,
    # sampled traces and the delay tracker: a product of its own, beside the engine
    "apiprof.tracing": {*MODEL, "apiprof.format"},
    "apiprof.lsp_server": {*READERS, "apiprof.tracing"},
    "apiprof.analysis": READERS,
    # the aggregation service: the store and the collection wire format it accepts
    "apiprof.service": {*STORE, "apiprof.engine.collect"},
    "apiprof.cli": {
        *ENGINE,
        *READERS,
        "apiprof.engine.scan",
        "apiprof.engine.cluster",
        "apiprof.analysis",
        "apiprof.tracing",
        "apiprof.engine.collect",
        "apiprof.service",
    },
}


def part_of(module: str) -> str:
    """The most specific entry of ALLOWED that ``module`` belongs to."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in ALLOWED:
            return candidate
    raise AssertionError(
        f"{module} belongs to no part of the layering: add it to ALLOWED in "
        "tests/test_architecture.py and to docs/architecture.rst"
    )


def package_modules() -> dict[str, Path]:
    modules = {}
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in NOT_PACKAGE or relative.parts[0].startswith("."):
            continue
        dotted = ".".join(("apiprof", *relative.with_suffix("").parts))
        modules[dotted.removesuffix(".__init__")] = path
    return modules


def imported(path: Path) -> set[str]:
    """Every apiprof module ``path`` imports, at any depth of the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("apiprof")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            module = node.module or ""
            found |= {
                f"{module}.{alias.name}" for alias in node.names if module.startswith("apiprof")
            }
    return found


def violations(modules: dict[str, Path]) -> list[str]:
    """Each import in ``modules`` that its part of the layering may not make."""
    broken = []
    for module, path in sorted(modules.items()):
        own = part_of(module)
        for target in sorted(imported(path)):
            # `from apiprof.x import name` names a module or an attribute: use the module
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            other = part_of(target)
            if other == "apiprof" and own not in ("apiprof.model", "apiprof.errors"):
                continue  # the package root: its __version__
            if other != own and other not in ALLOWED[own]:
                broken.append(f"{module} imports {target} ({own} may not depend on {other})")
    return broken


def test_every_module_imports_only_what_its_layer_allows():
    modules = package_modules()
    assert "apiprof.engine.scan" in modules and "apiprof.model.histogram" in modules
    broken = violations(modules)
    assert not broken, "\n".join(broken)


def test_a_forbidden_import_is_reported(tmp_path):
    store = tmp_path / "store.py"
    store.write_text("from apiprof.engine.scan import scan\n")
    modules = {**package_modules(), "apiprof.db.store": store}
    assert violations(modules) == [
        "apiprof.db.store imports apiprof.engine.scan (apiprof.db may not depend on apiprof.engine.scan)"
    ]


def test_nothing_below_the_scan_imports_the_scan():
    modules = package_modules()
    for module, path in modules.items():
        if part_of(module) in ("apiprof.engine.scan", "apiprof.engine.cluster", "apiprof.cli"):
            continue
        assert not any(t.startswith("apiprof.engine.scan") for t in imported(path)), module
