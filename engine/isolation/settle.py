"""Settling a pool's isolation level, once per process: strict where it works, else said why."""

from __future__ import annotations

from collections.abc import Callable

from apiprof.engine.isolation import confine
from apiprof.engine.isolation.confine import Confinement, Isolation
from apiprof.engine.isolation.process import ConfinedWorker, WorkerStartError
from apiprof.errors import IsolationUnavailable

_STRICT_PROBE: list[str] = []
"""Why a strictly confined worker failed to start in this process ("" once one started)."""


def settle_confinement(
    requested: Isolation, readable: list[str], start: Callable[[Confinement], ConfinedWorker]
) -> tuple[Confinement, ConfinedWorker]:
    """The confinement workers get for ``requested`` (strict where it works; with ``auto``,
    the process level otherwise, saying why), and a first worker started with it. Whether a
    strictly confined worker can start at all is learnt once per process."""
    missing = "--isolation process was asked for" if requested is Isolation.PROCESS else ""
    if not missing:
        missing = confine.strict_unavailable(readable)
    if not missing and _STRICT_PROBE and _STRICT_PROBE[0]:
        missing = _STRICT_PROBE[0]
    if not missing:
        try:
            worker = start(confine.STRICT)
            _STRICT_PROBE[:] = [""]
            return confine.STRICT, worker
        except WorkerStartError as error:
            missing = f"a strictly confined worker did not start ({error.detail})"
            _STRICT_PROBE[:] = [missing]
    if requested is Isolation.STRICT:
        raise IsolationUnavailable(
            f"--isolation strict cannot be met here: {missing}. Scan on a Linux system with "
            "user namespaces and bubblewrap, or pass --isolation process to accept weaker "
            "containment (see the threat model in docs/cli.md)"
        )
    confinement = confine.process_confinement(missing)
    return confinement, start(confinement)
