"""What a cluster scan scans: packages, requirement lines, or everything installed here."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from apiprof.errors import UsageError


@dataclass(frozen=True)
class Target:
    """A package to scan, by import name; or a requirement line whose distribution's packages
    are scanned in a virtualenv of their own (``package`` empty)."""

    package: str = ""
    requirement: str = ""


def targets_from_requirements(path: str | Path) -> list[Target]:
    """One target per requirement line of a pip requirements file (comments and blank lines
    skipped; pip options such as ``-r`` or ``--index-url`` are refused with the line number)."""
    targets = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise UsageError(f"--requirements {path}: cannot read it ({error})") from None
    for number, raw in enumerate(lines, start=1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            raise UsageError(
                f"{path}:{number}: pip options ({line.split()[0]}) are not supported; list one "
                "requirement per line"
            )
        targets.append(Target(requirement=line))
    if not targets:
        raise UsageError(f"--requirements {path}: no requirement lines in it")
    return targets


def targets_from_installed(exclude: Sequence[str] = ("apiprof",)) -> list[Target]:
    """Every importable top-level package of the distributions installed here."""
    owners = importlib.metadata.packages_distributions()
    packages = {
        name
        for name, distributions in owners.items()
        if name.isidentifier()
        and not name.startswith("_")
        and not any(d.lower() in exclude for d in distributions)
    }
    return [Target(package) for package in sorted(packages)]


def import_names(distribution: str) -> list[str]:
    """The public top-level import names of an installed distribution."""
    wanted = _normalise(distribution)
    owners = importlib.metadata.packages_distributions()
    return sorted(
        name
        for name, distributions in owners.items()
        if name.isidentifier()
        and not name.startswith("_")
        and any(_normalise(d) == wanted for d in distributions)
    )


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")
