"""A time tree stored in its recording file, and read back node by node.

Nodes go to ``tree_nodes`` with their kept counts and function totals packed as little-endian
int64 blobs; a reader (what ``apiprof window`` queries) reads nodes without those blobs and
loads them only for the nodes a query merges, and reads leaf samples by their ``seq`` range.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from apiprof.tracing.counts import Counts, FunctionTotals, IntArray
from apiprof.tracing.stacks import StackTable
from apiprof.tracing.timetree import Node, TreeShape, build_tree, int_array

INSERT_ROWS = 20_000
"""Nodes inserted per statement while a tree is stored."""


def pack_arrays(arrays: Sequence[IntArray]) -> bytes:
    """Equal-length int64 arrays one after the other, little-endian."""
    import numpy as np

    return np.concatenate(arrays).astype("<i8").tobytes()


def unpack_arrays(blob: bytes, parts: int) -> list[IntArray]:
    """The arrays of :func:`pack_arrays` (views of the blob: no copy)."""
    import numpy as np

    values = np.frombuffer(blob, dtype="<i8").astype(np.int64, copy=False)
    return np.split(values, parts)


def store_tree(
    conn: sqlite3.Connection,
    times: Sequence[int],
    stacks: Sequence[int],
    table: StackTable,
    end: int,
    shape: TreeShape,
) -> StoredTree:
    """Build a tree over the samples and store it (replacing one of the same shape)."""
    key = (shape.leaf_size, shape.fanout, shape.keep_percent)
    same_shape = "leaf_size = ? AND fanout = ? AND keep_percent = ?"
    rows: list[tuple[Any, ...]] = []

    def insert() -> None:
        conn.executemany("INSERT INTO tree_nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        rows.clear()

    with conn:
        conn.execute(
            f"DELETE FROM tree_nodes WHERE tree IN (SELECT id FROM trees WHERE {same_shape})", key
        )
        conn.execute(f"DELETE FROM trees WHERE {same_shape}", key)
        tree_id = conn.execute(
            "INSERT INTO trees (leaf_size, fanout, keep_percent, samples, end_ns)"
            " VALUES (?, ?, ?, ?, ?)",
            (*key, len(times), end),
        ).lastrowid
        assert tree_id is not None

        def emit(node: Node) -> None:
            kept = None if node.kept is None else pack_arrays(node.kept)
            functions = None if node.functions is None else pack_arrays(node.functions)
            rows.append(
                (
                    tree_id,
                    *(node.id, node.parent, node.start, node.end, node.first, node.stop),
                    kept,
                    functions,
                )
            )
            if len(rows) >= INSERT_ROWS:
                insert()

        build_tree(times, stacks, shape, emit, end=end, table=table)
        insert()
    return StoredTree(conn, tree_id, shape, end)


class StoredTree:
    """A time tree read node by node from its recording (what ``apiprof window`` queries)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        tree_id: int,
        shape: TreeShape,
        end_ns: int,
        *,
        functions: bool = True,
    ) -> None:
        self.conn, self.id, self.shape, self.end_ns = conn, tree_id, shape, end_ns
        # a format 1 file has no function totals (read-only, so it was not upgraded)
        self._contents = "kept, " + ("functions" if functions else "NULL")

    # nodes are read without their kept counts and totals: only merged nodes need those
    _COLUMNS = "id, parent, start_ns, end_ns, first_seq, stop_seq, kept IS NOT NULL"

    @staticmethod
    def _node(row: tuple[Any, ...]) -> Node:
        node_id, parent, start, end, first, stop, inner = row
        return Node(node_id, parent, start, end, first, stop, None, inner=bool(inner))

    def contents(self, node: Node) -> tuple[Counts, FunctionTotals | None]:
        kept, functions = self.conn.execute(
            f"SELECT {self._contents} FROM tree_nodes WHERE tree = ? AND id = ?",
            (self.id, node.id),
        ).fetchone()
        stacks, counts = unpack_arrays(kept, 2)
        if functions is None:
            return (stacks, counts), None
        frames, inclusive, exclusive = unpack_arrays(functions, 3)
        return (stacks, counts), (frames, inclusive, exclusive)

    def root(self) -> Node:
        row = self.conn.execute(
            f"SELECT {self._COLUMNS} FROM tree_nodes WHERE tree = ? AND id = 0", (self.id,)
        ).fetchone()
        return self._node(row)

    def children(self, node: Node) -> list[Node]:
        rows = self.conn.execute(
            f"SELECT {self._COLUMNS} FROM tree_nodes WHERE tree = ? AND parent = ? ORDER BY start_ns",
            (self.id, node.id),
        )
        return [self._node(row) for row in rows]

    def stack_index(self) -> None:
        return None  # knowing it would cost a pass over every sample

    def leaf_samples(self, node: Node) -> tuple[Sequence[int], Sequence[int]]:
        times, stacks = int_array(), int_array()
        for t, stack in self.conn.execute(
            "SELECT t_ns, stack FROM samples WHERE seq >= ? AND seq < ? ORDER BY seq",
            (node.first, node.stop),
        ):
            times.append(t)
            stacks.append(stack)
        return times, stacks
