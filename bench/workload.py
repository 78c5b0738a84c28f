"""A realistic Python program for the tracing benchmarks: a main thread and a small pool doing
JSON round trips, regular expressions, sorting and dictionary work on generated records.

``python bench/workload.py [UNITS]`` runs it and prints the wall-clock seconds its work took
(excluding interpreter start-up) and the CPU seconds of the process over the same time (all its
threads, a tracer's included), the figures ``trace_overhead.py`` compares. On a busy machine
the CPU seconds are the steadier figure: waiting for a core does not count. ``run(units, around=...)``
runs it in-process, calling ``around(unit)`` for every unit of work (the delay tracker's
markers in ``delay_overhead.py``).
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass

WORDS = re.compile(r"[a-z]{3,}")
EMAIL = re.compile(r"[\w.]+@[\w.]+\.\w+")


@dataclass(frozen=True)
class Record:
    id: int
    name: str
    email: str
    tags: tuple[str, ...]
    score: float


def make_records(rng: random.Random, n: int) -> list[Record]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = []
    for i in range(n):
        name = "".join(rng.choice(letters) for _ in range(rng.randint(4, 12)))
        out.append(
            Record(
                i,
                name,
                f"{name}@example.org",
                tuple(rng.sample(["red", "green", "blue", "fast", "slow", "new"], 3)),
                rng.random() * 100,
            )
        )
    return out


def round_trip(records: list[Record]) -> list[dict]:
    text = json.dumps([r.__dict__ for r in records])
    return json.loads(text)


def analyse(rows: list[dict]) -> tuple[Counter[str], int]:
    words: Counter[str] = Counter()
    emails = 0
    for row in rows:
        words.update(WORDS.findall(row["name"]))
        emails += bool(EMAIL.fullmatch(row["email"]))
    return words, emails


def rank(rows: list[dict]) -> list[tuple[float, int]]:
    by_tag: dict[str, list[tuple[float, int]]] = {}
    for row in rows:
        for tag in row["tags"]:
            by_tag.setdefault(tag, []).append((row["score"], row["id"]))
    return sorted(max(v) for v in by_tag.values())


def unit_of_work(seed: int) -> int:
    rng = random.Random(seed)
    rows = round_trip(make_records(rng, 60))
    words, emails = analyse(rows)
    return len(rank(rows)) + emails + len(words)


def run(
    units: int,
    around: Callable[[int], AbstractContextManager[object]] | None = None,
) -> float:
    """Run ``units`` units of work (a quarter of them on a 3-thread pool); returns seconds."""
    wrap = around or (lambda unit: contextlib.nullcontext())

    def one(unit: int) -> int:
        with wrap(unit):
            return unit_of_work(unit)

    started = time.perf_counter()
    with ThreadPoolExecutor(3) as pool:
        background = pool.map(one, range(units, units + units // 4))
        total = sum(one(unit) for unit in range(units))
        total += sum(background)
    return time.perf_counter() - started


if __name__ == "__main__":
    cpu = time.process_time()
    wall = run(int(sys.argv[1]) if len(sys.argv) > 1 else 600)
    print(f"{wall:.6f} {time.process_time() - cpu:.6f}")
