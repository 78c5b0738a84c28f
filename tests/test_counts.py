"""The array arithmetic a window report runs on: sums by id on both of their paths (a dense
``bincount`` and a sort), exclusive totals placed by inclusive ids, the leaf roll-up, top rows."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apiprof.tracing.counts import (
    DENSE_IDS,
    add_counts,
    add_indexed,
    add_totals,
    as_dict,
    ints,
    roll_up,
    top_positions,
)
from apiprof.tracing.stacks import EMPTY_STACK, Frame, StackTable

# ids small enough for a dense bincount, and ids far above what a few pairs make dense
ID_RANGES = st.sampled_from([(0, 50), (0, 1000), (DENSE_IDS * 10, DENSE_IDS * 40)])


@st.composite
def parts(draw, smallest: int = 0):
    """Parts of (ids, numbers) whose ids repeat within and across parts."""
    values = st.integers(smallest, 1000)
    low, high = draw(ID_RANGES)
    drawn = []
    for _ in range(draw(st.integers(0, 5))):
        ids = draw(st.lists(st.integers(low, high), max_size=40))
        numbers = draw(st.lists(values, min_size=len(ids), max_size=len(ids)))
        drawn.append((ids, numbers))
    return drawn


def summed(drawn) -> dict[int, int]:
    total: Counter[int] = Counter()
    for ids, numbers in drawn:
        for i, n in zip(ids, numbers, strict=True):
            total[i] += n
    return {i: n for i, n in total.items() if n}


def arrays(drawn):
    return [(ints(ids), ints(numbers)) for ids, numbers in drawn]


@settings(max_examples=200, deadline=None)
@given(parts())
def test_add_counts_sums_by_id_on_either_path(drawn):
    ids, sums = add_counts(arrays(drawn))
    assert list(ids) == sorted(ids) and all(sums)
    assert as_dict(ids, sums) == summed(drawn)


@settings(max_examples=100, deadline=None)
@given(parts())
def test_add_indexed_equals_add_counts(drawn):
    index = ints(sorted({i for ids, _ in drawn for i in ids}))
    positioned = [(np.searchsorted(index, ids), numbers) for ids, numbers in arrays(drawn)]
    found = add_indexed(positioned, index)
    expected = add_counts(arrays(drawn))
    assert all(np.array_equal(a, b) for a, b in zip(found, expected, strict=True))


@settings(max_examples=200, deadline=None)
@given(parts(smallest=1), st.data())
def test_exclusive_totals_land_on_their_frames(inclusive, data):
    """Exclusive samples are drawn from the inclusive frames, as every innermost frame is on
    its stack: dense and sparse frame ids alike."""
    frames = sorted({i for ids, _ in inclusive for i in ids})
    exclusive = []
    if frames:
        ids = data.draw(st.lists(st.sampled_from(frames), max_size=30))
        exclusive.append(
            (ids, data.draw(st.lists(st.integers(1, 9), min_size=len(ids)))[: len(ids)])
        )
    found, inner, own = add_totals(arrays(inclusive), arrays(exclusive))
    assert as_dict(found, inner) == summed(inclusive)
    expected_own = summed(exclusive)
    assert {f: n for f, n in as_dict(found, own).items() if n} == expected_own


def test_roll_up_counts_a_recursive_function_once_and_skips_the_empty_stack():
    table = StackTable()
    a, b = Frame("a", "m.py", 1), Frame("b", "m.py", 5)
    recursive = table.intern([a, b, a])  # a → b → a: a inclusive once, exclusive once
    plain = table.intern([a, b])
    counts = {recursive: 3, plain: 2, EMPTY_STACK: 4}
    inner, own = roll_up(ints(counts), ints(counts.values()), table)
    frames, inclusive, exclusive = add_totals([inner], [own])
    expected_inclusive, expected_exclusive = table.function_totals(counts)
    assert as_dict(frames, inclusive) == expected_inclusive == {0: 5, 1: 5}
    assert {f: n for f, n in as_dict(frames, exclusive).items() if n} == expected_exclusive
    assert expected_exclusive == {0: 3, 1: 2}


@given(st.lists(st.integers(0, 5), max_size=40), st.integers(1, 6))
def test_top_positions_rank_by_count_then_smaller_id(numbers, top):
    ids = list(range(100, 100 + len(numbers)))[::-1]  # ids not in position order
    chosen = top_positions(ints(ids), ints(numbers), top).tolist()
    expected = sorted(
        (i for i, n in enumerate(numbers) if n > 0), key=lambda i: (-numbers[i], ids[i])
    )[:top]
    assert chosen == expected
