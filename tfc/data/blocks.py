"""Blocks: how pipelines move elements, many at a time, as whole NumPy arrays.

A block is a list of arrays, one per component of the element structure, all with the same
leading dimension n: rows 0..n-1 are n consecutive elements. Every element of one block has
the same shapes; a stream whose element shapes change (a remainder batch, a map with
data-dependent shapes) starts a new block. Arrays are C-contiguous, so a row is a buffer
that compiled code can read in place.
"""

from __future__ import annotations

import numpy as np

from tfc.ir import errors
from tfc.ir.tensor_shape import shape_str

Block = list  # list[np.ndarray]: one array per component, equal leading dimensions


def block_len(block: Block) -> int:
    return block[0].shape[0]


def element_shapes(block: Block) -> tuple:
    """The shape of one element of `block`, per component (the key blocks are grouped by)."""
    return tuple(a.shape[1:] for a in block)


def slice_rows(block: Block, start: int, stop: int | None = None) -> Block:
    return [a[start:stop] for a in block]


def concat_rows(blocks: list[Block], what: str = "batch") -> Block:
    """One block holding the rows of `blocks` in order; elements must agree in shape."""
    if len(blocks) == 1:
        return blocks[0]
    first = element_shapes(blocks[0])
    seen = block_len(blocks[0])
    for block in blocks[1:]:
        shapes = element_shapes(block)
        if shapes != first:
            i = next(k for k, (a, b) in enumerate(zip(first, shapes)) if a != b)
            raise errors.InvalidArgumentError(
                None,
                None,
                f"Cannot {what} tensors with different shapes in component {i}. First element "
                f"had shape {shape_str(first[i])} and element {seen} had shape "
                f"{shape_str(shapes[i])}.",
            )
        seen += block_len(block)
    return [np.concatenate(arrays) for arrays in zip(*blocks)]


def take_rows(blocks: list[Block], index: np.ndarray) -> list[Block]:
    """Rows `index` (into the concatenation of `blocks`) as blocks, in the order of `index`.

    When all rows share their shapes this is one gather; otherwise each maximal run of
    equally shaped rows becomes its own block.
    """
    if len(index) == 0:
        return []
    keys = [element_shapes(b) for b in blocks]
    if all(k == keys[0] for k in keys):
        rows = concat_rows(blocks)
        return [[a[index] for a in rows]]
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    # where row r of the concatenation lives in the concatenation of its own shape group
    group_of_row = np.concatenate(
        [np.full(block_len(b), list(groups).index(k)) for b, k in zip(blocks, keys)]
    )
    pos_in_group = np.empty(len(group_of_row), dtype=np.int64)
    merged = []
    for g, members in enumerate(groups.values()):
        rows = np.flatnonzero(group_of_row == g)
        pos_in_group[rows] = np.arange(len(rows))
        merged.append(concat_rows([blocks[i] for i in members]))
    group = group_of_row[index]
    starts = np.flatnonzero(np.diff(group, prepend=-1))
    stops = np.append(starts[1:], len(index))
    return [[a[pos_in_group[index[s:e]]] for a in merged[group[s]]] for s, e in zip(starts, stops)]


def group_rows(rows: list[list[np.ndarray]]) -> list[Block]:
    """Blocks from single elements: consecutive elements of equal shapes are stacked."""
    blocks: list[Block] = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or [a.shape for a in rows[i]] != [a.shape for a in rows[start]]:
            blocks.append([np.stack(arrays) for arrays in zip(*rows[start:i])])
            start = i
    return blocks
