"""How much of a real, untyped package does `apiprof-scan` profile with no scenario files?

Installs a fixed list of widely used PyPI packages at pinned versions into a venv of its own
(beside apiprof, installed editable from this checkout), scans each with the default command —
no scenario files, as a new user would — through the real CLI, and prints one table: entry
points found and profiled, the profiled fraction, the fraction of those that can run here
(leaving out entry points whose module needs an optional dependency not installed — both
figures, side by side) and the scan time per package. With
``--compare OLD.json`` the table puts an earlier run's figures beside today's.

With ``--tests``, each package whose sdist ships its test suite is scanned a second time with
``--tests`` pointing at that suite (the sdist is fetched with ``pip download --no-binary`` and
unpacked; pytest and the suite's own test requirements go into the venv), right after its
default scan: the table adds the profiled fraction with the suite, the suite's time (every run
of it: the warm-up, then one per profiler pass) and the whole scan's time.

A package's scan has ``--package-timeout`` seconds (its ``--tests`` scan that plus
``--tests-timeout``, which it passes on); past it the scan is interrupted (as Ctrl-C would) and
the summary it wrote so far is read, marked "interrupted".

Run:  python bench/coverage.py [--quick] [--jobs 2] [--json out.json] [--compare before.json]
      python bench/coverage.py --tests --packages more-itertools packaging python-dateutil six
      python bench/coverage.py --packages six idna --verbose   # reasons of what was missed
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Pinned:
    distribution: str  # what `pip install` takes
    version: str
    module: str  # what apiprof-scan takes
    quick: bool = False  # part of the --quick subset
    tests: str = ""  # the test suite's path inside the sdist ("" = none shipped)
    test_requires: tuple[str, ...] = ()  # what that suite imports besides pytest


PACKAGES = [
    Pinned("six", "1.17.0", "six", quick=True, tests="test_six.py"),
    Pinned(
        "idna", "3.20", "idna", quick=True, tests="tests", test_requires=("hypothesis==6.170.15",)
    ),
    Pinned("wcwidth", "0.9.1", "wcwidth", quick=True),
    Pinned("markupsafe", "3.0.3", "markupsafe", quick=True),
    Pinned("msgpack", "1.1.2", "msgpack", quick=True),
    Pinned(
        "python-dateutil",
        "2.9.0.post0",
        "dateutil",
        quick=True,
        tests="tests",
        test_requires=("freezegun==1.5.5", "hypothesis==6.170.15"),
    ),
    Pinned(
        "packaging",
        "26.3",
        "packaging",
        tests="tests",
        test_requires=("pretend==1.0.9", "tomli_w==1.2.0"),
    ),
    Pinned("pyparsing", "3.3.3", "pyparsing"),
    Pinned("jinja2", "3.1.6", "jinja2"),
    Pinned("more-itertools", "11.1.0", "more_itertools", tests="tests"),
    Pinned("chardet", "7.6.0", "chardet"),
    Pinned("tabulate", "0.10.0", "tabulate", tests="test"),
    Pinned("decorator", "5.3.1", "decorator"),
    Pinned("networkx", "3.6.1", "networkx"),
    Pinned("funcy", "2.1", "funcy", tests="tests", test_requires=("whatever==0.7",)),
    Pinned("configobj", "5.0.9", "configobj", tests="src/tests"),
    Pinned("pyasn1", "0.6.5", "pyasn1", tests="tests"),
    Pinned("rfc3986", "2.0.0", "rfc3986", tests="tests"),
    Pinned("inflection", "0.5.1", "inflection", tests="test_inflection.py"),
    Pinned("docopt", "0.6.2", "docopt"),  # its sdist ships no tests
    Pinned("cachetools", "8.0.2", "cachetools", tests="tests"),
    Pinned("isodate", "0.7.2", "isodate", tests="tests"),
    Pinned("polib", "1.2.0", "polib", tests="tests/tests.py"),
    Pinned("xmltodict", "1.0.4", "xmltodict", tests="tests"),
    Pinned("sqlparse", "0.6.1", "sqlparse", tests="tests"),
    Pinned("jmespath", "1.1.0", "jmespath", tests="tests"),
    Pinned("markdown", "3.11.3", "markdown", tests="tests", test_requires=("pyyaml==6.0.4",)),
]
"""Untyped or lightly typed, widely used; pure Python and C extensions (msgpack, markupsafe)."""


def default_venv() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return cache / "apiprof-bench" / f"coverage-py{version}"


PYTEST = "pytest==9.2.0"
"""What runs the suites under ``--tests``."""


def prepare_venv(venv: Path, packages: list[Pinned], source: Path, tests: bool = False) -> Path:
    """The venv's interpreter, with apiprof (editable, from ``source``) and the pinned packages;
    with ``tests``, pytest and the test requirements of the suites too."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pinned = [f"{p.distribution}=={p.version}" for p in packages]
    if tests:
        pinned += [PYTEST, *(r for p in packages if p.tests for r in p.test_requires)]
    wanted = [*pinned, f"apiprof from {source}"]
    marker = venv / "apiprof-bench.txt"
    if not marker.exists() or marker.read_text() != "\n".join(wanted):
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-e", str(source), *pinned], check=True
        )
        marker.write_text("\n".join(wanted))
    return python


def fetch_suite(python: Path, package: Pinned, cache: Path) -> Path:
    """The test suite inside the package's unpacked sdist (downloaded once into ``cache``)."""
    unpacked = cache / f"{package.distribution}-{package.version}"
    if not unpacked.is_dir():
        downloads = cache / "downloads"
        spec = f"{package.distribution}=={package.version}"
        download = [str(python), "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*download, spec, "-d", str(downloads)], check=True)
        stem = f"{package.distribution}-{package.version}".replace("-", "_").lower()
        archive = next(
            path
            for path in downloads.iterdir()
            if path.name.replace("-", "_").lower().startswith(stem)
        )
        with tempfile.TemporaryDirectory(dir=cache) as scratch:
            shutil.unpack_archive(archive, scratch)
            [root] = Path(scratch).iterdir()  # an sdist holds one top folder
            root.rename(unpacked)
    return unpacked / package.tests


def scan_package(
    python: Path,
    package: Pinned,
    args: argparse.Namespace,
    workdir: Path,
    suite: Path | None = None,
) -> dict[str, object]:
    """Scan one package through the CLI (with ``suite``: ``--tests SUITE``); its row."""
    name = package.module + ("-tests" if suite else "")
    summary_path = workdir / f"{name}.json"
    command = [
        str(python),
        "-m",
        "apiprof.cli",
        "scan",
        package.module,
        "--db",
        str(workdir / f"{name}.db"),
        "--summary-json",
        str(summary_path),
        "--quiet",
        "--jobs",
        str(args.jobs),
        "--repeat",
        str(args.repeat),
        *(["--tests", str(suite), "--tests-timeout", str(args.tests_timeout)] if suite else []),
        *args.extra,
    ]
    started = time.monotonic()
    process = subprocess.Popen(
        command, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    timed_out = False
    try:
        limit = args.package_timeout + (args.tests_timeout if suite else 0.0)
        _, stderr = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        timed_out = True
        # SIGTERM, not SIGINT: a process started in the background ignores SIGINT; apiprof-scan
        # treats SIGTERM as Ctrl-C: it stores what it has and writes its summary
        process.send_signal(signal.SIGTERM)
        try:
            _, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
    seconds = time.monotonic() - started
    row: dict[str, object] = {
        "package": package.distribution,
        "version": package.version,
        "seconds": round(seconds, 1),
        "exit_code": process.returncode,
    }
    try:
        summary = json.loads(summary_path.read_text())["packages"][0]
    except (OSError, ValueError, KeyError, IndexError):
        row.update(discovered=0, profiled=0, fraction=0.0, status="no summary")
        row["error"] = (stderr or "").strip().splitlines()[-1:] or ["(no output)"]
        return row
    # what can run here: all but entry points needing an absent optional dependency (computed
    # from the counts, so summaries of apiprof versions without "runnable" compare too)
    runnable = summary["discovered"] - summary["coverage"].get("missing_dependency", 0)
    row.update(
        discovered=summary["discovered"],
        profiled=summary["profiled"],
        fraction=summary["profiled_fraction"],
        runnable=runnable,
        runnable_fraction=round(summary["profiled"] / runnable, 4) if runnable else 0.0,
        status="interrupted" if timed_out else summary["status"],
        coverage=summary["coverage"],
        not_profiled=summary["not_profiled"],
    )
    if summary.get("tests"):
        row["suite"] = summary["tests"]
    return row


def with_suite(row: dict[str, object], tested: dict[str, object]) -> dict[str, object]:
    """The default scan's row with the ``--tests`` scan's figures beside it."""
    suite = tested.get("suite") or {}
    assert isinstance(suite, dict)
    return {
        **row,
        "tests": {
            "profiled": tested["profiled"],
            "fraction": tested["fraction"],
            "seconds": tested["seconds"],
            "status": tested["status"],
            "suite_seconds": round(sum(suite.get("seconds_per_run", [])), 1),
            "suite_runs": suite.get("seconds_per_run", []),
            "suite_phases": suite.get("seconds_by_phase", {}),
            "suite_status": suite.get("status", "absent"),
            "outcomes": {k: suite.get(k, 0) for k in ("passed", "failed", "errors", "skipped")},
            "notes": suite.get("notes", []),
            "warnings": suite.get("warnings", []),
            "failures": suite.get("failures", {}),
            "not_profiled": tested.get("not_profiled", []),
        },
    }


def runnable_of(row: dict) -> int:
    """Entry points that can run here (rows of older runs lack the figure: all of them)."""
    return int(row.get("runnable", row["discovered"]))


def runnable_fraction(row: dict) -> float:
    return float(row.get("runnable_fraction", row["fraction"]))


def print_table(rows: list[dict], before: dict[str, dict]) -> None:
    compare = bool(before)
    tested = any("tests" in row for row in rows)
    header = (
        f"{'package':<16} {'version':<12} {'found':>5} {'profiled':>8} {'fraction':>8} "
        f"{'runnable':>8} {'of those':>8} {'seconds':>8}"
    )
    if tested:
        header += f" {'--tests':>8} {'suite s':>8} {'scan s':>8}"
    if compare:
        header += f" {'before':>8} {'before s':>8}"
    print(header)
    print("-" * len(header))
    for row in rows:
        line = (
            f"{row['package']:<16} {row['version']:<12} {row['discovered']:>5} {row['profiled']:>8} "
            f"{row['fraction']:>8.1%} {runnable_of(row):>8} {runnable_fraction(row):>8.1%} "
            f"{row['seconds']:>8.1f}"
        )
        if tested:
            suite = row.get("tests")
            line += (
                f" {suite['fraction']:>8.1%} {suite['suite_seconds']:>8.1f} {suite['seconds']:>8.1f}"
                if suite
                else f" {'—':>8} {'—':>8} {'—':>8}"
            )
        if compare:
            old = before.get(str(row["package"]))
            line += (
                f" {old['fraction']:>8.1%} {old['seconds']:>8.1f}" if old else f" {'—':>8} {'—':>8}"
            )
        if row["status"] != "finished":
            line += f"  ({row['status']})"
        if row.get("tests") and row["tests"]["status"] != "finished":
            line += f"  (--tests: {row['tests']['status']})"
        print(line)
    found = sum(int(r["discovered"]) for r in rows)
    profiled = sum(int(r["profiled"]) for r in rows)
    runnable = sum(runnable_of(r) for r in rows)
    seconds = sum(float(r["seconds"]) for r in rows)
    print("-" * len(header))
    total = (
        f"{'all':<16} {'':<12} {found:>5} {profiled:>8} {profiled / max(found, 1):>8.1%} "
        f"{runnable:>8} {profiled / max(runnable, 1):>8.1%} {seconds:>8.1f}"
    )
    if tested:
        suites = [(r, r["tests"]) for r in rows if "tests" in r]
        with_found = sum(int(r["discovered"]) for r, _ in suites)
        with_profiled = sum(int(t["profiled"]) for _, t in suites)
        total += (
            f" {with_profiled / max(with_found, 1):>8.1%}"
            f" {sum(float(t['suite_seconds']) for _, t in suites):>8.1f}"
            f" {sum(float(t['seconds']) for _, t in suites):>8.1f}"
        )
    if compare:
        old_rows = [before[str(r["package"])] for r in rows if str(r["package"]) in before]
        old_found = sum(int(r["discovered"]) for r in old_rows)
        old_profiled = sum(int(r["profiled"]) for r in old_rows)
        total += f" {old_profiled / max(old_found, 1):>8.1%} {sum(float(r['seconds']) for r in old_rows):>8.1f}"
    print(total)
    print(
        "fraction: profiled / found; runnable: found minus those needing an optional dependency "
        "not installed here (missing_dependency); of those: profiled / runnable"
    )
    if tested:
        print(
            "--tests: profiled fraction with the package's own sdist test suite (--tests); suite s: "
            "every run of the suite (warm-up and one per profiler pass); scan s: that whole scan"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--packages", nargs="+", metavar="DIST", help="a subset, by distribution name"
    )
    parser.add_argument("--quick", action="store_true", help="the small, fast subset")
    parser.add_argument(
        "--tests",
        action="store_true",
        help="also scan each package whose sdist ships tests with --tests pointing at them",
    )
    parser.add_argument("--jobs", type=int, default=2, help="parallel workers per scan (default 2)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per scenario and size (default 3)"
    )
    parser.add_argument(
        "--package-timeout",
        type=float,
        default=900.0,
        help="seconds one package's scan may take; then it is interrupted (default 900)",
    )
    parser.add_argument(
        "--tests-timeout",
        type=float,
        default=900.0,
        help="--tests-timeout of the --tests scans, added to their --package-timeout (default 900)",
    )
    parser.add_argument("--venv", type=Path, default=None, help="where to build the venv")
    parser.add_argument(
        "--apiprof-source",
        type=Path,
        default=ROOT,
        help="the apiprof checkout to measure (default: this one), e.g. an export of an older commit",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument("--compare", metavar="PATH", help="an earlier --json to show beside")
    parser.add_argument(
        "--verbose", action="store_true", help="list what was not profiled, and why"
    )
    parser.add_argument(
        "extra", nargs="*", help="more apiprof-scan options after `--`, e.g. -- --no-heuristics"
    )
    args = parser.parse_args(argv)

    chosen = [p for p in PACKAGES if (not args.quick or p.quick)]
    if args.packages:
        chosen = [
            p for p in PACKAGES if p.distribution in args.packages or p.module in args.packages
        ]
    venv = args.venv or default_venv()
    python = prepare_venv(venv, PACKAGES, args.apiprof_source.resolve(), tests=args.tests)
    before = {}
    if args.compare:
        before = {row["package"]: row for row in json.loads(Path(args.compare).read_text())}
    rows = []
    with tempfile.TemporaryDirectory(prefix="apiprof-coverage-") as workdir:
        for package in chosen:
            row = scan_package(python, package, args, Path(workdir))
            print(
                f"  {row['package']}: {row['profiled']}/{row['discovered']} in {row['seconds']} s",
                file=sys.stderr,
                flush=True,
            )
            if args.tests and package.tests:
                suite = fetch_suite(python, package, venv / "sdists")
                row = with_suite(row, scan_package(python, package, args, Path(workdir), suite))
                print(
                    f"  {row['package']} --tests: {row['tests']['profiled']}/{row['discovered']}, "
                    f"suite {row['tests']['suite_status']}, runs {row['tests']['suite_runs']} s, "
                    f"by phase {row['tests']['suite_phases']} s ({row['tests']['outcomes']})",
                    file=sys.stderr,
                    flush=True,
                )
            rows.append(row)
            if args.verbose:
                for miss in row.get("not_profiled", []):
                    print(f"    {miss['qualname']}: {miss['status']}: {miss['reason'][:300]}")
                for miss in row.get("tests", {}).get("not_profiled", []):
                    print(
                        f"    --tests {miss['qualname']}: {miss['status']}: {miss['reason'][:300]}"
                    )
                for note in row.get("tests", {}).get("notes", []):
                    print(f"    --tests note: {note}")
                for node, why in row.get("tests", {}).get("failures", {}).items():
                    print(f"    --tests failing: {node}: {why}")
    print_table(rows, before)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
