"""Timing plan: which targets may be timed together in one pass (the co-stack rule, docs/mechanisms.rst).

Two functions that ever appear on the same call stack are never timed in the same pass — the
inner one's probes would land inside the outer one's measured interval. Targets that never
share a stack can share a pass. Fewer passes = a colouring of the "shares a stack" graph with
few colours; DSATUR (pick the uncoloured node whose neighbours already use the most distinct
colours, ties by degree) is optimal on the small graphs we see and near-optimal elsewhere.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

Node = TypeVar("Node", bound=Hashable)


def build_conflicts(
    nodes: Iterable[Node], costack: Iterable[tuple[Node, Node]]
) -> dict[Node, set[Node]]:
    """Undirected conflict graph over ``nodes`` from (ancestor, descendant) pairs; self-pairs
    (recursion) and pairs involving unknown nodes are ignored."""
    graph: dict[Node, set[Node]] = {node: set() for node in nodes}
    for a, b in costack:
        if a != b and a in graph and b in graph:
            graph[a].add(b)
            graph[b].add(a)
    return graph


def plan_groups(nodes: Sequence[Node], costack: Iterable[tuple[Node, Node]]) -> list[list[Node]]:
    """Partition ``nodes`` into groups no two members of which ever share a stack.

    Deterministic: ties are broken by the order of ``nodes``; members of each group keep that
    order, and groups are ordered by their first member.
    """
    graph = build_conflicts(nodes, costack)
    order = {node: i for i, node in enumerate(graph)}
    colour: dict[Node, int] = {}
    neighbour_colours: dict[Node, set[int]] = {node: set() for node in graph}
    while len(colour) < len(graph):
        node = max(
            (n for n in graph if n not in colour),
            key=lambda n: (len(neighbour_colours[n]), len(graph[n]), -order[n]),
        )
        taken = neighbour_colours[node]
        chosen = next(c for c in range(len(graph)) if c not in taken)
        colour[node] = chosen
        for other in graph[node]:
            neighbour_colours[other].add(chosen)
    groups: dict[int, list[Node]] = {}
    for node in graph:
        groups.setdefault(colour[node], []).append(node)
    return sorted(groups.values(), key=lambda members: order[members[0]])
