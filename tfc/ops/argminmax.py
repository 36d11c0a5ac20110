"""ArgMax and ArgMin: the index of the extreme element along one axis."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tfc.ir import dtypes as _dt
from tfc.ir.graph import Tensor
from tfc.ir.tensor_shape import shape_str
from tfc.ops.array_common import axis_tensor, pick_argument
from tfc.ops.constant import convert_to_tensor
from tfc.ops.flops import per_input_element
from tfc.ops.kernels import ArgReduceSpec, Kernel, Param
from tfc.ops.registry import (
    HALVES_IN_FLOAT32,
    OpContext,
    OpDef,
    apply_op,
    check_dtype,
    register,
)

__all__ = ["argmax", "argmin", "arg_max", "arg_min"]

_NUMERIC = _dt.NUMERIC
_INDEX = (_dt.int32, _dt.int64)


# -- ArgMax, ArgMin -------------------------------------------------------------------------------
def _arg_axis(ctx: OpContext, value: np.ndarray, rank: int) -> int:
    raw = int(np.asarray(value).reshape(()))
    axis = raw + rank if raw < 0 else raw
    if not 0 <= axis < rank:
        raise ctx.error(
            f"Dimension ({raw}) must be in the range [{-rank}, {rank}), where {rank} is the "
            "number of dimensions in the input"
        )
    return axis


def _arg_infer(ctx: OpContext) -> list:
    check_dtype(ctx, 0, _NUMERIC, "input")
    check_dtype(ctx, 1, _INDEX, "dimension")
    out_dtype = ctx.attrs.get("output_type", _dt.int64)
    shape, axis_shape = ctx.in_shapes
    if axis_shape is not None and len(axis_shape) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(axis_shape)}")
    value = ctx.const(1)
    if shape is None:
        return [(out_dtype, None)]
    if value is None:
        return [(out_dtype, (None,) * (len(shape) - 1) if shape else None)]
    axis = _arg_axis(ctx, value, len(shape))
    if shape[axis] == 0:
        # TF fails when the kernel runs; the shape tells us now
        raise ctx.error(f"Reduction axis {axis} is empty in shape {shape_str(shape)}")
    return [(out_dtype, shape[:axis] + shape[axis + 1 :])]


def _arg_reference(ctx: OpContext, x: np.ndarray, axis: np.ndarray) -> np.ndarray:
    fn = np.argmax if ctx.type == "ArgMax" else np.argmin
    # NumPy's argmax/argmin pick the first NaN, the rule the C kernel follows too
    return fn(x, axis=_arg_axis(ctx, axis, x.ndim)).astype(ctx.out_dtypes[0].np)


# C condition "v beats best": strict, so the first of equal extremes wins; a NaN beats any
# number and nothing beats a NaN, so the first NaN wins (NumPy's rule)
_BETTER = {
    ("ArgMax", "f"): "v > best || (v != v && best == best)",
    ("ArgMin", "f"): "v < best || (v != v && best == best)",
    ("ArgMax", "i"): "v > best",
    ("ArgMin", "i"): "v < best",
}


def _arg_lower(ctx: OpContext) -> list[Kernel]:
    dtype, shape = ctx.in_dtypes[0], ctx.in_shapes[0]
    out_dtype, out_shape = ctx.out_dtypes[0], ctx.out_shapes[0]
    axis = _arg_axis(ctx, ctx.require_const(1, "dimension"), len(shape))
    if math.prod(out_shape) == 0:
        return []
    outer, n, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])
    better = _BETTER[(ctx.type, "f" if dtype.is_floating else "i")]
    spec = ArgReduceSpec(dtype, out_dtype, outer, n, inner, better)
    params = [Param("y", out_dtype.c_type, False, "out0"), Param("x0", dtype.c_type, True, "in0")]
    return [Kernel("argreduce", params, spec)]


for _type in ("ArgMax", "ArgMin"):
    register(
        OpDef(
            _type,
            infer=_arg_infer,
            reference=_arg_reference,
            lower=_arg_lower,
            flops=per_input_element(1),
            const_inputs=(1,),
            input_names=("input", "dimension"),
            differentiable=False,
            dtypes=_dt.NUMERIC,
            computes_in=HALVES_IN_FLOAT32,
        )
    )


def _arg_frontend(op_type: str, fn_name: str, what: str) -> Callable[..., Tensor]:
    def fn(
        input: Any,  # noqa: A002  TF's parameter name
        axis: Any = None,
        name: str | None = None,
        dimension: Any = None,
        output_type: Any = _dt.int64,
    ) -> Tensor:
        axis = pick_argument(axis, "axis", dimension, "dimension")
        out = _dt.as_dtype(output_type)
        if out not in _INDEX:
            raise TypeError(
                f"Value passed to parameter 'output_type' has DataType {out.name} not in list "
                "of allowed values: int32, int64"
            )
        x = convert_to_tensor(input)
        dim = axis_tensor(0 if axis is None else axis)
        return apply_op(op_type, [x, dim], {"output_type": out}, name=name or op_type).outputs[0]

    fn.__name__ = fn.__qualname__ = fn_name
    fn.__doc__ = (
        f"`tf.{fn_name}`: the index of the {what} along `axis` (0 when None); the first one "
        "on ties, the first NaN if there is one."
    )
    return fn


argmax = _arg_frontend("ArgMax", "argmax", "largest element")
argmin = _arg_frontend("ArgMin", "argmin", "smallest element")


def arg_max(
    input: Any,  # noqa: A002  TF's parameter name
    dimension: Any,
    output_type: Any = _dt.int64,
    name: str | None = None,
) -> Tensor:
    """`tf.arg_max`: TF1's older spelling of argmax, `dimension` required."""
    return argmax(input, axis=dimension, name=name, output_type=output_type)


def arg_min(
    input: Any,  # noqa: A002  TF's parameter name
    dimension: Any,
    output_type: Any = _dt.int64,
    name: str | None = None,
) -> Tensor:
    """`tf.arg_min`: TF1's older spelling of argmin, `dimension` required."""
    return argmin(input, axis=dimension, name=name, output_type=output_type)
