"""The time tree: the worked example node by node, exactness at P = 100 %, bounded error below.

The worked example's node totals do not add up as printed (its leaves hold 90 + 45 + 70 + 99
= 304 samples while its root claims 330, [250,500] claims 116 against 45 + 70), so the tree
test keeps what the example asserts — the leaf sizes, which nodes split, which stacks each
inner node keeps and which nodes the window [300,700] visits — with inner-node counts derived
from its leaves; :func:`test_example_kept_stacks_as_printed` checks the printed inner-node counts
themselves against the P = 95 % rule.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apiprof.errors import UsageError
from apiprof.tracing.timetree import (
    MemoryTree,
    TreeShape,
    Visit,
    count_linearly,
    int_array,
    keep_top,
    split_points,
)

A, B, C, D, E, F, G, H, I = range(1, 10)  # noqa: E741 (the example names stacks A–I)
NAMES = dict(zip(range(1, 10), "ABCDEFGHI", strict=True))
EXAMPLE_SHAPE = TreeShape(leaf_size=100, fanout=2, keep_percent=95)

# (span, samples per stack) of the example's four leaves
EXAMPLE_LEAVES = [
    ((0, 250), {A: 22, B: 18, C: 10, E: 6, D: 11, F: 13, G: 10}),  # 90
    ((250, 375), {A: 15, B: 10, C: 10, E: 5, D: 4, F: 1}),  # 45
    ((375, 500), {A: 24, B: 16, C: 15, E: 10, D: 5}),  # 70
    ((500, 1000), {A: 26, B: 31, C: 11, D: 5, E: 3, F: 5, G: 3, H: 9, I: 6}),  # 99
]


def example_samples() -> tuple[list[int], list[int]]:
    """The leaves' samples spread evenly over their spans, stacks interleaved."""
    times, stacks = [], []
    for (start, end), counts in EXAMPLE_LEAVES:
        order = sorted(Counter(counts).elements(), key=lambda s: (hash((s, start)) % 7, s))
        for i, stack in enumerate(order):
            times.append(start + (2 * i + 1) * (end - start) // (2 * len(order)))
            stacks.append(stack)
    return times, stacks


@pytest.fixture(scope="module")
def example() -> MemoryTree:
    times, stacks = example_samples()
    return MemoryTree(times, stacks, EXAMPLE_SHAPE, start=0, end=1000)


def kept_names(node) -> str:
    return "".join(NAMES[s] for s in node.kept[0])


def test_example_tree_shape_and_kept_stacks(example):
    nodes = {(n.start, n.end): n for n in example.walk()}
    assert sorted(nodes) == [
        (0, 250), (0, 500), (0, 1000), (250, 375), (250, 500), (375, 500), (500, 1000)
    ]  # fmt: skip
    leaves = {span: n.samples for span, n in nodes.items() if n.leaf}
    assert leaves == {(0, 250): 90, (250, 375): 45, (375, 500): 70, (500, 1000): 99}
    assert kept_names(nodes[0, 1000]) == "ABCDEFG"
    assert kept_names(nodes[0, 500]) == "ABCEDF"  # E (21) outranks D (20)
    assert kept_names(nodes[250, 500]) == "ABCED"
    assert [c.start for c in example.children(nodes[0, 1000])] == [0, 500]
    assert [c.start for c in example.children(nodes[250, 500])] == [250, 375]


def test_example_window_visits(example):
    result = example.window(300, 700)
    assert result.visits == [
        Visit(0, 1000, 304, "descended"),
        Visit(0, 500, 205, "descended"),
        Visit(0, 250, 90, "skipped"),
        Visit(250, 500, 115, "descended"),
        Visit(250, 375, 45, "enumerated"),
        Visit(375, 500, 70, "merged"),
        Visit(500, 1000, 99, "enumerated"),
    ]
    times, stacks = example_samples()
    assert result.stacks == count_linearly(times, stacks, 300, 700)
    assert result.exact  # only leaves were merged: raw samples, nothing dropped


def test_example_approximation_is_stated(example):
    """Merging [0,500] whole at P = 95 % drops G (10 samples) and says so."""
    result = example.window(0, 500)
    assert [v.action for v in result.visits] == ["descended", "merged", "skipped"]
    assert result.samples == 205 and result.unattributed == 10 and not result.exact
    assert G not in result.stacks and result.stacks[A] == 61


def test_example_kept_stacks_as_printed():
    rule = EXAMPLE_SHAPE.keep_percent
    root = {A: 113, B: 75, C: 46, D: 25, E: 24, F: 19, G: 13, H: 9, I: 6}
    first_half = {A: 72, B: 44, C: 35, E: 21, D: 20, F: 14, G: 10}
    second_quarter = {A: 40, B: 26, C: 25, E: 15, D: 9, F: 1}
    for counts, total, kept in [
        (root, 330, "ABCDEFG"),
        (first_half, 216, "ABCEDF"),
        (second_quarter, 116, "ABCED"),
    ]:
        assert sum(counts.values()) == total
        stacks, _ = keep_top(counts, total, rule)
        assert "".join(NAMES[s] for s in stacks) == kept


def test_split_points_halve_the_span():
    assert split_points(0, 1000, 2) == [0, 500, 1000]
    assert split_points(250, 500, 2) == [250, 375, 500]
    assert split_points(0, 10, 3) == [0, 3, 6, 10]


def test_shape_is_validated():
    for bad in ({"leaf_size": 0}, {"fanout": 1}, {"keep_percent": 0}, {"keep_percent": 101}):
        with pytest.raises(UsageError):
            TreeShape(**bad)


def test_samples_at_one_instant_end_in_a_leaf():
    """Many threads sampled at the same tick cannot be split by time: the split must stop."""
    times, stacks = [5] * 50, [1, 2] * 25
    tree = MemoryTree(times, stacks, TreeShape(leaf_size=4, fanout=2), start=0, end=10)
    assert tree.window(0, 10).stacks == {1: 25, 2: 25}
    assert tree.window(5, 6).stacks == {1: 25, 2: 25}
    assert tree.window(6, 10).samples == 0


def test_empty_recording():
    tree = MemoryTree([], [], TreeShape(leaf_size=4))
    result = tree.window(0, 100)
    assert result.samples == 0 and result.stacks == {} and result.exact


@st.composite
def recordings(draw):
    n = draw(st.integers(0, 400))
    gaps = draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))
    times, t = [], 0
    for gap in gaps:
        t += gap
        times.append(t)
    # few distinct stacks with bursts, like a program's phases
    stacks = draw(st.lists(st.integers(1, 12), min_size=n, max_size=n))
    shape = TreeShape(
        leaf_size=draw(st.integers(1, 40)),
        fanout=draw(st.integers(2, 5)),
        keep_percent=draw(st.sampled_from([100.0, 99.0, 90.0, 50.0, 10.0])),
    )
    end = t + 1 + draw(st.integers(0, 50))
    windows = [
        tuple(sorted(draw(st.lists(st.integers(-5, end + 5), min_size=2, max_size=2))))
        for _ in range(5)
    ]
    return int_array(times), int_array(stacks), shape, end, windows


@settings(max_examples=150, deadline=None)
@given(recordings())
def test_window_counts_match_a_linear_pass(recording):
    times, stacks, shape, end, windows = recording
    tree = MemoryTree(times, stacks, shape, start=0, end=end)
    for lo, hi in windows:
        truth = count_linearly(times, stacks, lo, hi)
        result = tree.window(lo, hi)
        assert result.samples == sum(truth.values())
        if shape.keep_percent == 100:
            assert result.stacks == truth and result.exact
        else:  # each count is low by at most the unattributed samples, never high
            assert sum(result.stacks.values()) + result.unattributed == result.samples
            for stack, count in truth.items():
                assert 0 <= count - result.stacks.get(stack, 0) <= result.unattributed
            assert set(result.stacks) <= set(truth)


@settings(max_examples=60, deadline=None)
@given(recordings())
def test_inner_nodes_keep_at_least_p_percent(recording):
    times, stacks, shape, end, _ = recording
    tree = MemoryTree(times, stacks, shape, start=0, end=end)
    for node in tree.walk():
        children = tree.children(node)
        if node.leaf:
            assert node.samples < shape.leaf_size or node.end - node.start < shape.fanout
            continue
        assert len(children) == shape.fanout
        assert sum(c.samples for c in children) == node.samples
        assert node.kept_samples * 100 >= shape.keep_percent * node.samples
        without_last = node.kept_samples - node.kept[1][-1]
        assert without_last * 100 < shape.keep_percent * node.samples  # no more than needed
        truth = Counter(stacks[node.first : node.stop])
        for stack, count in zip(*node.kept, strict=True):
            assert truth[stack] == count
