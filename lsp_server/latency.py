"""The server's own request latency, per LSP method: the delay self-check.

Every handled request is timed from handler entry to the ready result. The tracker keeps the
last :data:`WINDOW` durations per method for p50/p95 and an additive log2 histogram of all of
them (the same :class:`~apiprof.model.histogram.Histogram` the profiles use), which the delay
tracker of a later stage can merge and upload. Clients read it with the custom request
``apiprof/latencyReport``; requests slower than a threshold are logged, at most once per method
per :data:`SLOW_LOG_INTERVAL_S`, so a slow machine cannot flood the log.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from apiprof.format import format_ns
from apiprof.model.histogram import Histogram

WINDOW = 1024
SLOW_LOG_INTERVAL_S = 60.0
REPORT_METHOD = "apiprof/latencyReport"


@dataclass
class MethodLatency:
    recent: deque[int] = field(default_factory=lambda: deque(maxlen=WINDOW))
    histogram: Histogram = field(default_factory=Histogram)
    count: int = 0
    max_ns: int = 0
    last_slow_log: float = float("-inf")

    def percentile_ns(self, q: float) -> float | None:
        """Nearest-rank percentile over the recent window (exact, unlike the log2 histogram)."""
        if not self.recent:
            return None
        ordered = sorted(self.recent)
        rank = max(1, -(-len(ordered) * q // 100))
        return float(ordered[int(rank) - 1])


class LatencyTracker:
    def __init__(
        self,
        slow_ms: float = 100.0,
        on_slow: Callable[[str], None] | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        self.slow_ms = slow_ms
        self.on_slow = on_slow
        self.clock = clock
        self.methods: dict[str, MethodLatency] = {}

    def record(self, method: str, elapsed_ns: int) -> None:
        entry = self.methods.setdefault(method, MethodLatency())
        entry.recent.append(elapsed_ns)
        entry.histogram.add(elapsed_ns)
        entry.count += 1
        entry.max_ns = max(entry.max_ns, elapsed_ns)
        if self.on_slow and elapsed_ns > self.slow_ms * 1e6:
            now = self.clock() / 1e9
            if now - entry.last_slow_log >= SLOW_LOG_INTERVAL_S:
                entry.last_slow_log = now
                self.on_slow(
                    f"slow {method}: {format_ns(elapsed_ns)} (threshold {self.slow_ms:g} ms)"
                )

    def start(self) -> int:
        return self.clock()

    def stop(self, method: str, started_ns: int) -> None:
        self.record(method, self.clock() - started_ns)

    def report(self) -> list[dict[str, Any]]:
        """JSON-ready per-method figures: counts, p50/p95/max in ms, log2 bucket rows in ns."""
        return [
            {
                "method": method,
                "count": entry.count,
                "p50_ms": _ms(entry.percentile_ns(50)),
                "p95_ms": _ms(entry.percentile_ns(95)),
                "max_ms": _ms(entry.max_ns),
                "buckets": [list(row) for row in entry.histogram.rows()],
            }
            for method, entry in sorted(self.methods.items())
        ]


def _ms(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 4)
