"""Tuples an unpacking concatenates: what each one holds.

``ctext, cnum, ntext, nnum = curr + next`` says ``curr`` and ``next`` are pairs — a text and a
number each — though neither is unpacked on its own. Usage analysis (:mod:`.usage`) types a
parameter unpacked this way like one unpacked alone (``a, b = x``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping


def share_of_concatenation(node: ast.Name, parents: Mapping[int, ast.AST]) -> ast.Tuple | None:
    """The names ``node`` unpacks into when it is one of the tuples an unpacking concatenates
    (``ctext, cnum, ntext, nnum = curr + next``: ``curr`` is ``ctext, cnum``), each operand a
    plain name and the names shared evenly; None otherwise."""
    top: ast.AST = node
    while isinstance(parents.get(id(top)), ast.BinOp):
        top = parents[id(top)]
    assign = parents.get(id(top))
    if top is node or not isinstance(assign, ast.Assign) or assign.value is not top:
        return None
    operands: list[ast.expr] = []
    pending: list[ast.expr] = [assign.value]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.BinOp) and isinstance(current.op, ast.Add):
            pending += [current.right, current.left]
        else:
            operands.append(current)
    target = assign.targets[0] if len(assign.targets) == 1 else None
    if (
        not isinstance(target, ast.Tuple)
        or not all(isinstance(operand, ast.Name) for operand in operands)
        or len(target.elts) % len(operands)
    ):
        return None
    width = len(target.elts) // len(operands)
    index = next(i for i, operand in enumerate(operands) if operand is node)
    return ast.Tuple(elts=target.elts[index * width : (index + 1) * width], ctx=ast.Store())
