"""``python -m apiprof.engine.cluster.runner TASK.json``: one cluster task, in its own process.

Started by :func:`apiprof.engine.cluster.tasks.run_runner` on a Dask worker, with the
interpreter of the task's environment. ``mode: scan`` runs an ordinary scan into the task's
scratch database and writes its summary — a package's first task discovers it first and, when
it is larger than a batch, scans the first batch and writes the whole list of entry points;
``mode: packages`` writes the import packages of a distribution. Exit code 0 means the output
files were written.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from apiprof.engine.cluster.inputs import import_names
from apiprof.engine.isolation.pool import WorkerPool
from apiprof.engine.scan import ScanOptions, scan
from apiprof.engine.scan.discover import discover_package
from apiprof.errors import ApiprofError, UsageError


def run(spec: dict) -> None:
    if spec["mode"] == "packages":  # the import packages a distribution installs
        packages = import_names(spec["distribution"])
        if not packages:
            raise UsageError(f"{spec['distribution']!r} installs no importable package")
        Path(spec["output"]).write_text(json.dumps(packages))
        return
    options = ScanOptions.from_json(spec["options"])
    if spec["batch_size"]:  # a package's first task: split it when it is large
        with WorkerPool(1, options.worker_options(spec["package"])) as pool:
            found, _ = discover_package(pool, spec["package"], options)
        chosen = set(options.only)
        names = sorted(
            entry.qualname
            for entry in found.discovery.entry_points
            if not chosen or entry.qualname in chosen
        )
        if len(names) > spec["batch_size"]:
            Path(spec["entry_points"]).write_text(json.dumps(names))
            options = replace(options, only=tuple(names[: spec["batch_size"]]))
    summary = scan(spec["package"], db_path=spec["db"], options=options)
    Path(spec["summary"]).write_text(json.dumps(summary.to_json()))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(args[0]).read_text())
    try:
        run(spec)
    except ApiprofError as error:
        print(f"apiprof: {error}", file=sys.stderr)
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
