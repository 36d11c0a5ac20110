"""Array ops that copy elements into a new arrangement: Transpose, concat, stack, split, Tile, Pad.

Each lowers to strided copies: Transpose (axes permuted), ConcatV2 and Pack (tensors joined),
Unpack and Split/SplitV (a tensor cut into pieces), Tile (repeated), and Pad, PadV2 and
MirrorPad (a border added; MirrorPadGrad, the op a mirror pad's gradient builds, follows it).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ir.tensor_shape import Dimension
from tfc.ops.argminmax import argmax
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
from tfc.ops.array_index import gather, one_hot
from tfc.ops.array_shape import identity, rank, reshape, shape, size
from tfc.ops.constant import constant, convert_to_tensor, is_tensor_like
from tfc.ops.elementwise import convert_operands
from tfc.ops.flops import no_flops, per_input_element
from tfc.ops.grad_ops import reduce_sum_over, reshape_to, shape_tensor
from tfc.ops.kernels import Operand, c_literal, contiguous_strides, loop_kernel
from tfc.ops.math import floormod
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    constant_value,
    register,
)


# -- Transpose -----------------------------------------------------------------------------------
def _transpose_infer(ctx: OpContext) -> list:
    r = per_dim_argument(ctx, 1, "perm")
    dtype, in_shape, perm = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.const(1)
    if r is None:
        return [(dtype, None)]
    if perm is None:
        return [(dtype, (None,) * r)]
    perm = int_list(perm)
    for p in perm:
        if not 0 <= p < r:
            raise ctx.error(f"perm dim {p} is out of range of input rank {r}")
    missing = sorted(set(range(r)) - set(perm))
    if missing:
        raise ctx.error(f"{missing[0]} is missing from {{{','.join(map(str, perm))}}}")
    dims = in_shape if in_shape is not None else (None,) * r
    return [(dtype, tuple(dims[p] for p in perm))]


def _transpose_lower(ctx: OpContext) -> list:
    in_shape, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    perm = int_list(ctx.require_const(1, "perm"))
    strides = contiguous_strides(in_shape)
    out_shape = ctx.out_shapes[0]
    src = Operand("in0", dtype, tuple(strides[p] for p in perm))
    return strided_copy(out_shape, contiguous("out0", dtype, out_shape), src)


def _transpose_grad(op, dy):
    perm = op.inputs[1]
    value = constant_value(op.graph, (perm.op.name, perm.value_index))
    if value is not None:
        inverse = index_tensor(np.argsort(value).astype(value.dtype), "perm")
    else:  # known when compiling: inverse[perm[i]] = i is the row of column j's one
        hot = one_hot(perm, size(perm), dtype=_dt.int32)
        inverse = argmax(hot, axis=0, output_type=perm.dtype)
    return [transpose(dy, inverse), None]


register(
    OpDef(
        "Transpose",
        dtypes=_dt.STORABLE,
        infer=_transpose_infer,
        reference=lambda ctx, x, perm: np.array(np.transpose(x, int_list(perm))),
        lower=_transpose_lower,
        flops=no_flops,
        const_inputs=(1,),
        grad=_transpose_grad,
    )
)


def transpose(a: Any, perm: Any = None, name: str = "transpose", conjugate: bool = False) -> Tensor:
    """`tf.transpose`: dimensions permuted by `perm` (reversed when perm is None)."""
    with name_scope(name, "transpose", [a]) as scope:
        x = convert_to_tensor(a)
        if perm is None:
            dims = x._shape_tuple
            if dims is None:
                raise ValueError(
                    f"tf.transpose of {x.name} with perm=None needs its rank, which is unknown; "
                    "pass perm explicitly"
                )
            perm = list(range(len(dims) - 1, -1, -1))
        return apply_op("Transpose", [x, index_tensor(perm, "perm")], name=scope).outputs[0]


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
        dtypes=_dt.STORABLE,
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
        dtypes=_dt.STORABLE,
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
        dtypes=_dt.STORABLE,
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
        dtypes=_dt.STORABLE,
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
        dtypes=_dt.STORABLE,
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
        dtypes=_dt.STORABLE,
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


# -- Pad, PadV2, MirrorPad -----------------------------------------------------------------------
# REFLECT mirrors without the edge element, so it needs one more element than SYMMETRIC
_EDGE = {"REFLECT": 1, "SYMMETRIC": 0}


def _pad_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "paddings")
    check_rank(ctx, 1, 2)
    dtype, in_shape, pshape = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.in_shapes[1]
    if pshape is not None and pshape[1] is not None and pshape[1] != 2:
        raise ctx.error(f"Dimension must be 2 but is {pshape[1]}")
    n = pshape[0] if pshape is not None else None
    if in_shape is not None and n is not None and n != len(in_shape):
        raise ctx.error(f"Shape must be rank {n} but is rank {len(in_shape)}")
    if ctx.type == "PadV2":
        check_rank(ctx, 2, 0)
        if ctx.in_dtypes[2] != dtype:
            raise TypeError(
                f"Input 'constant_values' of 'PadV2' Op has type {ctx.in_dtypes[2].name} that "
                f"does not match type {dtype.name} of argument 'input'."
            )
    r = len(in_shape) if in_shape is not None else n
    paddings = ctx.const(1)
    if r is None:
        return [(dtype, None)]
    if paddings is None:
        return [(dtype, (None,) * r)]
    dims = in_shape if in_shape is not None else (None,) * r
    edge = _EDGE.get(ctx.attrs.get("mode"))  # None: a constant border fits any size
    out = []
    for d, (before, after) in zip(dims, np.reshape(paddings, (-1, 2)).tolist()):
        if before < 0 or after < 0:
            raise ctx.error(f"Paddings must be non-negative: {before} {after}")
        if edge is not None and d is not None and max(before, after) > d - edge:
            raise ctx.error(
                f"paddings must be less than the dimension size: {before}, {after} not less "
                f"than {d}"
            )
        out.append(None if d is None else before + d + after)
    return [(dtype, tuple(out))]


def _pad_reference(ctx: OpContext, x: np.ndarray, paddings: Any, *value: Any) -> np.ndarray:
    pads = np.reshape(paddings, (-1, 2)).astype(np.int64)
    if x.ndim == 0:  # np.pad cannot take a scalar; there is nothing to pad
        return x.copy()
    if ctx.type == "MirrorPad":
        return np.pad(x, pads, mode=ctx.attrs["mode"].lower())
    fill = value[0] if value else np.zeros((), x.dtype)
    return np.pad(x, pads, mode="constant", constant_values=fill)


def _pad_lower(ctx: OpContext) -> list:
    in_shape, dtype = ctx.in_shapes[0], ctx.in_dtypes[0]
    out_shape = ctx.out_shapes[0]
    pads = np.reshape(ctx.require_const(1, "paddings"), (-1, 2)).tolist()
    out_strides = contiguous_strides(out_shape)
    interior = Operand(
        "out0", dtype, out_strides, sum(b * s for (b, _), s in zip(pads, out_strides))
    )
    copy = strided_copy(in_shape, interior, contiguous("in0", dtype, in_shape))
    if ctx.type == "Pad":
        fill = loop_kernel(out_shape, contiguous("out0", dtype, out_shape), [], c_literal(0, dtype))
    elif ctx.type == "PadV2":
        value = Operand("in2", dtype, (0,) * len(out_shape))
        fill = loop_kernel(out_shape, contiguous("out0", dtype, out_shape), [value], "{0}")
    else:
        return copy + _mirror_kernels(ctx, in_shape, pads, out_shape)
    return fill + copy


def _mirror_kernels(ctx: OpContext, in_shape: tuple, pads: list, out_shape: tuple) -> list:
    """The borders of a mirror pad, copied from the output itself one dimension at a time.

    Dimension k's borders are filled over the whole extent of dims < k (already padded) and the
    interior of dims > k, reading the interior of dim k backwards: the elements read and written
    by one kernel never overlap, so binding both pointers to the output is sound."""
    dtype = ctx.in_dtypes[0]
    edge = _EDGE[ctx.attrs["mode"]]
    strides = contiguous_strides(out_shape)
    kernels = []
    for k, (before, after) in enumerate(pads):
        n, s = in_shape[k], strides[k]
        base = sum(b * st for (b, _), st in zip(pads[k + 1 :], strides[k + 1 :]))
        extent = list(out_shape[:k]) + [0] + list(in_shape[k + 1 :])
        # (count, first written position, first read position) along dim k, read backwards
        for count, dst, src in (
            (before, 0, 2 * before - 1 + edge),
            (after, before + n, before + n - 1 - edge),
        ):
            extent[k] = count
            out = Operand("out0", dtype, strides, base + dst * s)
            read = Operand("out0", dtype, strides[:k] + (-s,) + strides[k + 1 :], base + src * s)
            kernels += strided_copy(tuple(extent), out, read)
    return kernels


def _interior(op, dy: Tensor) -> Tensor:
    """The part of dy that holds x: a slice from the leading paddings, of x's shape."""
    x, paddings = op.inputs[:2]
    value = constant_value(op.graph, (paddings.op.name, paddings.value_index))
    if value is not None:
        begin = constant(np.reshape(value, (-1, 2))[:, 0].astype(np.int32))
    else:
        first = apply_op("Slice", [paddings, constant([0, 0]), constant([-1, 1])]).outputs[0]
        begin = apply_op("Reshape", [first, constant([-1])]).outputs[0]
    size = shape_tensor(x)
    if begin.dtype != size.dtype:
        begin = apply_op("Cast", [begin], {"SrcT": begin.dtype, "DstT": size.dtype}).outputs[0]
    return reshape_to(apply_op("Slice", [dy, begin, size]).outputs[0], x)


def _pad_v2_grad(op, dy: Tensor) -> list:
    """The border holds constant_values: its gradient is what dy has outside the interior."""
    inner = _interior(op, dy)
    total = reduce_sum_over(_flat(dy), [0])
    return [inner, None, total - reduce_sum_over(_flat(inner), [0])]


def _flat(t: Tensor) -> Tensor:
    return apply_op("Reshape", [t, constant([-1])]).outputs[0]


def _mirror_pad_grad(op, dy: Tensor) -> list:
    attrs = {"mode": op.get_attr("mode")}
    return [apply_op("MirrorPadGrad", [dy, op.inputs[1]], attrs).outputs[0], None]


_PAD = dict(
    infer=_pad_infer,
    dtypes=_dt.STORABLE,
    reference=_pad_reference,
    lower=_pad_lower,
    const_inputs=(1,),
    flops=no_flops,
)
register(OpDef("Pad", grad=lambda op, dy: [_interior(op, dy), None], **_PAD))
register(OpDef("PadV2", grad=_pad_v2_grad, **_PAD))
register(OpDef("MirrorPad", grad=_mirror_pad_grad, **_PAD))


# -- MirrorPadGrad(dy, paddings) -----------------------------------------------------------------
# A mirror pad's gradient, as TensorFlow names it: every border element of dy added onto the
# interior element it copied. It is linear in dy, so its own gradient is the forward MirrorPad.
def _mirror_pad_grad_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 1, INDEX_DTYPES, "paddings")
    check_rank(ctx, 1, 2)
    dtype, dy, paddings = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.const(1)
    if dy is None:
        return [(dtype, None)]
    if paddings is None:
        return [(dtype, (None,) * len(dy))]
    pads = np.reshape(paddings, (-1, 2)).tolist()
    if len(pads) != len(dy):
        raise ctx.error(f"Shape must be rank {len(pads)} but is rank {len(dy)}")
    edge = _EDGE[ctx.attrs["mode"]]
    out = []
    for d, (before, after) in zip(dy, pads):
        n = None if d is None else d - before - after
        if n is not None and (before < 0 or after < 0 or max(before, after) > n - edge):
            raise ctx.error(f"Paddings {before}, {after} do not fit an input of size {n}")
        out.append(n)
    return [(dtype, tuple(out))]


def _regions(n: int, before: int, after: int, edge: int) -> list[tuple[int, int, int, int]]:
    """Along one dim, (length, first interior position written, first dy position read, step)
    of the interior and of the two mirrored borders, read backwards."""
    return [
        (n, 0, before, 1),
        (before, edge, before - 1, -1),
        (after, n - edge - after, before + n + after - 1, -1),
    ]


def _mirror_pad_grad_reference(ctx: OpContext, dy: np.ndarray, paddings) -> np.ndarray:
    pads = np.reshape(paddings, (-1, 2)).tolist()
    edge = _EDGE[ctx.attrs["mode"]]
    out_shape = [d - b - a for d, (b, a) in zip(dy.shape, pads)]
    out = np.zeros(out_shape, dy.dtype)
    per_dim = [_regions(n, b, a, edge) for n, (b, a) in zip(out_shape, pads)]
    for combo in itertools.product(*per_dim):
        target = tuple(slice(start, start + length) for length, start, _, _ in combo)
        source = tuple(np.arange(length) * step + src for length, _, src, step in combo)
        out[target] += dy[np.ix_(*source)] if source else dy
    return out


def _mirror_pad_grad_lower(ctx: OpContext) -> list:
    """The interior copied, then each combination of borders added onto its target: every
    kernel writes distinct elements, and the kernels run one after another."""
    dtype, dy, out_shape = ctx.in_dtypes[0], ctx.in_shapes[0], ctx.out_shapes[0]
    pads = np.reshape(ctx.require_const(1, "paddings"), (-1, 2)).tolist()
    edge = _EDGE[ctx.attrs["mode"]]
    dy_strides, out_strides = contiguous_strides(dy), contiguous_strides(out_shape)
    per_dim = [_regions(n, b, a, edge) for n, (b, a) in zip(out_shape, pads)]
    kernels = []
    for k, combo in enumerate(itertools.product(*per_dim)):
        lengths = [length for length, _, _, _ in combo]
        if math.prod(lengths) == 0:
            continue
        target = Operand(
            "out0", dtype, out_strides, sum(t * s for (_, t, _, _), s in zip(combo, out_strides))
        )
        source = Operand(
            "in0",
            dtype,
            tuple(step * s for (_, _, _, step), s in zip(combo, dy_strides)),
            sum(src * s for (_, _, src, _), s in zip(combo, dy_strides)),
        )
        expr = "{0}" if k == 0 else "{out} + {0}"  # combination 0 is the interior
        kernels += loop_kernel(lengths, target, [source], expr)
    return kernels


register(
    OpDef(
        "MirrorPadGrad",
        dtypes=_dt.NUMERIC,
        computes_in=HALVES_IN_FLOAT32,
        infer=_mirror_pad_grad_infer,
        reference=_mirror_pad_grad_reference,
        lower=_mirror_pad_grad_lower,
        flops=per_input_element(1),
        grad=lambda op, g: [
            apply_op("MirrorPad", [g, op.inputs[1]], {"mode": op.get_attr("mode")}).outputs[0],
            None,
        ],
        const_inputs=(1,),
        input_names=("input", "paddings"),
    )
)


def pad(
    tensor: Any,
    paddings: Any,
    mode: str = "CONSTANT",
    name: str | None = None,
    constant_values: Any = 0,
) -> Tensor:
    """`tf.pad`: `paddings[k] = [before, after]` elements added around dimension k, filled with
    `constant_values` (CONSTANT) or mirrored (REFLECT without the edge, SYMMETRIC with it)."""
    mode = mode.upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ValueError(f"Unknown padding mode: {mode}")
    if mode == "CONSTANT":
        plain = not is_tensor_like(constant_values) and np.all(np.asarray(constant_values) == 0)
        op_type = "Pad" if plain else "PadV2"
    else:
        op_type = "MirrorPad"
    with name_scope(name, op_type, [tensor]) as scope:
        x = convert_to_tensor(tensor)
        inputs = [x, index_tensor(paddings, "paddings")]
        if op_type == "PadV2":
            inputs.append(convert_to_tensor(constant_values, dtype=x.dtype, name="constant_values"))
        attrs = {"mode": mode} if op_type == "MirrorPad" else {}
        return apply_op(op_type, inputs, attrs, name=scope).outputs[0]
