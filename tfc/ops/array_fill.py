"""Array ops that fill a shape with one value: Fill, zeros/ones, and ZerosLike/OnesLike."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor, name_scope
from tfc.ops.array_common import (
    INDEX_DTYPES,
    check_rank,
    contiguous,
    index_tensor,
    int_list,
    shape_value,
)
from tfc.ops.array_shape import reshape, shape
from tfc.ops.constant import constant, convert_to_tensor
from tfc.ops.flops import no_flops
from tfc.ops.grad_ops import reduce_sum_over
from tfc.ops.kernels import Operand, c_literal, loop_kernel
from tfc.ops.registry import OpContext, OpDef, apply_op, check_dtype, register, same_as_input


# -- Fill, ZerosLike, OnesLike -------------------------------------------------------------------
def _fill_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, INDEX_DTYPES, "dims")
    check_rank(ctx, 0, 1)
    check_rank(ctx, 1, 0)
    dims = shape_value(ctx, 0)
    if dims is not None and any(d is not None and d < 0 for d in dims):
        raise ctx.error("Fill dimensions must be >= 0")
    return [(ctx.in_dtypes[1], dims)]


def _fill_lower(ctx: OpContext) -> list:
    out_shape, dtype = ctx.out_shapes[0], ctx.out_dtypes[0]
    value = Operand("in1", dtype, (0,) * len(out_shape))
    return loop_kernel(out_shape, contiguous("out0", dtype, out_shape), [value], "{0}")


register(
    OpDef(
        "Fill",
        dtypes=_dt.STORABLE,
        infer=_fill_infer,
        reference=lambda ctx, dims, value: np.full(int_list(dims), value, dtype=value.dtype),
        lower=_fill_lower,
        flops=no_flops,
        const_inputs=(0,),
        # every element is the value: its gradient is the sum of dy (flattened: any rank)
        grad=lambda op, dy: [None, reduce_sum_over(reshape(dy, [-1]), [0])],
    )
)


def _constant_like(op_type: str, value: int) -> None:
    def lower(ctx: OpContext) -> list:
        out_shape, dtype = ctx.out_shapes[0], ctx.out_dtypes[0]
        out = contiguous("out0", dtype, out_shape)
        return loop_kernel(out_shape, out, [], c_literal(value, dtype))

    register(
        OpDef(
            op_type,
            infer=same_as_input,
            reference=lambda ctx, x: np.full_like(x, value),
            lower=lower,
            dtypes=_dt.STORABLE,
            flops=no_flops,
            differentiable=False,
        )
    )


_constant_like("ZerosLike", 0)
_constant_like("OnesLike", 1)


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """`tf.fill`: a tensor of shape `dims` with every element `value`."""
    with name_scope(name, "Fill", [dims, value]) as scope:
        dims_t = index_tensor(dims, "dims")
        value_t = convert_to_tensor(value, name="value")
        return apply_op("Fill", [dims_t, value_t], name=scope).outputs[0]


def _filled(shape_: Any, dtype: Any, value: int, name: str | None, default: str) -> Tensor:
    dtype = _dt.as_dtype(dtype)
    with name_scope(name, default, [shape_]) as scope:
        dims = index_tensor(shape_, "shape_as_tensor")
        if dims._shape_tuple == ():  # TF1 accepts a scalar shape: one dimension
            dims = reshape(dims, [-1])
        value_t = constant(value, dtype=dtype, name="Const")
        return apply_op("Fill", [dims, value_t], name=scope).outputs[0]


def zeros(shape: Any, dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """`tf.zeros`: a tensor of `shape` (a list, or a 1-D int tensor such as tf.shape(x))."""
    return _filled(shape, dtype, 0, name, "zeros")


def ones(shape: Any, dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """`tf.ones`: a tensor of `shape` with every element 1."""
    return _filled(shape, dtype, 1, name, "ones")


def _like(
    op_type: str, tensor: Any, dtype: Any, name: str | None, default: str, value: int
) -> Tensor:
    with name_scope(name, default, [tensor]) as scope:
        x = convert_to_tensor(tensor)
        if dtype is None or _dt.as_dtype(dtype) == x.dtype:
            return apply_op(op_type, [x], name=scope).outputs[0]
        return _filled(shape(x), dtype, value, scope, default)


def zeros_like(
    tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """`tf.zeros_like`: zeros of the shape of `tensor` (and its dtype unless one is given)."""
    return _like("ZerosLike", tensor, dtype, name, "zeros_like", 0)


def ones_like(
    tensor: Any, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """`tf.ones_like`: ones of the shape of `tensor` (and its dtype unless one is given)."""
    return _like("OnesLike", tensor, dtype, name, "ones_like", 1)
