"""Timing plan: the co-stack rule as a graph colouring (docs/mechanisms.rst)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apiprof.engine.measure.plan import build_conflicts, plan_groups


def test_spec_abc_example_needs_two_passes_with_a_and_c_apart():
    groups = plan_groups(["A", "B", "C"], [("A", "C")])
    assert len(groups) == 2
    assert not any({"A", "C"} <= set(group) for group in groups)
    assert sorted(node for group in groups for node in group) == ["A", "B", "C"]


def test_self_recursion_does_not_need_its_own_pass():
    assert plan_groups(["f", "g"], [("f", "f")]) == [["f", "g"]]


def test_a_chain_alternates_and_a_triangle_needs_three():
    assert plan_groups(
        ["top", "mid", "leaf"], [("top", "mid"), ("mid", "leaf"), ("top", "leaf")]
    ) == [["top"], ["mid"], ["leaf"]]
    assert len(plan_groups(list("abcd"), [("a", "b"), ("b", "c"), ("c", "d")])) == 2


def test_pairs_with_unknown_nodes_are_ignored():
    assert build_conflicts(["a"], [("a", "zzz")]) == {"a": set()}


@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40),
        )
    )
)
def test_every_plan_is_a_valid_partition(case):
    n, pairs = case
    nodes = list(range(n))
    groups = plan_groups(nodes, pairs)
    assert sorted(x for g in groups for x in g) == nodes
    conflicts = {frozenset(p) for p in pairs if p[0] != p[1]}
    for group in groups:
        assert not any(frozenset((a, b)) in conflicts for a in group for b in group if a != b)
    assert plan_groups(nodes, pairs) == groups  # deterministic
