"""Machine-speed index: how long this machine and interpreter take for one fixed workload.

Costs measured on a fast desktop and a slow laptop differ as a whole; the index (ns, lower is
faster) lets readers compare them API by API. The workload is plain interpreter work of the kind
APIs do — arithmetic, string building, dict and list traffic, sorting — and the index is the
fastest of a few runs, the usual estimator of a machine's speed when other work may interrupt.
"""

from __future__ import annotations

import time

RUNS = 5


def _workload() -> int:
    table: dict[str, int] = {}
    words = []
    total = 0
    for i in range(3000):
        key = f"k{i % 257}:{i * 7919 % 1009}"
        table[key] = table.get(key, 0) + i
        words.append(key[::-1])
        total += (i * i) % 97
    words.sort()
    return total + len(table) + len("".join(words[:500]))


def machine_speed_ns(runs: int = RUNS) -> float:
    """The fastest of ``runs`` timings of the fixed workload, in ns (≈1–3 ms on a desktop)."""
    best = None
    for _ in range(max(1, runs)):
        t0 = time.perf_counter_ns()
        _workload()
        elapsed = time.perf_counter_ns() - t0
        best = elapsed if best is None else min(best, elapsed)
    return float(best or 0)
