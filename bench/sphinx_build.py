"""What the Sphinx extension costs a real project's docs build: more-itertools' own documentation
(furo, autodoc, viewcode) built with and without ``apiprof.sphinx_ext`` over a real scan of
more-itertools, side by side in one run.

    python bench/sphinx_build.py [--repeat 5] [--work DIR] [--jobs 1] [--baseline DIR]

The script makes its own virtual environment under ``--work`` (apiprof from this checkout, the
pinned more-itertools and furo), unpacks more-itertools' source distribution for its ``docs/``,
scans the package with ``apiprof-scan`` once (kept in ``--work`` for later runs) and then, for
each of ``--repeat`` rounds, alternating sides so machine noise hits both alike:

* a full build (``-E``, fresh output folder), and
* a no-op rebuild (the same command again, nothing changed), counting the files it rewrote,

both plain and with ``html_baseurl`` set (every page then has its own canonical URL). It prints
the medians (and the best runs: on a shared machine the least disturbed run is the steadiest
figure) and the with/without ratios. Goals: full build ≤ 1.15×, and a no-op rebuild that
rewrites no drill-down page.

``--instructions`` also counts, once per side, the instructions of a full build under
valgrind's callgrind (``valgrind`` must be installed): unlike CPU time, that count does not move
with the machine's load, so it is the figure to trust on a shared machine (a build takes minutes
under valgrind).

``--baseline DIR`` adds a third side: the extension from another apiprof checkout (say main's,
``git archive main | tar -x -C DIR``), installed in its own venv, so a change is measured
before and after in the same interleaved rounds. It reads the same scan database, or
``--baseline-db FILE`` when this checkout's schema is newer than the baseline reads (a copy
of the database as the baseline's apiprof wrote it).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT = "more-itertools"
PACKAGE = "more_itertools"
VERSION = "11.2.1"  # the reference case of issue 12: 176 documented objects
PINNED = [f"{PROJECT}=={VERSION}", "furo==2025.12.19"]
BASEURL = "https://more-itertools.example.org/en/stable/"


def run(command: list[str | Path], **kwargs) -> None:
    subprocess.run([str(c) for c in command], check=True, **kwargs)


def make_venv(venv: Path, python: str, checkout: Path) -> Path:
    """A venv with apiprof from ``checkout`` and the pinned packages (made once); its python."""
    py = venv / "bin" / "python"
    if not py.exists():
        run([python, "-m", "venv", venv])
        run([py, "-m", "pip", "install", "-q", "-e", checkout, *PINNED])
    return py


def prepare(work: Path, python: str) -> tuple[Path, Path, Path]:
    """(venv python, docs source folder, scan database), made once and reused."""
    venv = work / "venv"
    py = make_venv(venv, python, REPO)
    source = work / f"{PACKAGE}-{VERSION}"
    if not source.exists():
        download = work / "download"
        run(
            [
                py,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                PINNED[0],
                "-d",
                download,
            ]
        )
        [archive] = download.glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(work, filter="data")
    database = work / f"{PACKAGE}.db"
    if not database.exists():
        print(f"scanning {PACKAGE} {VERSION} into {database} (once; a few minutes)", flush=True)
        run([venv / "bin" / "apiprof-scan", PACKAGE, "--db", database, "--quiet"])
    # opened once read-write, as any writing command opens it: a file an older apiprof wrote
    # gets the stored figures readers use (a new scan has them already)
    run([py, "-c", "import sys; from apiprof.db import open_db; open_db(sys.argv[1])", database])
    return py, source, database


def make_side(source: Path, side: Path, database: Path | None, baseurl: bool) -> Path:
    """A copy of the project whose conf.py adds the extension (``database`` given) or not."""
    shutil.rmtree(side, ignore_errors=True)
    shutil.copytree(source, side, ignore=shutil.ignore_patterns("_build"))
    conf = side / "docs" / "conf.py"
    extra = [f"html_baseurl = {BASEURL!r}"] if baseurl else []
    if database is not None:
        extra += [
            "extensions.append('apiprof.sphinx_ext')",
            f"apiprof_db = {str(database)!r}",
            "apiprof_auto = True",
        ]
    conf.write_text(conf.read_text(encoding="utf-8") + "\n" + "\n".join(extra) + "\n")
    return side / "docs"


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float
    rewritten: int  # files under the output folder written again (new mtime)
    pages_rewritten: int  # of those, apiprof's drill-down and index pages


def snapshot(out: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} if out.exists() else {}


def build(py: Path, docs: Path, *, fresh: bool, jobs: int) -> Timing:
    """One ``sphinx-build`` in a child process: wall and CPU seconds, and what it rewrote."""
    out = docs / "_build" / "html"
    if fresh:
        shutil.rmtree(docs / "_build", ignore_errors=True)
    before_files = snapshot(out)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [py, "-m", "sphinx", "-q", "-b", "html", "-j", str(jobs), ".", "_build/html"]
    run(command + (["-E"] if fresh else []), cwd=docs, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    after_files = snapshot(out)
    rewritten = [p for p, mtime in after_files.items() if before_files.get(p) != mtime]
    pages = out / "apiprof"
    return Timing(wall, cpu, len(rewritten), sum(p.is_relative_to(pages) for p in rewritten))


def instructions(py: Path, docs: Path, *, jobs: int) -> int:
    """Instructions of one full build, counted by valgrind's callgrind (load-independent)."""
    shutil.rmtree(docs / "_build", ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [py, "-m", "sphinx", "-q", "-E", "-b", "html", "-j", str(jobs), ".", "_build/html"]
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *map(str, command)],
        cwd=docs,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    counts = re.findall(r"Collected : (\d+)", done.stderr)  # one per process (-j forks)
    if not counts:
        raise RuntimeError(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return sum(int(count) for count in counts)


def rewritten_pages(docs: Path) -> int:
    return len(list((docs / "_build" / "html" / "apiprof").glob("*.html")))


def median(values: list[float]) -> float:
    return statistics.median(values)


def report(label: str, runs_by_side: dict[str, list[Timing]]) -> None:
    """Each side's medians and runs, then every extension side's ratios to ``without``."""
    for name, runs in runs_by_side.items():
        print(
            f"  {label:<15} {name:<8} CPU median {median([r.cpu for r in runs]):6.2f} s "
            f"(best {min(r.cpu for r in runs):.2f}), wall median {median([r.wall for r in runs]):6.2f} s, "
            f"files rewritten {median([r.rewritten for r in runs]):.0f} (apiprof pages "
            f"{median([r.pages_rewritten for r in runs]):.0f}; CPU runs: "
            + ", ".join(f"{r.cpu:.2f}" for r in runs)
            + "; wall runs: "
            + ", ".join(f"{r.wall:.2f}" for r in runs)
            + ")"
        )
    without = runs_by_side["without"]
    for name, runs in runs_by_side.items():
        if name == "without":
            continue
        cpu = median([r.cpu for r in runs]) / median([r.cpu for r in without])
        best = min(r.cpu for r in runs) / min(r.cpu for r in without)
        wall = median([r.wall for r in runs]) / median([r.wall for r in without])
        per_round = ", ".join(f"{r.cpu / w.cpu:.2f}" for r, w in zip(runs, without, strict=True))
        print(
            f"  {label:<15} ratio {name}/without: CPU {cpu:.3f}× (best runs {best:.3f}×; "
            f"per round {per_round}), wall {wall:.3f}×"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds (medians are reported)")
    parser.add_argument(
        "--work",
        type=Path,
        default=Path.home() / ".cache" / "apiprof-bench-sphinx",
        help="venv, sources and scan database live (and are reused) here",
    )
    parser.add_argument("--python", default=sys.executable, help="interpreter for the venv")
    parser.add_argument("--jobs", type=int, default=1, help="sphinx-build -j")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each side's instructions of a full build under valgrind (callgrind)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another apiprof checkout whose extension is measured too, as side 'baseline'",
    )
    parser.add_argument(
        "--baseline-db",
        type=Path,
        help="the database the baseline side reads (default: the scan database)",
    )
    args = parser.parse_args(argv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    py, source, database = prepare(work, args.python)
    pythons = {"without": py, "with": py}
    if args.baseline:
        pythons["baseline"] = make_venv(work / "baseline-venv", args.python, args.baseline)
    print(f"{PROJECT} {VERSION} docs with furo; database {database}")
    for baseurl in (False, True):
        databases = {
            "without": None,
            "with": database,
            "baseline": (args.baseline_db or database).resolve(),
        }
        sides = {side: make_side(source, work / side, databases[side], baseurl) for side in pythons}
        full: dict[str, list[Timing]] = {side: [] for side in sides}
        noop: dict[str, list[Timing]] = {side: [] for side in sides}
        for _ in range(args.repeat):
            for side, docs in sides.items():
                full[side].append(build(pythons[side], docs, fresh=True, jobs=args.jobs))
                noop[side].append(build(pythons[side], docs, fresh=False, jobs=args.jobs))
        pages = rewritten_pages(sides["with"])
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"{'with html_baseurl' if baseurl else 'plain'}: {pages} drill-down pages, "
            f"{args.repeat} rounds; load average now {load}"
        )
        report("full build", full)
        report("no-op rebuild", noop)
        if args.instructions:
            counted = {
                side: instructions(pythons[side], docs, jobs=args.jobs)
                for side, docs in sides.items()
            }
            for side, count in counted.items():
                ratio = count / counted["without"]
                print(f"  instructions    {side:<8} {count / 1e9:6.2f} G (×{ratio:.3f} of without)")


if __name__ == "__main__":
    main()
