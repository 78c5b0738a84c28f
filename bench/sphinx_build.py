"""What the Sphinx extension adds to a docs build: the same ≥300-API doc set built with and
without ``apiprof.sphinx_ext`` in one run, alternating, best of N each.

    python bench/sphinx_build.py [--apis 320] [--repeat 3] [--pages referenced|none]
                                 [--docstrings full|short] [--keep DIR]

The generated package has modules of functions and classes with methods; autodoc documents all
of them and ``apiprof_auto = True`` gives each a summary (plus a drill-down page unless
``--pages none``). Docstrings are library-like by default (a paragraph, a parameter list, a note,
an example); ``--docstrings short`` gives one-liners, the worst case for the ratio because the
extension's cost per API is fixed. Target: the extension adds at most 15 %.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from apiprof.db.schema import open_db
from apiprof.db.store import store_batch, store_entry_points
from apiprof.model.histogram import from_counts
from apiprof.model.records import (
    EntryKind,
    EntryPoint,
    Environment,
    Measurement,
    Metric,
    ScanBatch,
)

PER_MODULE = 20  # 10 functions + 2 classes with 4 methods each → 20 documented APIs


FULL_DOC = """{summary}

    The input is processed chunk by chunk; each chunk is copied once, so the cost grows with
    the length of ``data`` and the allocation with ``size``. See :func:`func_0` for the
    streaming variant and :class:`Thing0` for a stateful one.

    :param data: the sequence to process; any object with ``len()`` and slicing.
    :param size: how many items one chunk holds; must be positive.
    :returns: the first chunk of ``data``.
    :raises ValueError: if ``size`` is not positive.

    .. note:: Chunks share no memory with ``data``.

    Example::

        >>> func_{i}([1, 2, 3], size=2)
        [1, 2]
    """


def docstring(summary: str, i: int, full: bool) -> str:
    return FULL_DOC.format(summary=summary, i=i) if full else summary


def module_source(index: int, full: bool) -> str:
    functions = "\n\n".join(
        f'def func_{i}(data, size={i + 1}):\n    """{docstring(f"Process ``data`` in chunks (number {i}).", i, full)}"""\n'
        f"    return data[:size]\n"
        for i in range(10)
    )
    classes = "\n\n".join(
        f'class Thing{c}:\n    """{docstring(f"A thing number {c} of module {index}.", c, full)}"""\n\n'
        + "\n".join(
            f'    def method_{m}(self, x):\n        """{docstring(f"Method {m}: returns ``x``.", m, full)}"""\n'
            f"        return x\n"
            for m in range(4)
        )
        for c in range(2)
    )
    return f'"""Benchmark module {index}."""\n\n{functions}\n\n{classes}'


def api_names(index: int) -> list[tuple[str, EntryKind]]:
    module = f"benchpkg.mod{index}"
    names = [(f"{module}.func_{i}", EntryKind.FUNCTION) for i in range(10)]
    for c in range(2):
        names.append((f"{module}.Thing{c}", EntryKind.CLASS))
        names += [(f"{module}.Thing{c}.method_{m}", EntryKind.METHOD) for m in range(4)]
    return names


def write_project(
    root: Path, modules: int, with_extension: bool, pages: str, full_docs: bool
) -> Path:
    src = root / ("with" if with_extension else "without")
    (src / "benchpkg").mkdir(parents=True)
    (src / "benchpkg" / "__init__.py").write_text('"""Benchmark package."""\n')
    for index in range(modules):
        (src / "benchpkg" / f"mod{index}.py").write_text(module_source(index, full_docs))
        (src / f"mod{index}.rst").write_text(
            f"Module {index}\n{'=' * (7 + len(str(index)))}\n\n.. automodule:: benchpkg.mod{index}\n   :members:\n"
        )
    toc = "\n".join(f"   mod{i}" for i in range(modules))
    (src / "index.rst").write_text(f"Benchmark\n=========\n\n.. toctree::\n\n{toc}\n")
    extensions = ["sphinx.ext.autodoc"] + (["apiprof.sphinx_ext"] if with_extension else [])
    (src / "conf.py").write_text(
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n"
        f"project = 'bench'\nextensions = {extensions!r}\nhtml_theme = 'alabaster'\n"
        f"apiprof_db = {str(root / 'apiprof.db')!r}\napiprof_auto = True\napiprof_pages = {pages!r}\n"
    )
    return src


def write_database(path: Path, modules: int) -> int:
    db = open_db(path)
    env = Environment.current()
    entries, measurements = [], []
    for index in range(modules):
        for n, (qualname, kind) in enumerate(api_names(index)):
            entries.append(EntryPoint(qualname, "benchpkg", qualname.rsplit(".", 1)[0], kind))
            base = 6 + (n + index) % 12
            measurements.append(
                Measurement(
                    qualname,
                    "synth",
                    Metric.CPU,
                    from_counts({base: 150, base + 1: 90, base + 3: 10}),
                )
            )
            measurements.append(
                Measurement(
                    qualname, "synth", Metric.ALLOC_INCL, from_counts({base - 2: 200, base: 50})
                )
            )
    store_entry_points(db, entries)
    with db.conn:
        db["environments"].insert({"id": env.id, **env.__dict__}, pk="id", ignore=True)
    store_batch(db, ScanBatch(measurements=measurements), environment_id=env.id, package="benchpkg")
    db.close()
    return len(entries)


def time_build(src: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one fresh build in a child process.

    CPU time (user + system of the child) is the figure compared: on a shared machine wall time
    mostly measures the neighbours. Bytecode caching is on, as in any installed environment: with
    PYTHONDONTWRITEBYTECODE set (some CI images set it) every build would recompile the modules
    it imports, which is not what building docs costs.
    """
    out = src.parent / f"_build-{src.name}"
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-E", "-b", "html", str(src), str(out)],
        check=True,
        env=env,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--apis", type=int, default=320, help="documented APIs (rounded up to modules of 20)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pages", choices=["referenced", "none"], default="referenced")
    parser.add_argument(
        "--docstrings",
        choices=["full", "short"],
        default="full",
        help="full: a paragraph, parameter list, note and example per API (typical of a library); short: one line",
    )
    parser.add_argument("--keep", type=Path, help="build here and keep the output")
    args = parser.parse_args(argv)
    modules = -(-args.apis // PER_MODULE)
    root = args.keep or Path(tempfile.mkdtemp(prefix="apiprof-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        apis = write_database(root / "apiprof.db", modules)
        full = args.docstrings == "full"
        plain = write_project(root, modules, False, args.pages, full)
        extended = write_project(root, modules, True, args.pages, full)
        runs: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
        for _ in range(args.repeat):  # alternate so machine noise hits both sides alike
            runs["without"].append(time_build(plain))
            runs["with"].append(time_build(extended))
        pages = len(list((root / "_build-with" / "apiprof").glob("*.html")))
        print(
            f"documented APIs: {apis} in {modules} modules ({args.docstrings} docstrings); drill-down pages: {pages}"
        )
        best = {}
        for side, label in (("without", "without"), ("with", "with   ")):
            wall, cpu = min(w for w, _ in runs[side]), min(c for _, c in runs[side])
            best[side] = (wall, cpu)
            print(
                f"{label} apiprof.sphinx_ext: CPU best {cpu:.2f} s, wall best {wall:.2f} s "
                f"(CPU runs: {', '.join(f'{c:.2f}' for _, c in runs[side])})"
            )
        cpu_ratio = best["with"][1] / best["without"][1]
        wall_ratio = best["with"][0] / best["without"][0]
        print(
            f"ratio with/without: CPU {cpu_ratio:.3f} ({100 * (cpu_ratio - 1):+.1f} %), "
            f"wall {wall_ratio:.3f} ({100 * (wall_ratio - 1):+.1f} %); target ≤ +15 %"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
