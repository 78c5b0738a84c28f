"""A large suite's warm-up runs a sample of each parametrized test, not every case.

Suites such as a version parser's parametrize one test over thousands of inputs: tens of
thousands of cases that all call the same entry points. Capture keeps only a few distinct calls
per entry point and the profiled runs need only a few tests, so once a suite collects more than
:data:`LARGE_SUITE` tests, the warm-up runs at most :data:`CASES_PER_TEST` cases of each
parametrized test — spread evenly over its parameter list, so that its first, last and middle
inputs (often its small and large ones) are all seen. Tests that are not parametrized all run.
"""

from __future__ import annotations

from collections.abc import Sequence

LARGE_SUITE = 5000
"""Collected tests past which a suite's parametrized tests are sampled in the warm-up."""

CASES_PER_TEST = 10
"""Cases of one parametrized test a large suite's warm-up runs."""


def sampled_cases(node_ids: Sequence[str], per_test: int = CASES_PER_TEST) -> list[str]:
    """``node_ids`` (in order) keeping at most ``per_test`` cases (``test_x[...]``) of each
    parametrized test, evenly spaced over them, first and last included."""
    cases: dict[str, list[str]] = {}
    for node in node_ids:
        cases.setdefault(node.partition("[")[0], []).append(node)
    kept: set[str] = set()
    for nodes in cases.values():
        if len(nodes) <= per_test:
            kept.update(nodes)
            continue
        step = (len(nodes) - 1) / max(per_test - 1, 1)
        kept.update(nodes[round(index * step)] for index in range(per_test))
    return [node for node in node_ids if node in kept]
