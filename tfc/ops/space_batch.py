"""Blocks of pixels moved between the spatial, depth and batch dimensions: space_to_depth,
depth_to_space, space_to_batch(_nd), batch_to_space(_nd), required_space_to_batch_paddings.

Each is TF's definition composed from Reshape, Transpose, Pad and Slice (one copy for the
transpose, as TF's kernels make), so their gradients are those ops' own. Block sizes, paddings
and crops must be known when the graph is built, and so must every dimension but the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import tfc.ops.array as _array
from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_common import pick_argument
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.conv_args import check_data_format
from tfc.ops.registry import constant_value

__all__ = [
    "space_to_depth",
    "depth_to_space",
    "space_to_batch_nd",
    "batch_to_space_nd",
    "space_to_batch",
    "batch_to_space",
    "required_space_to_batch_paddings",
]


def static_value(value: Any, what: str) -> np.ndarray:
    """An int argument's value, which tfc needs when the graph is built."""
    if is_tensor_like(value):
        t = convert_to_tensor(value)
        known = constant_value(t.graph, (t.op.name, t.value_index))
        if known is None:
            raise ValueError(
                f"{what} must be known when the graph is built (tfc compiles ahead of time); "
                f"{t.name} is computed from run-time values"
            )
        return np.asarray(known, dtype=np.int64)
    return np.asarray(value, dtype=np.int64)


def known_dims(x: Tensor, what: str, rank: int | None = None) -> list:
    """x's static shape: every dimension but the batch (None: -1 in a reshape) must be known."""
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None:
        raise ValueError(f"{what} needs the rank of its input {x.name}, which is unknown")
    if rank is not None and len(dims) != rank:
        raise ValueError(f"{what}: input must be {rank}-D, but is {len(dims)}-D ({x.name})")
    if None in dims[1:]:
        raise ValueError(
            f"{what} needs every dimension of {x.name} but the batch known when the graph is "
            f"built; its shape is {x.shape}"
        )
    return dims


def _batch(dims: Sequence) -> int:
    return -1 if dims[0] is None else dims[0]


# -- space_to_depth, depth_to_space ---------------------------------------------------------------
def _block_size(block_size: Any) -> int:
    b = int(block_size)
    if b < 2:
        raise ValueError(f"Value for attr 'block_size' of {b} must be at least minimum 2")
    return b


def space_to_depth(
    input: Any,  # noqa: A002 (TF's argument name)
    block_size: int,
    name: str | None = None,
    data_format: str = "NHWC",
) -> Tensor:
    """`tf.space_to_depth`: each block_size x block_size block of pixels becomes one pixel of
    block_size^2 times the channels, in the block's row-major order:
    out[n, i, j, (a*b + c)*C + k] = input[n, i*b + a, j*b + c, k]."""
    b = _block_size(block_size)
    fmt = check_data_format(data_format, ("NHWC", "NCHW"))
    with name_scope(name, "SpaceToDepth", [input]):
        x = convert_to_tensor(input, name="input")
        n, h, w, c = _nhwc_dims(known_dims(x, "space_to_depth", 4), fmt)
        if h % b or w % b:
            raise ValueError(
                f"Image height {h} and width {w} should be divisible by block_size: {b}"
            )
        x = _to_nhwc(x, fmt)
        blocks = _array.reshape(x, [_batch([n]), h // b, b, w // b, b, c])
        moved = _array.transpose(blocks, [0, 1, 3, 2, 4, 5])
        return _from_nhwc(_array.reshape(moved, [_batch([n]), h // b, w // b, b * b * c]), fmt)


def depth_to_space(
    input: Any,  # noqa: A002
    block_size: int,
    name: str | None = None,
    data_format: str = "NHWC",
) -> Tensor:
    """`tf.depth_to_space`: the inverse of space_to_depth: each pixel's channels become a
    block_size x block_size block of pixels of C / block_size^2 channels."""
    b = _block_size(block_size)
    fmt = check_data_format(data_format, ("NHWC", "NCHW"))
    with name_scope(name, "DepthToSpace", [input]):
        x = convert_to_tensor(input, name="input")
        n, h, w, c = _nhwc_dims(known_dims(x, "depth_to_space", 4), fmt)
        if c % (b * b):
            raise ValueError(f"Dimension size must be evenly divisible by {b * b} but is {c}")
        x = _to_nhwc(x, fmt)
        blocks = _array.reshape(x, [_batch([n]), h, w, b, b, c // (b * b)])
        moved = _array.transpose(blocks, [0, 1, 3, 2, 4, 5])
        return _from_nhwc(_array.reshape(moved, [_batch([n]), h * b, w * b, c // (b * b)]), fmt)


def _nhwc_dims(dims: list, fmt: str) -> list:
    return dims if fmt == "NHWC" else [dims[0], dims[2], dims[3], dims[1]]


def _to_nhwc(x: Tensor, fmt: str) -> Tensor:
    return x if fmt == "NHWC" else _array.transpose(x, [0, 2, 3, 1])


def _from_nhwc(x: Tensor, fmt: str) -> Tensor:
    return x if fmt == "NHWC" else _array.transpose(x, [0, 3, 1, 2])


# -- space_to_batch_nd, batch_to_space_nd ---------------------------------------------------------
def _block_arguments(block_shape: Any, pairs: Any, what: str) -> tuple[list, np.ndarray]:
    block = [int(v) for v in static_value(block_shape, "block_shape").reshape(-1)]
    values = static_value(pairs, what)
    if values.shape != (len(block), 2):
        raise ValueError(
            f"{what} should have shape [{len(block)}, 2] instead of {list(values.shape)}"
        )
    if any(v < 1 for v in block):
        raise ValueError(f"All values in block_shape must be positive, got {block}")
    if (values < 0).any():
        raise ValueError(f"All values in {what} must be non-negative, got {values.tolist()}")
    return block, values


def space_to_batch_nd(
    input: Any,  # noqa: A002
    block_shape: Any,
    paddings: Any,
    name: str | None = None,
) -> Tensor:
    """`tf.space_to_batch_nd`: dims 1..M (M = len(block_shape)) zero-padded by `paddings`, then
    cut into blocks: each offset within a block becomes a batch of its own,
    out[(o_1*...*b_M + ...)*N + n, i_1, ..., i_M, ...] = padded[n, i_1*b_1 + o_1, ..., ...]."""
    with name_scope(name, "SpaceToBatchND", [input]):
        x = convert_to_tensor(input, name="input")
        block, pads = _block_arguments(block_shape, paddings, "paddings")
        m = len(block)
        dims = known_dims(x, "space_to_batch_nd")
        if len(dims) < m + 1:
            raise ValueError(f"input rank should be >= {m + 1} instead of {len(dims)}")
        padded = [d + int(p.sum()) for d, p in zip(dims[1 : m + 1], pads)]
        for k, (size, b) in enumerate(zip(padded, block)):
            if size % b:
                raise ValueError(
                    f"padded_shape[{k}]={size} is not divisible by block_shape[{k}]={b}"
                )
        rest = dims[m + 1 :]
        if pads.any():
            zeros = np.zeros((len(dims) - m - 1, 2), np.int64)
            x = _array.pad(x, np.concatenate([[[0, 0]], pads, zeros]).tolist())
        split = [_batch(dims)]
        for size, b in zip(padded, block):
            split += [size // b, b]
        blocks = _array.reshape(x, split + rest)
        perm = [2 * k + 2 for k in range(m)] + [0] + [2 * k + 1 for k in range(m)]
        perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
        moved = _array.transpose(blocks, perm)
        batch = -1 if dims[0] is None else dims[0] * int(np.prod(block))
        return _array.reshape(moved, [batch] + [s // b for s, b in zip(padded, block)] + rest)


def batch_to_space_nd(
    input: Any,  # noqa: A002
    block_shape: Any,
    crops: Any,
    name: str | None = None,
) -> Tensor:
    """`tf.batch_to_space_nd`: the inverse of space_to_batch_nd: the batch's blocks put back
    into dims 1..M, then `crops` cut from their starts and ends."""
    with name_scope(name, "BatchToSpaceND", [input]):
        x = convert_to_tensor(input, name="input")
        block, cuts = _block_arguments(block_shape, crops, "crops")
        m = len(block)
        dims = known_dims(x, "batch_to_space_nd")
        if len(dims) < m + 1:
            raise ValueError(f"input rank should be >= {m + 1} instead of {len(dims)}")
        count = int(np.prod(block))
        if dims[0] is not None and dims[0] % count:
            raise ValueError(f"Dimension size must be evenly divisible by {count} but is {dims[0]}")
        spatial, rest = dims[1 : m + 1], dims[m + 1 :]
        batch = -1 if dims[0] is None else dims[0] // count
        blocks = _array.reshape(x, block + [batch] + spatial + rest)
        perm = [m]
        for k in range(m):
            perm += [m + 1 + k, k]
        perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
        moved = _array.transpose(blocks, perm)
        full = [s * b for s, b in zip(spatial, block)]
        joined = _array.reshape(moved, [batch] + full + rest)
        if not cuts.any():
            return joined
        for k, (size, (lo, hi)) in enumerate(zip(full, cuts)):
            if lo + hi > size:
                raise ValueError(
                    f"crops[{k}] = [{lo}, {hi}] is larger than the block-expanded dim {size}"
                )
        begin = [0] + [int(lo) for lo, _ in cuts] + [0] * len(rest)
        size = [-1] + [s - int(lo + hi) for s, (lo, hi) in zip(full, cuts)] + [-1] * len(rest)
        return _array.slice(joined, begin, size)


def _square_block(block_size: Any, block_shape: Any, op: str) -> list:
    value = pick_argument(block_shape, "block_shape", block_size, "block_size")
    if value is None:
        raise ValueError(f"{op} needs block_size")
    b = int(value)
    if b < 2:
        raise ValueError(f"Attr block_size has value {b} must be greater than one")
    return [b, b]


def space_to_batch(
    input: Any,  # noqa: A002
    paddings: Any,
    block_size: Any = None,
    name: str | None = None,
    block_shape: Any = None,
) -> Tensor:
    """`tf.space_to_batch`: space_to_batch_nd of a 4-D NHWC tensor with a square block."""
    block = _square_block(block_size, block_shape, "space_to_batch")
    with name_scope(name, "SpaceToBatch", [input]):
        return space_to_batch_nd(input, block, paddings)


def batch_to_space(
    input: Any,  # noqa: A002
    crops: Any,
    block_size: Any = None,
    name: str | None = None,
    block_shape: Any = None,
) -> Tensor:
    """`tf.batch_to_space`: batch_to_space_nd of a 4-D NHWC tensor with a square block."""
    block = _square_block(block_size, block_shape, "batch_to_space")
    with name_scope(name, "BatchToSpace", [input]):
        return batch_to_space_nd(input, block, crops)


def required_space_to_batch_paddings(
    input_shape: Any,
    block_shape: Any,
    base_paddings: Any = None,
    name: str | None = None,
) -> tuple[Tensor, Tensor]:
    """`tf.required_space_to_batch_paddings`: (paddings, crops) that make input_shape plus
    base_paddings divisible by block_shape: the extra padding goes at the end, and crops cut
    it off again after batch_to_space_nd."""
    shape = static_value(input_shape, "input_shape").reshape(-1)
    block = static_value(block_shape, "block_shape").reshape(-1)
    if shape.shape != block.shape:
        raise ValueError(
            f"input_shape and block_shape must have the same length, got {shape.shape[0]} and "
            f"{block.shape[0]}"
        )
    base = (
        np.zeros((block.shape[0], 2), np.int64)
        if base_paddings is None
        else static_value(base_paddings, "base_paddings").reshape(-1, 2)
    )
    full = shape + base[:, 0] + base[:, 1]
    extra = (block - full % block) % block
    paddings = np.stack([base[:, 0], base[:, 1] + extra], axis=1).astype(np.int32)
    crops = np.stack([np.zeros_like(extra), extra], axis=1).astype(np.int32)
    with name_scope(name, "required_space_to_batch_paddings", []):
        return constant(paddings, _dt.int32, name="paddings"), constant(
            crops, _dt.int32, name="crops"
        )
