"""Array ops that join and part tensors: ConcatV2, Pack/Unpack, Split/SplitV and Tile."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import Dimension
from tfc.ops.array_common import (
    INDEX_DTYPES,
    check_rank,
    contiguous,
    index_tensor,
    int_list,
    merge_or_raise,
    min_rank_for_axis,
    per_dim_argument,
    strided_copy,
)
from tfc.ops.array_gather import gather
from tfc.ops.array_shape import identity, rank, reshape, shape, transpose
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.elementwise import convert_operands
from tfc.ops.flops import no_flops
from tfc.ops.grad_ops import reduce_sum_over, reshape_to
from tfc.ops.kernels import Operand, contiguous_strides
from tfc.ops.math import floormod
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, constant_value, register


def _check_values_dtypes(ctx: OpContext, n: int) -> None:
    for i in range(1, n):
        if ctx.in_dtypes[i] != ctx.in_dtypes[0]:
            raise TypeError(
                f"Input 'values' of '{ctx.type}' Op has type {ctx.in_dtypes[i].name} at index "
                f"{i} that does not match type {ctx.in_dtypes[0].name} at index 0."
            )


# -- ConcatV2 ------------------------------------------------------------------------------------
def _concat_infer(ctx: OpContext) -> list:
    n = len(ctx.in_dtypes) - 1
    _check_values_dtypes(ctx, n)
    check_dtype(ctx, n, INDEX_DTYPES, "axis")
    check_rank(ctx, n, 0)
    dtype, shapes = ctx.in_dtypes[0], [s for s in ctx.in_shapes[:n] if s is not None]
    if not shapes:
        return [(dtype, None)]
    r = len(shapes[0])
    if r == 0:
        raise ctx.error("Can't concatenate scalars (use tf.stack instead)")
    for s in shapes:
        if len(s) != r:
            raise ctx.error(f"Shape must be rank {r} but is rank {len(s)}")
    axis = ctx.const(n)
    if axis is None:
        return [(dtype, (None,) * r)]
    axis = int(axis)
    if r < min_rank_for_axis(axis):
        raise ctx.error(f"Shape must be at least rank {min_rank_for_axis(axis)} but is rank {r}")
    a = axis % r
    before, after = shapes[0][:a], shapes[0][a + 1 :]
    for s in shapes[1:]:
        before = merge_or_raise(ctx, before, s[:a])
        after = merge_or_raise(ctx, after, s[a + 1 :])
    sizes = [s[a] for s in ctx.in_shapes[:n] if s is not None]
    total = None if None in sizes or len(sizes) < n else sum(sizes)
    return [(dtype, tuple(before) + (total,) + tuple(after))]


def _concat_lower(ctx: OpContext) -> list:
    n = len(ctx.in_dtypes) - 1
    out_shape, dtype = ctx.out_shapes[0], ctx.out_dtypes[0]
    a = int(ctx.require_const(n, "axis")) % len(out_shape)
    pre, post = math.prod(out_shape[:a]), math.prod(out_shape[a + 1 :])
    kernels, offset = [], 0
    for i, in_shape in enumerate(ctx.in_shapes[:n]):
        width = in_shape[a] * post
        out = Operand("out0", dtype, (out_shape[a] * post, 1), offset)
        kernels += strided_copy((pre, width), out, contiguous(f"in{i}", dtype, (pre, width)))
        offset += width
    return kernels


def _size_along(x: Tensor, a: int) -> Any:
    """x's size along axis a: an int when static, else shape(x)[a]."""
    dims = x._shape_tuple
    return dims[a] if dims is not None and dims[a] is not None else shape(x)[a]


def _concat_grad(op, dy):
    """dy cut into the inputs' sizes along the axis."""
    *values, axis = op.inputs
    a = constant_value(op.graph, (axis.op.name, axis.value_index))
    if a is not None and values[0]._shape_tuple is not None:
        a = int(a) % len(values[0]._shape_tuple)
        sizes = [_size_along(v, a) for v in values]
    else:  # the axis is known only when compiling
        wrapped = floormod(axis, rank(values[0]))
        sizes = [gather(shape(v), wrapped) for v in values]
    pieces = apply_op("SplitV", [dy, stack(sizes), axis], {"num_split": len(values)}).outputs
    return [reshape_to(p, v) for p, v in zip(pieces, values)] + [None]


register(
    OpDef(
        "ConcatV2",
        infer=_concat_infer,
        reference=lambda ctx, *xs: np.concatenate(xs[:-1], axis=int(xs[-1])),
        lower=_concat_lower,
        flops=no_flops,
        const_inputs=(-1,),  # the axis follows the N values
        grad=_concat_grad,
    )
)


def concat(values: Any, axis: Any, name: str = "concat") -> Tensor:
    """`tf.concat`: tensors joined along an existing dimension `axis`."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    with name_scope(name, "concat", values) as scope:
        axis_t = convert_to_tensor(axis, dtype=_dt.int32, name="axis")
        if len(values) == 1:  # TF1 returns the one tensor itself, renamed
            return identity(values[0], name=scope)
        tensors = convert_operands(*values)
        attrs = {"N": len(tensors)}
        return apply_op("ConcatV2", [*tensors, axis_t], attrs, name=scope).outputs[0]


# -- Pack, Unpack --------------------------------------------------------------------------------
def _pack_infer(ctx: OpContext) -> list:
    n = len(ctx.in_dtypes)
    _check_values_dtypes(ctx, n)
    merged = ctx.in_shapes[-1]
    for i in range(n - 2, -1, -1):  # TF merges from the last shape backwards
        context = f"\n\tFrom merging shape {i} with other shapes."
        merged = merge_or_raise(ctx, ctx.in_shapes[i], merged, context)
    if merged is None:
        return [(ctx.in_dtypes[0], None)]
    axis, r = int(ctx.attrs["axis"]), len(merged) + 1
    if not -r <= axis < r:
        raise ctx.error(f"Invalid axis: {axis}; must be in [{-r},{r})")
    a = axis % r
    return [(ctx.in_dtypes[0], tuple(merged[:a]) + (n,) + tuple(merged[a:]))]


def _pack_lower(ctx: OpContext) -> list:
    out_shape, dtype = ctx.out_shapes[0], ctx.out_dtypes[0]
    n, a = len(ctx.in_dtypes), int(ctx.attrs["axis"]) % len(out_shape)
    pre, post = math.prod(out_shape[:a]), math.prod(out_shape[a + 1 :])
    kernels = []
    for i in range(n):
        out = Operand("out0", dtype, (n * post, 1), i * post)
        kernels += strided_copy((pre, post), out, contiguous(f"in{i}", dtype, (pre, post)))
    return kernels


register(
    OpDef(
        "Pack",
        infer=_pack_infer,
        reference=lambda ctx, *xs: np.stack(xs, axis=int(ctx.attrs["axis"])),
        lower=_pack_lower,
        flops=no_flops,
        grad=lambda op, dy: unstack(dy, len(op.inputs), op.get_attr("axis")),
    )
)


def stack(values: Any, axis: int = 0, name: str = "stack") -> Tensor:
    """`tf.stack`: tensors of one shape joined along a new dimension `axis`."""
    values = list(values)
    if axis == 0 and not any(is_tensor_like(v) for v in values):
        return constant(values, name=name)  # TF1: a list of Python values is one constant
    tensors = convert_operands(*values)
    value_shape = tensors[0]._shape_tuple
    if value_shape is not None and not -len(value_shape) - 1 <= axis <= len(value_shape):
        r = len(value_shape) + 1
        raise ValueError(f"axis = {axis} not in [{-r}, {r})")
    attrs = {"axis": int(axis), "N": len(tensors)}
    return apply_op("Pack", tensors, attrs, name=name or "stack").outputs[0]


def _unpack_infer(ctx: OpContext) -> list:
    dtype, in_shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    num, axis = int(ctx.attrs["num"]), int(ctx.attrs["axis"])
    if in_shape is None:
        return [(dtype, None)] * num
    r = len(in_shape)
    if not -r <= axis < r:
        raise ctx.error(f"Invalid axis: {axis}; must be in [{-r},{r})")
    a = axis % r
    if in_shape[a] is not None and in_shape[a] != num:
        raise ctx.error(f"Dimension must be {num} but is {in_shape[a]}")
    return [(dtype, tuple(in_shape[:a]) + tuple(in_shape[a + 1 :]))] * num


def _unpack_lower(ctx: OpContext) -> list:
    in_shape, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    a = int(ctx.attrs["axis"]) % len(in_shape)
    n, pre, post = in_shape[a], math.prod(in_shape[:a]), math.prod(in_shape[a + 1 :])
    kernels = []
    for i in range(n):
        src = Operand("in0", dtype, (n * post, 1), i * post)
        kernels += strided_copy((pre, post), contiguous(f"out{i}", dtype, (pre, post)), src)
    return kernels


def _unpack_reference(ctx: OpContext, x: np.ndarray) -> list:
    a = int(ctx.attrs["axis"]) % x.ndim
    return [np.array(np.take(x, i, axis=a)) for i in range(x.shape[a])]


register(
    OpDef(
        "Unpack",
        infer=_unpack_infer,
        reference=_unpack_reference,
        lower=_unpack_lower,
        flops=no_flops,
        grad=lambda op, *dys: [stack(list(dys), op.get_attr("axis"))],
    )
)


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack") -> list:
    """`tf.unstack`: the slices of `value` along `axis`, as a list of tensors."""
    x = convert_to_tensor(value)
    if num is None:
        dims = x._shape_tuple
        if dims is not None:
            if not -len(dims) <= axis < len(dims):
                raise ValueError(f"axis = {axis} not in [{-len(dims)}, {len(dims)})")
            num = dims[axis]
        if num is None:
            raise ValueError(f"Cannot infer num from shape {x.shape}")
    attrs = {"num": int(num), "axis": int(axis)}
    return apply_op("Unpack", [x], attrs, name=name or "unstack").outputs


# -- Split, SplitV -------------------------------------------------------------------------------
def _split_axis(ctx: OpContext, axis: Any, r: int) -> int:
    if axis.size != 1:
        raise ctx.error(f"Input must be scalar but has rank {axis.ndim}")
    axis = int(axis)
    if not -r <= axis < r:
        raise ctx.error(
            f"Dimension size, given by scalar input {axis} must be in range [{-r}, {r})"
        )
    return axis % r


def _split_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, INDEX_DTYPES, "split_dim")
    num, dtype, in_shape = int(ctx.attrs["num_split"]), ctx.in_dtypes[1], ctx.in_shapes[1]
    if num < 1:
        raise ctx.error(f"Number of ways to split should be > 0, but got {num}")
    axis = ctx.const(0)
    if in_shape is None or axis is None:
        return [(dtype, None if in_shape is None else (None,) * len(in_shape))] * num
    a = _split_axis(ctx, axis, len(in_shape))
    d = in_shape[a]
    if d is not None and d % num:
        raise ctx.error(f"Dimension size must be evenly divisible by {num} but is {d}")
    piece = None if d is None else d // num
    return [(dtype, tuple(in_shape[:a]) + (piece,) + tuple(in_shape[a + 1 :]))] * num


def _split_sizes(ctx: OpContext, sizes: list[int], d: int | None) -> list:
    """SplitV's sizes with the one -1 resolved (None while the axis length is unknown)."""
    if sizes.count(-1) > 1:
        raise ctx.error("size_splits can only have one -1")
    for i, s in enumerate(sizes):
        if s < -1:
            raise ctx.error(f"Split size at index {i} must be >= 0. Got: {s}")
    total = sum(s for s in sizes if s != -1)
    if d is None:
        return [None if s == -1 else s for s in sizes]
    if (total > d) if -1 in sizes else (total != d):
        joined = ",".join(map(str, sizes))
        raise ctx.error(f"can't split axis of size {d} into pieces of size [{joined}]")
    return [d - total if s == -1 else s for s in sizes]


def _split_v_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "size_splits")
    check_dtype(ctx, 2, INDEX_DTYPES, "split_dim")
    check_rank(ctx, 1, 1)
    num, dtype, in_shape = int(ctx.attrs["num_split"]), ctx.in_dtypes[0], ctx.in_shapes[0]
    n = ctx.in_shapes[1][0] if ctx.in_shapes[1] is not None else None
    if n is not None and n != num:
        raise ctx.error(f"Dimension must be {num} but is {n}")
    axis, sizes = ctx.const(2), ctx.const(1)
    if in_shape is None or axis is None:
        return [(dtype, None if in_shape is None else (None,) * len(in_shape))] * num
    a = _split_axis(ctx, axis, len(in_shape))
    pieces = [None] * num if sizes is None else _split_sizes(ctx, int_list(sizes), in_shape[a])
    return [(dtype, tuple(in_shape[:a]) + (p,) + tuple(in_shape[a + 1 :])) for p in pieces]


def _split_pieces(ctx: OpContext, in_shape: tuple, a: int, sizes: list) -> list:
    dtype = ctx.in_dtypes[0] if ctx.type == "SplitV" else ctx.in_dtypes[1]
    pre, post = math.prod(in_shape[:a]), math.prod(in_shape[a + 1 :])
    kernels, offset = [], 0
    for i, s in enumerate(sizes):
        src = Operand(
            "in0" if ctx.type == "SplitV" else "in1", dtype, (in_shape[a] * post, 1), offset
        )
        kernels += strided_copy((pre, s * post), contiguous(f"out{i}", dtype, (pre, s * post)), src)
        offset += s * post
    return kernels


def _split_lower(ctx: OpContext) -> list:
    in_shape = ctx.in_shapes[1]
    a = int(ctx.require_const(0, "split_dim")) % len(in_shape)
    num = int(ctx.attrs["num_split"])
    return _split_pieces(ctx, in_shape, a, [in_shape[a] // num] * num)


def _split_v_lower(ctx: OpContext) -> list:
    in_shape = ctx.in_shapes[0]
    a = int(ctx.require_const(2, "split_dim")) % len(in_shape)
    return _split_pieces(ctx, in_shape, a, [s[a] for s in ctx.out_shapes])


def _split_reference(x: np.ndarray, axis: Any, sizes: list[int]) -> list:
    bounds = np.cumsum(sizes)[:-1]
    return [np.array(p) for p in np.split(x, bounds, axis=int(axis) % x.ndim)]


register(
    OpDef(
        "Split",
        infer=_split_infer,
        reference=lambda ctx, axis, x: _split_reference(
            x, axis, [s[int(axis) % x.ndim] for s in ctx.out_shapes]
        ),
        lower=_split_lower,
        flops=no_flops,
        const_inputs=(0,),
        grad=lambda op, *dys: [None, concat(list(dys), op.inputs[0])],
    )
)
register(
    OpDef(
        "SplitV",
        infer=_split_v_infer,
        reference=lambda ctx, x, sizes, axis: _split_reference(
            x, axis, [s[int(axis) % x.ndim] for s in ctx.out_shapes]
        ),
        lower=_split_v_lower,
        flops=no_flops,
        const_inputs=(1, 2),
        grad=lambda op, *dys: [concat(list(dys), op.inputs[2]), None, None],
    )
)


def split(
    value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None, name: str = "split"
) -> list:
    """`tf.split`: `num_or_size_splits` equal pieces, or pieces of the listed sizes (one may
    be -1: the rest) along `axis`; returns a list of tensors."""
    with name_scope(name, "split", [value]) as scope:
        x = convert_to_tensor(value)
        axis_t = index_tensor(axis, "split_dim")
        if isinstance(num_or_size_splits, (int, np.integer, Dimension)):
            attrs = {"num_split": int(num_or_size_splits)}
            return apply_op("Split", [axis_t, x], attrs, name=scope).outputs
        sizes = index_tensor(num_or_size_splits, "size_splits")
        if num is None:
            dims = sizes._shape_tuple
            num = dims[0] if dims else None
            if num is None:
                raise ValueError(f"Cannot infer num from shape {num_or_size_splits}")
        attrs = {"num_split": int(num)}
        return apply_op("SplitV", [x, sizes, axis_t], attrs, name=scope).outputs


# -- Tile ----------------------------------------------------------------------------------------
def _tile_infer(ctx: OpContext) -> list:
    r = per_dim_argument(ctx, 1, "multiples")
    dtype, in_shape, multiples = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.const(1)
    if r is None:
        return [(dtype, None)]
    if multiples is None:
        return [(dtype, (None,) * r)]
    dims = in_shape if in_shape is not None else (None,) * r
    out = []
    for k, (d, m) in enumerate(zip(dims, int_list(multiples))):
        if m < 0:
            raise ctx.error(f"Expected multiples[{k}] >= 0, but got {m}")
        out.append(None if d is None else d * m)
    return [(dtype, tuple(out))]


def _tile_lower(ctx: OpContext) -> list:
    in_shape, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    multiples = int_list(ctx.require_const(1, "multiples"))
    # the output seen as [m0, d0, m1, d1, ...]: the input is read with stride 0 on each m
    loop = [x for m, d in zip(multiples, in_shape) for x in (m, d)]
    in_strides = contiguous_strides(in_shape)
    src = Operand("in0", dtype, tuple(x for s in in_strides for x in (0, s)))
    return strided_copy(loop, contiguous("out0", dtype, loop), src)


def _tile_grad(op, dy):
    """dy seen as [m0, d0, m1, d1, ...], summed over the m's."""
    x, multiples = op.inputs
    x_shape = x._shape_tuple
    m = constant_value(op.graph, (multiples.op.name, multiples.value_index))
    r = len(x_shape) if x_shape is not None else multiples._shape_tuple[0]
    if r is None:
        raise ValueError(f"The gradient of '{op.name}' (Tile) needs the rank of its input")
    if m is not None and x_shape is not None and None not in x_shape:
        split = constant(np.array([v for p in zip(int_list(m), x_shape) for v in p], np.int32))
    else:  # TF's reshape(transpose(stack([multiples, shape(x)])), [-1])
        pairs = stack([multiples, shape(x, out_type=multiples.dtype)])
        split = reshape(transpose(pairs, [1, 0]), [-1])
    summed = reduce_sum_over(apply_op("Reshape", [dy, split]).outputs[0], list(range(0, 2 * r, 2)))
    return [reshape_to(summed, x), None]


register(
    OpDef(
        "Tile",
        infer=_tile_infer,
        reference=lambda ctx, x, multiples: np.tile(x, int_list(multiples)).reshape(
            ctx.out_shapes[0]
        ),
        lower=_tile_lower,
        flops=no_flops,
        const_inputs=(1,),
        grad=_tile_grad,
    )
)


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.tile`: `input` repeated `multiples[k]` times along each dimension k."""
    with name_scope(name, "Tile", [input]) as scope:
        x = convert_to_tensor(input)
        return apply_op("Tile", [x, index_tensor(multiples, "multiples")], name=scope).outputs[0]
